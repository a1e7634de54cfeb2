"""Step 3 of the input contract (its geometry, :meth:`InputContract.resize_crop`) as a dataset
transform: what eval, recalibration and the masked-video eval put on a dataset so each window
is cropped as the model was trained, before collation (frames of mixed sizes then batch)."""

from __future__ import annotations

from ..._core._contract import POSITIONS, InputContract
from ..._core._errors import ConfigError
from ._base import Window
from ._spatial import _Box

__all__ = ["ContractCrop", "contract_transform"]


class ContractCrop(_Box):
    """A dataset transform (``transform(frames, indices, mask, generator=...)`` -> ``Window``)
    applying :meth:`InputContract.resize_crop` to a window; first in a batch pipeline, the
    read crops and resizes its box (OpenCV's area filter, as ``resize_crop`` on the CPU)."""

    random = False

    def __init__(self, contract: InputContract, position: str = "centre") -> None:
        if position not in POSITIONS:
            raise ConfigError(f"position {position!r}: allowed: {', '.join(POSITIONS)}")
        self.contract, self.position = contract, position

    def read_box(self, height, width, generator):
        box, size = self.contract.crop_box(height, width, self.position)
        return tuple(box), tuple(size)

    def apply_drawn(self, window, params):
        frames = self.contract.resize_crop(window.frames, position=self.position)
        return Window(frames, window.indices, window.mask)

    def __repr__(self) -> str:
        return f"ContractCrop(crop={self.contract.crop}, position={self.position!r})"


def contract_transform(contract: InputContract, position: str = "centre") -> ContractCrop | None:
    """The contract's step 3 as a dataset transform (per window, before collation), or None
    when it does nothing (no crop, centre)."""
    if contract.crop is None and position == "centre":
        return None
    return ContractCrop(contract, position)
