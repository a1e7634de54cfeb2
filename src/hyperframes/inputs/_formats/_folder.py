"""``folder``: a folder ``root/<label>/<video>``, a folder of frame folders, one frame folder,
or one video file (the rules are in :mod:`hyperframes.inputs._folder_walk`). Class ids: the label
folders' names, sorted."""

from __future__ import annotations

from pathlib import Path

from ..._core._errors import InputError
from .._folder_walk import scan_folder
from .._sources import ANNOTATION_EXTENSIONS, Inputs, class_names
from ._registry import GENERIC, Probe, register_input_format


def _detect(probe: Probe) -> int:
    if probe.is_dir:
        return GENERIC
    ext = probe.path.suffix.lower()
    return GENERIC if ext not in ANNOTATION_EXTENSIONS and ext != ".json" else 0


@register_input_format("folder", detect=_detect)
def read_folder(data: Path, root: Path | None) -> Inputs:
    """a folder root/<label>/<video>, a folder of frame folders, a frame folder or a video."""
    if root is not None:
        raise InputError(
            f"root {root}: only annotation files list paths relative to a folder; {data} is "
            "read as a folder or a video"
        )
    sources, skipped = scan_folder(data)
    return Inputs(sources, skipped, class_names(sources))
