"""What the backends that decode through a library of their own (decord, OpenCV, torchcodec)
share: PyAV inspects the file first (the stream, rotation, start time: :func:`._pyav.inspect`),
then the library opens it; ``probe`` stops there, ``frames`` decodes. While decoding, a
library's own exceptions become one :class:`DecodeError` naming the file, the library, the
stream and the frames decoded so far (:func:`decode_errors`), and the first frame is checked
to be upright at the inspected size (:func:`check_upright`)."""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

from .._core._errors import DecodeError, HyperframesError
from ._base import DecodeReport, Timeline, VideoInfo
from ._pyav import Inspection, inspect
from ._resize import PIL_BILINEAR, ArrayFrame

__all__ = ["LibraryDecoder", "check_upright", "decode_errors"]


class LibraryDecoder:
    """The shared half of a library backend: a subclass opens an inspected file
    (``_open``), decodes what it opened (``_decode``) and, if the library holds the file
    open, releases it after a probe (``_close``)."""

    name: str
    resize_algorithm = PIL_BILINEAR
    #: the library's module, imported when the decoder is made (an ImportError: not installed)
    module = ""

    def __init__(self) -> None:
        self._lib: Any = importlib.import_module(self.module)  # deferred: optional dependency

    def version(self) -> str:
        return f"{self.name} {self._lib.__version__}"

    def probe(self, path: str, stream: int | None = None) -> VideoInfo:
        found = inspect(path, stream)
        self._close(self._open(found))
        return found.info

    def frames(
        self, path: str, stream: int | None = None, report: DecodeReport | None = None
    ) -> Iterator[ArrayFrame]:
        found = inspect(path, stream)
        return self._decode(self._open(found), found.info, report)

    def _open(self, found: Inspection) -> Any:
        raise NotImplementedError

    def _decode(
        self, handle: Any, info: VideoInfo, report: DecodeReport | None
    ) -> Iterator[ArrayFrame]:
        raise NotImplementedError

    def _close(self, handle: Any) -> None:
        """Release what :meth:`_open` gave after a probe (default: nothing to release)."""


def check_upright(info: VideoInfo, library: str, height: int, width: int) -> None:
    """:class:`DecodeError` when ``library``'s first frame is not ``info``'s upright size."""
    if (height, width) != (info.height, info.width):
        raise DecodeError(
            f"{info.path}: {library} returns {width}x{height} frames, "
            f"not the upright {info.width}x{info.height} of v:{info.stream_index}"
        )


@contextlib.contextmanager
def decode_errors(info: VideoInfo, library: str, timeline: Timeline, hint: str = ""):
    """Any exception of ``library`` inside as a :class:`DecodeError` naming the file, the
    stream and the frames decoded so far (``hint``: a likely cause, after them); our own
    errors pass as they are."""
    try:
        yield
    except HyperframesError:
        raise
    except Exception as e:
        raise DecodeError(
            f"{info.path}: {library} failed on v:{info.stream_index} after {timeline.count} "
            f"frames{hint}: {e}"
        ) from e
