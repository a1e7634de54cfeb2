"""Progress for long work: items/s, frames/s and an ETA on stderr (tqdm underneath)."""

from __future__ import annotations

import sys
import time

#: seconds between two updates of the bar (it redraws itself every 0.5 s at most)
_SHOW_SECONDS = 0.1


class Progress:
    def __init__(self, total: int, *, unit: str = "videos", enabled: bool = True, desc: str = ""):
        self.total = total
        self.frames = 0
        self.failed = 0
        self._t0 = time.perf_counter()
        self._next_show = 0.0
        self._pending = 0  # items done that the bar does not show yet
        self._bar = None
        if enabled:
            from tqdm import tqdm  # deferred: optional/heavy dependency

            self._bar = tqdm(
                total=total,
                unit=unit.rstrip("s") if unit.endswith("s") else unit,
                desc=desc or "build",
                file=sys.stderr,
                dynamic_ncols=True,
                mininterval=0.5,
                smoothing=0.1,
            )

    def add_frames(self, n: int) -> None:
        self.frames += n
        self._show()

    def advance(self, n: int = 1, *, failed: bool = False) -> None:
        self.failed += int(failed)
        self._pending += n
        self._show()

    def _show(self) -> None:
        """The bar moved on, with the rates and the failed count beside it, at most every
        :data:`_SHOW_SECONDS` (a build of ten million failed rows advances it per row)."""
        if self._bar is None:
            return
        now = time.perf_counter()
        if now < self._next_show:
            return
        self._next_show = now + _SHOW_SECONDS
        self._flush()
        dt = max(now - self._t0, 1e-9)
        self._bar.set_postfix_str(
            f"{self.frames / dt:.0f} frames/s, {self.failed} failed", refresh=False
        )

    def _flush(self) -> None:
        if self._bar is not None and self._pending:
            self._bar.update(self._pending)
        self._pending = 0

    def close(self) -> None:
        if self._bar is not None:
            self._next_show = 0.0
            self._show()  # (what is pending)
            self._bar.close()
            self._bar = None
