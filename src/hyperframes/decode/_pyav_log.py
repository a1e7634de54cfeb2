"""FFmpeg's log lines during a PyAV decode, counted as the decoder's own error signals.

PyAV drops FFmpeg's log by default. While at least one decode in the process asks for a
``DecodeReport``, ``LogTap`` sets PyAV's log threshold to INFO (or keeps a more verbose one),
turns off PyAV's folding of repeated lines (it would hide repeats until the next different
line) and holds one process-wide ``av.logging.Capture``; FFmpeg hands a line to Python only
when it writes one, so a clean decode pays nothing per frame. Each decode calls ``drain`` after
every packet (a length check when nothing was logged) and counts the lines its own decoder and
demuxer wrote:

- ``"concealing N DC, N AC, N MV errors"`` from the decoder (INFO) -> ``concealed``
- any other line at ERROR or worse from the decoder -> ``decode_errors``
- a line at ERROR or worse from the demuxer -> ``demux_errors``

Lines go on to Python's ``logging`` as PyAV would have sent them when PyAV's logging was on
before. When the last tapping decode ends, PyAV's threshold and folding are restored.

Limit: FFmpeg names a line's source only by codec or format name, and frame threads log from
FFmpeg's own threads, so two decodes with the same codec running at the same time in two
threads of one process may count each other's lines. (Store builds decode one video at a time
per worker process.)
"""

from __future__ import annotations

import logging
import threading

import av

from ._base import DecodeReport

__all__ = ["LogTap"]

_LOCK = threading.Lock()  # guards _shared and the draining of the shared list


class _Shared:
    """The one capture every active tap reads, and PyAV's settings to put back."""

    def __init__(self) -> None:
        self.users = 0
        self.capture: av.logging.Capture | None = None
        self.lines: list = []
        self.level: int | None = None
        self.skip_repeated = True


_shared = _Shared()


class LogTap:
    """Context manager counting FFmpeg's error lines for one decode into ``report``.

    ``decoder`` and ``demuxer`` are the names FFmpeg logs them under (the codec's name, e.g.
    ``"h264"``; the input format's, e.g. ``"mov,mp4,m4a,3gp,3g2,mj2"``).
    """

    def __init__(self, report: DecodeReport, *, decoder: str, demuxer: str):
        self.report = report
        self.decoder = decoder
        self.demuxer = demuxer
        self.lines: list = []

    def __enter__(self) -> LogTap:
        with _LOCK:
            if _shared.users == 0:
                _shared.level = av.logging.get_level()
                _shared.skip_repeated = av.logging.get_skip_repeated()
                if _shared.level is None or _shared.level < av.logging.INFO:
                    av.logging.set_level(av.logging.INFO)
                av.logging.set_skip_repeated(False)
                _shared.capture = av.logging.Capture(local=False)
                _shared.lines = _shared.capture.__enter__()
            _shared.users += 1
            self.lines = _shared.lines
        return self

    def drain(self) -> None:
        """Count the lines logged since the last drain (cheap when there are none)."""
        if not self.lines:
            return
        with _LOCK:
            taken = self.lines[:]
            del self.lines[: len(taken)]  # FFmpeg threads only append, so these are the ones
        for level, name, message in taken:
            self._count(level, name, message.strip())
            _forward(level, name, message)

    def _count(self, level: int, name: str, message: str) -> None:
        if name == self.decoder:
            if message.startswith("concealing "):
                self.report.add("concealed", message=f"{name}: {message}")
            elif level <= av.logging.ERROR:
                self.report.add("decode_errors", message=f"{name}: {message}")
        elif name == self.demuxer and level <= av.logging.ERROR:
            self.report.add("demux_errors", message=f"{name}: {message}")

    def __exit__(self, *exc) -> None:
        self.drain()
        with _LOCK:
            _shared.users -= 1
            if _shared.users == 0:
                assert _shared.capture is not None  # set by the first tap's __enter__
                _shared.capture.__exit__(None, None, None)
                _shared.capture = None
                av.logging.set_skip_repeated(_shared.skip_repeated)
                av.logging.set_level(_shared.level)
        self.lines = []


def _forward(level: int, name: str, message: str) -> None:
    """Send a captured line to ``logging`` when PyAV's own threshold would have let it through."""
    wanted = _shared.level
    if wanted is None or level > wanted:
        return
    logger = logging.getLogger(f"libav.{name}" if name else "libav.generic")
    logger.log(av.logging.adapt_level(level), message.strip())
