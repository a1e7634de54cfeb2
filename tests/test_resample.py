"""FpsResampler on plain timestamps, against a literal (exact, non-streaming) reading of the rule."""

from __future__ import annotations

import math
import random
import weakref
from fractions import Fraction

import pytest

from hyperframes import ConfigError, InputError
from hyperframes.decode import FpsResampler, Resampled


def rule(pts: list[Fraction], fps: Fraction, native_fps: Fraction | None = None) -> list[int]:
    """The spec in exact arithmetic: targets p0 + k/fps, nearest frame, ties to the earlier."""
    last = pts[-1] - pts[-2] if len(pts) > 1 else 1 / (native_fps or fps)
    duration = pts[-1] - pts[0] + last
    count = math.floor(duration * fps + Fraction(1, 10**6))
    out = []
    for k in range(count):
        t = pts[0] + k / fps
        out.append(min(range(len(pts)), key=lambda i: (abs(pts[i] - t), i)))
    return out


class Frame:
    """A stand-in for a decoded frame: only its timestamp matters."""

    def __init__(self, pts_seconds: float):
        self.pts_seconds = pts_seconds


def stream(pts, fps, native_fps=None, check_held: bool = True) -> list[int]:
    """Push frames one at a time, like a build loop; return the kept source indices."""
    resampler = FpsResampler(None if fps is None else float(fps), native_fps=native_fps)
    alive: list[weakref.ref] = []
    kept = []
    for i, p in enumerate(pts):
        frame = Frame(float(p))
        alive.append(weakref.ref(frame))
        outs = resampler.push(frame)
        out = None
        for out in outs:
            assert isinstance(out, Resampled)
            assert out.pts_seconds == out.frame.pts_seconds == float(pts[out.source_index])
            kept.append(out.source_index)
        del frame, outs, out
        if check_held:  # refcounting frees a dropped frame at once (Frame has no cycles)
            held = [j for j, r in enumerate(alive) if r() is not None]
            assert len(held) <= 2, f"after frame {i} the resampler holds frames {held}"
    kept += [out.source_index for out in resampler.finish()]
    return kept


def grid(n: int, fps: int, start: Fraction = Fraction(0)) -> list[Fraction]:
    return [start + Fraction(i, fps) for i in range(n)]


def test_downsample_constant_rate():
    pts = grid(300, 30)
    assert stream(pts, 15) == list(range(0, 300, 2))
    assert stream(pts, 10) == list(range(0, 300, 3))
    assert stream(pts, 30) == list(range(300))
    assert stream(pts, 7) == rule(pts, Fraction(7))


def test_upsample_constant_rate_ties_go_to_the_earlier_frame():
    pts = grid(250, 25)
    got = stream(pts, 30)
    assert got == rule(pts, Fraction(30))
    assert len(got) == 300
    # t = 0.1 s lies exactly between frames 2 (0.08) and 3 (0.12): the earlier wins
    assert got[:7] == [0, 1, 2, 2, 3, 4, 5]


def test_variable_frame_rate():
    pts = [Fraction(x) for x in ("0", "0.05", "0.06", "0.2", "0.21", "0.5")]
    # duration 0.5 + 0.29 (the last interval) = 0.79 s -> 7 targets at 10 fps
    assert stream(pts, 10) == [0, 2, 3, 4, 5, 5, 5]


def test_mixed_rates_map_onto_one_time_base():
    """One second at 30 fps then one at 15 fps, resampled to 10 fps and to 24 fps."""
    pts = grid(30, 30) + grid(15, 15, start=Fraction(1))
    ten = stream(pts, 10)
    assert ten == rule(pts, Fraction(10))
    assert ten[:10] == list(range(0, 30, 3))  # first second: every third frame
    assert ten[10:12] == [30, 31]  # 1.1 s is between 1.0667 (31) and 1.1333 (32): a tie
    assert len(ten) == 20
    assert stream(pts, 24) == rule(pts, Fraction(24))


def test_start_offset_does_not_matter():
    pts = grid(40, 25, start=Fraction(7, 3))
    assert stream(pts, 10) == rule(pts, Fraction(10)) == rule(grid(40, 25), Fraction(10))


def test_target_count_boundaries():
    # 1.0 s at 30 fps: exactly 15 targets at 15 fps, not 16
    assert len(stream(grid(30, 30), 15)) == 15
    # 10 frames at 30 fps = 1/3 s: one target at 3 fps (1/3 * 3 is 0.999... in floats)
    assert stream(grid(10, 30), 3) == [0]
    # 0.5 s (5 frames every 0.1 s) at 3 fps: one target, although t1 = 0.333 < the last pts
    pts = grid(5, 10)
    assert stream(pts, 3) == [0] == rule(pts, Fraction(3))
    # 0.7 s: two targets; t1 = 0.333 takes frame 3 (0.3)
    assert stream(grid(7, 10), 3) == [0, 3]
    # a single frame lasts 1/native_fps (or one target period without it)
    assert stream([Fraction(0)], 15, native_fps=10) == [0]
    assert stream([Fraction(0)], 15) == [0]


@pytest.mark.parametrize(
    ("pts", "fps", "native", "length"),
    [
        ([Fraction(0)], 15, 30, "0.0333 s"),
        (grid(2, 30), 10, None, "0.0667 s"),
    ],
)
def test_shorter_than_one_target_frame_is_reported(pts, fps, native, length):
    with pytest.raises(InputError, match=f"is {length} long, shorter than one frame at {fps} fps"):
        stream(pts, fps, native_fps=native)


def test_pass_through_keeps_every_frame_immediately():
    pts = [0.0, 0.04, 0.05, 0.5, 0.51]
    resampler = FpsResampler(None)
    frames = [Frame(p) for p in pts]
    for i, f in enumerate(frames):
        assert resampler.push(f) == [Resampled(f, i, pts[i])]
    assert resampler.finish() == []


def test_random_variable_rates_match_the_rule():
    rng = random.Random(7)
    rates = [Fraction(1), Fraction(5, 2), Fraction(10), Fraction(15), Fraction(24)]
    rates += [Fraction(25), Fraction(30000, 1001), Fraction(30), Fraction(60)]
    for _ in range(300):
        n = rng.randint(1, 60)
        steps = [rng.choice([1, 2, 33, 34, 40, 41, 67, 100, 250]) for _ in range(n)]
        pts = [Fraction(sum(steps[:i]), 1000) for i in range(n)]
        fps = rng.choice(rates)
        native = rng.choice([None, Fraction(25)])
        try:
            want = rule(pts, fps, native)
        except ValueError:
            continue
        if not want:
            with pytest.raises(InputError):
                stream(pts, fps, None if native is None else float(native), check_held=False)
            continue
        got = stream(pts, fps, None if native is None else float(native), check_held=False)
        assert got == want, (pts, fps)


def test_explicit_timestamp_overrides_the_frame():
    resampler = FpsResampler(10)
    kept = resampler.push("a", 0.0) + resampler.push("b", 0.1) + resampler.finish()
    assert [(k.frame, k.source_index, k.pts_seconds) for k in kept] == [
        ("a", 0, 0.0),
        ("b", 1, 0.1),
    ]


def test_bad_input():
    for fps in (0, -1, float("nan"), float("inf"), "10", True):
        with pytest.raises(ConfigError, match="fps must be None or a positive number"):
            FpsResampler(fps)
    resampler = FpsResampler(10)
    resampler.push(Frame(0.5))
    with pytest.raises(InputError, match="timestamps must increase"):
        resampler.push(Frame(0.5))
    with pytest.raises(InputError, match="no finite timestamp"):
        resampler.push(Frame(float("nan")))
    with pytest.raises(InputError, match="no frames"):
        FpsResampler(10).finish()
