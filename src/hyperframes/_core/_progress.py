"""Progress for long work: items/s, frames/s and an ETA on stderr (tqdm underneath)."""

from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total: int, *, unit: str = "videos", enabled: bool = True, desc: str = ""):
        self.total = total
        self.frames = 0
        self.failed = 0
        self._t0 = time.perf_counter()
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
        self._postfix()

    def advance(self, n: int = 1, *, failed: bool = False) -> None:
        self.failed += int(failed)
        if self._bar is not None:
            self._bar.update(n)
        self._postfix()

    def _postfix(self) -> None:
        if self._bar is None:
            return
        dt = max(time.perf_counter() - self._t0, 1e-9)
        self._bar.set_postfix_str(
            f"{self.frames / dt:.0f} frames/s, {self.failed} failed", refresh=False
        )

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None
