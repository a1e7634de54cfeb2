"""The ``frames`` backend: a folder of image frames (mmaction2 "rawframes": img_00001.jpg, ...).

Frames are the files ``<prefix><number>.<jpg|jpeg|png>``, sorted by the number; frame i is shown
at ``i / fps`` (fps defaults to 30). Images are decoded by PIL when ``to_rgb`` is called.

Damage: nothing is decoded while ``frames`` runs, so a ``DecodeReport`` stays empty; an image
PIL cannot decode raises ``DecodeError`` from ``to_rgb``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator

import numpy as np
import PIL
from PIL import Image

from .._core._errors import ConfigError, DecodeError, InputError
from ._base import DecodeReport, VideoInfo, check_path, register_decoder
from ._resize import PIL_BILINEAR, resize_rgb

_NAME = re.compile(r"(?P<prefix>.*?)(?P<number>\d+)\.(?P<ext>jpe?g|png)", re.IGNORECASE)
_CODEC = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png"}
_PIX_FMT = {"RGB": "rgb24", "L": "gray", "RGBA": "rgba", "CMYK": "cmyk", "P": "pal8"}


class ImageFrame:
    """One image file of the folder, decoded on ``to_rgb``."""

    __slots__ = ("_file", "_size", "index", "pts_seconds")

    def __init__(self, file: str, index: int, pts_seconds: float, size: tuple[int, int]):
        self._file = file
        self._size = size  # (width, height) of the first frame
        self.index = index
        self.pts_seconds = pts_seconds

    def to_rgb(self, size: tuple[int, int] | None = None) -> np.ndarray:
        try:
            with Image.open(self._file) as image:
                rgb = np.array(image.convert("RGB"))
        except Exception as e:
            raise DecodeError(f"{self._file}: PIL cannot decode frame {self.index}: {e}") from e
        if rgb.shape[1::-1] != self._size:
            raise DecodeError(
                f"{self._file}: frame {self.index} is {rgb.shape[1]}x{rgb.shape[0]}, "
                f"but the folder's first frame is {self._size[0]}x{self._size[1]}"
            )
        return resize_rgb(rgb, size)


@register_decoder("frames", install_hint="pip install pillow", reads="frames")
class FrameFolderDecoder:
    """A folder of numbered JPEG/PNG frames; ``fps`` times them, ``prefix`` selects the files."""

    name = "frames"
    resize_algorithm = PIL_BILINEAR

    def __init__(self, fps: float = 30.0, prefix: str | None = "img_"):
        if isinstance(fps, bool) or not isinstance(fps, (int, float)) or not fps > 0:
            raise ConfigError(f"fps must be a positive number, got {fps!r}")
        if not math.isfinite(fps):
            raise ConfigError(f"fps must be finite, got {fps!r}")
        self.fps = float(fps)
        self.prefix = prefix

    def version(self) -> str:
        return f"Pillow {PIL.__version__}"

    def probe(self, path: str, stream: int | None = None) -> VideoInfo:
        folder, files, codec = self._list(path, stream)
        try:
            with Image.open(files[0]) as image:
                width, height, mode = image.width, image.height, image.mode
        except Exception as e:
            raise DecodeError(f"{files[0]}: PIL cannot read the first frame: {e}") from e
        return VideoInfo(
            path=folder,
            stream_index=0,
            codec=codec,
            width=width,
            height=height,
            fps=self.fps,
            num_frames_from_header=len(files),
            duration_seconds=len(files) / self.fps,
            pix_fmt=_PIX_FMT.get(mode, mode.lower()),
            start_seconds=0.0,
        )

    def frames(
        self, path: str, stream: int | None = None, report: DecodeReport | None = None
    ) -> Iterator[ImageFrame]:
        info = self.probe(path, stream)
        _, files, _ = self._list(path, stream)
        size = (info.width, info.height)
        return (ImageFrame(f, i, i / self.fps, size) for i, f in enumerate(files))

    def _list(self, path: str, stream: int | None) -> tuple[str, list[str], str]:
        folder = check_path(path, folder=True)
        if stream not in (None, 0):
            raise InputError(f"{folder}: a frame folder has one stream (0), not {stream!r}")
        numbered: dict[int, str] = {}
        codecs = set()
        with os.scandir(folder) as entries:
            names = sorted(e.name for e in entries if e.is_file())
        for name in names:
            m = _NAME.fullmatch(name)
            if not m or (self.prefix is not None and m["prefix"] != self.prefix):
                continue
            number = int(m["number"])
            if number in numbered:
                raise InputError(f"{folder}: {numbered[number]} and {name} are both frame {number}")
            numbered[number] = name
            codecs.add(_CODEC[m["ext"].lower()])
        if not numbered:
            want = f"{self.prefix or ''}00001.jpg"
            raise InputError(f"{folder}: no frames named like {want} (jpg/jpeg/png) in it")
        if len(codecs) > 1:
            raise InputError(
                f"{folder}: mixes {' and '.join(sorted(codecs))} frames; use one format"
            )
        files = [os.path.join(folder, numbered[k]) for k in sorted(numbered)]
        return folder, files, codecs.pop()
