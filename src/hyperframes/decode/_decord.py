"""The decord backend: decord's bundled FFmpeg, read in small batches with ``get_batch``.

decord cannot choose a stream: it always decodes FFmpeg's "best" video stream, so asking it for
another one raises ``DecodeError``. Rotation: decord applies the display matrix itself (checked
against the upright size PyAV reports). Timestamps come from decord's frame index; when that index
has none for some frames (AVI with packed B-frames), frames are timed ``start + i / fps`` from
the first frame's best-effort time, which PyAV's probe finds.

Damage: decord exposes no error signal to count into a ``DecodeReport``: its FFmpeg conceals
damage without saying so (its log goes to the terminal), and a batch it cannot decode raises,
which fails the video (``DecodeError``) instead of being skipped.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._core._errors import DecodeError, install_command
from ._base import DecodeReport, Timeline, VideoInfo, register_decoder
from ._library import LibraryDecoder, check_upright, decode_errors
from ._pyav import Inspection
from ._resize import ArrayFrame
from ._streams import check_library_stream, library_pick

_RULE = "it always decodes FFmpeg's best video stream"
_BATCH = 8  # frames decoded per get_batch call


@register_decoder("decord", install_hint=install_command("decord"))
class DecordDecoder(LibraryDecoder):
    """decord's CPU VideoReader."""

    name = "decord"
    module = "decord"

    def _open(self, found: Inspection):
        path = found.info.path
        try:
            reader = self._lib.VideoReader(path, ctx=self._lib.cpu(0), num_threads=0)
            picked = library_pick(found.streams, fps=reader.get_avg_fps(), frames=len(reader))
            if len(picked) > 1:
                shape = reader[0].shape
                reader.seek(0)
                picked = library_pick(picked, size=(shape[1], shape[0]))
        except Exception as e:
            reason = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
            if "cannot find video stream" in reason:
                reason += f" (decord's FFmpeg has no decoder for {found.chosen.codec})"
            raise DecodeError(
                f"{path}: decord cannot open {found.chosen.describe()}: {reason}"
            ) from e
        check_library_stream(path, "decord", _RULE, found.chosen, picked)
        return reader

    def _decode(
        self, reader, info: VideoInfo, report: DecodeReport | None = None
    ) -> Iterator[ArrayFrame]:
        timeline = Timeline(info.fps, start=info.start_seconds)
        with decode_errors(info, "decord", timeline, " (truncated or corrupt?)"):
            n = len(reader)
            spans = (
                reader.get_frame_timestamp(range(n)).astype(np.float64) if n else np.empty((0, 2))
            )
            stamps = spans[:, 0]
            usable = bool(n) and np.all(np.abs(stamps) < 1e9) and np.all(np.diff(stamps) > 0)
            for first in range(0, n, _BATCH):
                batch = reader.get_batch(list(range(first, min(n, first + _BATCH)))).asnumpy()
                if first == 0:
                    check_upright(info, "decord", batch.shape[1], batch.shape[2])
                for j, rgb in enumerate(batch):
                    if usable:
                        start, end = spans[first + j]
                        duration = end - start
                    else:
                        start = duration = None
                    for item, index, pts in timeline.push(rgb, start, duration):
                        yield ArrayFrame(item, index, pts)
        timeline.check_complete(info, "decord")
