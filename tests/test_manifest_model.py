"""The store's write side: the typed manifest (``store.Manifest``) the build writes and every
reader checks, and the typed messages build workers send."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hyperframes import StoreError
from hyperframes.store import Manifest, open_store
from hyperframes.store.format import READABLE_VERSIONS

GOLDEN = Path(__file__).parent / "data"


def _edited(store: Path, tmp_path: Path, **changes) -> Path:
    copy = Path(shutil.copytree(store, tmp_path / "store"))
    m = json.loads((copy / "manifest.json").read_text())
    m.update(changes)
    (copy / "manifest.json").write_text(json.dumps(m))
    return copy


def test_a_built_stores_manifest_round_trips_through_the_model_byte_for_byte(tiny_motion_store):
    path = tiny_motion_store / "manifest.json"
    text = path.read_text()
    model = Manifest.read(path)
    assert model.num_videos == 9 and model.codec.name == "raw" and model.index[0].checksum
    assert json.dumps(model.to_json(), indent=1) + "\n" == text


@pytest.mark.parametrize("name", ["store_v1_raw", "store_v1_lz4"])
def test_stores_written_before_the_model_read_through_it_unchanged(name):
    path = GOLDEN / name / "manifest.json"
    model = Manifest.read(path)
    assert model.format_version == 1
    assert model.to_json() == json.loads(path.read_text())


def test_an_unknown_manifest_version_is_refused_naming_the_file_and_the_versions_read(
    tiny_motion_store, tmp_path
):
    copy = _edited(tiny_motion_store, tmp_path, format_version=99)
    known = ", ".join(map(str, READABLE_VERSIONS))
    with pytest.raises(StoreError) as e:
        Manifest.read(copy / "manifest.json")
    assert str(copy / "manifest.json") in str(e.value)
    assert "version 99 is not readable" in str(e.value) and f"reads versions {known}" in str(
        e.value
    )
    with pytest.raises(StoreError, match="version 99"):
        open_store(copy)


@pytest.mark.parametrize(
    "key, value, said",
    [
        ("num_videos", "9", r"'num_videos' is str '9', expected a valid integer"),
        ("classes", ["left", 3], r"'classes\.1' is int 3, expected a valid string"),
        ("created", 20261204, r"'created' is int 20261204, expected a valid string"),
        ("normalize", {"mean": [0.5]}, r"'normalize\.std' is missing"),
    ],
)
def test_a_manifest_with_a_wrong_field_type_is_refused(
    tiny_motion_store, tmp_path, key, value, said
):
    copy = _edited(tiny_motion_store, tmp_path, **{key: value})
    with pytest.raises(StoreError, match=said) as e:
        Manifest.read(copy / "manifest.json")
    assert str(copy / "manifest.json") in str(e.value)
    with pytest.raises(StoreError, match=said):
        open_store(copy)


def test_keys_the_model_does_not_know_are_kept(tiny_motion_store, tmp_path):
    copy = _edited(tiny_motion_store, tmp_path, written_by_a_later_version={"x": [1, 2]})
    assert Manifest.read(copy / "manifest.json").to_json()["written_by_a_later_version"] == {
        "x": [1, 2]
    }
    open_store(copy).close()
