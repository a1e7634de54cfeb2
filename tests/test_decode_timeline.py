"""The timeline every backend shares: FFmpeg's best-effort timestamps, made strictly increasing.

Pure arithmetic on timestamp sequences; no video. The sequences are what PyAV 18 (FFmpeg 8)
reports for real files: see test_decode_conformance for the same cases decoded.
"""

from __future__ import annotations

import math

import pytest

from hyperframes.decode._base import Timeline


def times(timeline: Timeline, frames: list[tuple]) -> list[float]:
    """Push ``(pts, dts)`` pairs (in 1/30 s), flush, return the times in 1/30 s."""
    out = []
    for pts, dts in frames:
        seconds = [None if t is None else t / 30 for t in (pts, dts)]
        out += timeline.push(None, seconds[0], dts=seconds[1])
    out += timeline.flush()
    assert [index for _, index, _ in out] == list(range(len(frames)))
    return [round(t * 30, 6) for _, _, t in out]


# x264 B-frames (pyramid) in AVI: FFmpeg 8 invents pts in decode order, which come out of the
# decoder permuted; the dts FFmpeg attaches to each frame are right (ffprobe: 2, 3, 4, ...).
AVI_BFRAMES = [(1, 2), (4, 3), (3, 4), (5, 5), (2, 6), (8, 7), (7, 8), (9, 9)]


def test_wrong_pts_give_way_to_dts_from_the_first_frame():
    assert times(Timeline(30, lookahead=8), AVI_BFRAMES) == [2, 3, 4, 5, 6, 7, 8, 9]


def test_without_lookahead_it_is_ffmpegs_own_rule():
    """FFmpeg's guess_correct_pts: pts until they have gone backwards more often than dts.
    Frame 0 (pts 1) and frame 1 (pts 4) come before the first fault; a repeat is moved on."""
    assert times(Timeline(30), AVI_BFRAMES) == [1, 4, 5, 6, 7, 8, 9, 10]


def test_good_pts_win_over_different_dts():
    """MP4 with B-frames: pts increase, and a dts that disagrees does not matter."""
    frames = [(0, -2), (1, -1), (2, 0), (3, 1), (4, None), (5, None)]
    assert times(Timeline(30, lookahead=8), frames) == [0, 1, 2, 3, 4, 5]


def test_missing_pts_are_taken_from_dts_then_extrapolated():
    """AVI with packed B-frames under older FFmpeg: most frames have only a dts; the last one,
    flushed from the decoder, has neither (ffprobe: N/A) and follows the previous one."""
    frames = [(None, 1), (2, 2), (None, 3), (None, 4), (None, None)]
    assert times(Timeline(30, lookahead=8), frames) == [1, 2, 3, 4, 5]


def test_backends_without_dts_keep_their_pts():
    """No dts given (every backend but PyAV): the pts are used; a repeat is moved on."""
    nopts = -3.7e17  # FFmpeg's AV_NOPTS_VALUE in seconds
    frames = [(0, None), (1, None), (1, None), (math.nan, None), (nopts * 30, None), (6, None)]
    assert times(Timeline(30), frames) == [0, 1, 2, 3, 4, 6]


@pytest.mark.parametrize("lookahead", [0, 3])
def test_first_frame_without_time_starts_at_start(lookahead):
    timeline = Timeline(None, start=0.5, lookahead=lookahead)
    got = times(timeline, [(None, None), (None, None), (20, None)])
    assert got == [15, 16, 20]  # 1/30 s apart until a step is known: 0.5 s = 15/30
    assert timeline.first == 0.5 and timeline.count == 3
