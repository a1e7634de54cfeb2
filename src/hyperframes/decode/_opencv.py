"""The OpenCV backend: ``cv2.VideoCapture`` with its FFmpeg backend, one ``read()`` per frame.

OpenCV cannot choose a stream: it always decodes the file's first video stream, so asking it
for another one raises ``DecodeError``. Rotation: OpenCV applies the display matrix itself
(``CAP_PROP_ORIENTATION_AUTO``, set on). Timestamps are ``CAP_PROP_POS_MSEC`` after each read
(OpenCV's own reading of the frame's time; the conformance tests check it against FFmpeg's
best-effort timestamps).

Damage: OpenCV exposes no error signal to count into a ``DecodeReport``: ``read()`` returning
False means the end, whatever the cause (a file it stops reading early is caught by the
truncation check, not counted), and its FFmpeg conceals damage silently.
"""

from __future__ import annotations

from collections.abc import Iterator

from .._core._errors import DecodeError, install_command
from ._base import DecodeReport, Timeline, VideoInfo, register_decoder
from ._library import LibraryDecoder, check_upright, decode_errors
from ._pyav import Inspection
from ._resize import ArrayFrame
from ._streams import check_library_stream, library_pick

_RULE = "it always decodes the first video stream"


@register_decoder("opencv", install_hint=install_command("opencv"))
class OpenCVDecoder(LibraryDecoder):
    """OpenCV's VideoCapture (FFmpeg backend); BGR converted to RGB with ``cvtColor``."""

    name = "opencv"
    module = "cv2"

    def _open(self, found: Inspection):
        cv2, path = self._lib, found.info.path
        try:
            capture = cv2.VideoCapture(path, cv2.CAP_FFMPEG)
            opened = capture.isOpened()
            if opened:
                capture.set(cv2.CAP_PROP_ORIENTATION_AUTO, 1)
                size = (
                    capture.get(cv2.CAP_PROP_FRAME_WIDTH),
                    capture.get(cv2.CAP_PROP_FRAME_HEIGHT),
                )
                fps = capture.get(cv2.CAP_PROP_FPS)
        except Exception as e:
            raise DecodeError(f"{path}: OpenCV cannot open it: {e}") from e
        if not opened:
            raise DecodeError(
                f"{path}: OpenCV cannot open it (VideoCapture.isOpened() is False with the FFmpeg "
                "backend; OpenCV gives no reason)"
            )
        picked = library_pick(found.streams, fps=fps, size=(int(size[0]), int(size[1])))
        try:
            check_library_stream(path, "opencv", _RULE, found.chosen, picked[:1])
        except DecodeError:
            capture.release()
            raise
        return capture

    def _close(self, capture) -> None:
        capture.release()

    def _decode(
        self, capture, info: VideoInfo, report: DecodeReport | None = None
    ) -> Iterator[ArrayFrame]:
        cv2 = self._lib
        timeline = Timeline(info.fps, start=info.start_seconds)
        try:
            with decode_errors(info, "OpenCV", timeline):
                while True:
                    ok, bgr = capture.read()
                    if not ok:
                        break
                    if timeline.count == 0:
                        check_upright(info, "OpenCV", bgr.shape[0], bgr.shape[1])
                    pts = capture.get(cv2.CAP_PROP_POS_MSEC) / 1000.0
                    rgb = cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)
                    for item, index, t in timeline.push(rgb, pts):
                        yield ArrayFrame(item, index, t)
        finally:
            capture.release()
        timeline.check_complete(info, "opencv")
