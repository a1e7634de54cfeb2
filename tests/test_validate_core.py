"""The shared validator (``_core._validate``): pydantic's errors in the house's words."""

from __future__ import annotations

from typing import Annotated, Literal

import pytest
from pydantic import Field

from hyperframes._core._errors import ConfigError
from hyperframes._core._validate import Strict, validate


class _Crop(Strict):
    size: int | None = Field(None, ge=8, le=4096, description="square crop side")
    scale: list[Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        [0.35, 1.0], min_length=2, max_length=2
    )
    mode: Literal["area", "linear"] = "area"


class _Data(Strict):
    store: str
    batch_size: int = Field(16, ge=1, le=65_536)
    crop: _Crop = _Crop()
    lr: float = Field(0.1, gt=0, allow_inf_nan=False)


class _Config(Strict):
    data: _Data


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"batch_size": 0},
            "data.batch_size: out of range: 0; allowed: an integer >= 1 and <= 65536",
        ),
        ({"batch_size": True}, "data.batch_size: expected an integer, got True;"),
        ({"batch_size": "3"}, "data.batch_size: expected an integer, got '3';"),
        (
            {"batchsize": 3},
            "unknown key data.batchsize; did you mean data.batch_size? (allowed keys in data: "
            "store, batch_size, crop, lr)",
        ),
        (
            {"crop": {"size": 4}},
            "data.crop.size: out of range: 4; allowed: an integer >= 8 and <= 4096, or null "
            "(square crop side)",
        ),
        ({"crop": {"scale": [0.1]}}, "data.crop.scale: expected 2 values, got [0.1];"),
        (
            {"crop": {"scale": [0.1, 2.0]}},
            "data.crop.scale[1]: out of range: 2.0; allowed: a number >= 0.0 and <= 1.0",
        ),
        (
            {"crop": {"mode": "cubic"}},
            "data.crop.mode: not an allowed value: 'cubic'; allowed: one of area, linear",
        ),
        ({"crop": 3}, "data.crop: expected a mapping of keys to values, got 3"),
        ({"lr": float("nan")}, "data.lr: expected a finite number, got nan"),
    ],
)
def test_messages_name_the_key_the_value_and_what_is_allowed(data, message):
    with pytest.raises(ConfigError) as err:
        validate(_Config, {"data": {"store": "s", **data}})
    assert str(err.value).startswith(message), str(err.value)


def test_a_misspelt_section_is_reported_before_the_missing_one():
    with pytest.raises(ConfigError, match=r"unknown key datta; did you mean data\?"):
        validate(_Config, {"datta": {}})
    with pytest.raises(ConfigError, match=r"^data\.store is required: a string"):
        validate(_Config, {"data": {}})


def test_valid_values_come_back_typed_and_a_non_mapping_is_refused():
    cfg = validate(_Config, {"data": {"store": "s", "lr": 1}})
    assert cfg.data.lr == 1.0 and isinstance(cfg.data.lr, float)
    assert cfg.data.crop.scale == [0.35, 1.0]
    with pytest.raises(ValueError, match=r"^options: expected a mapping of keys to values, got"):
        validate(_Data, [1], where="options", error=ValueError)
