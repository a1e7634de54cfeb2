"""The sampler base class: item space, short-video policy and per-item seeding.

A sampler maps a list of videos to ``num_items(videos)`` items per epoch and each item to a
:class:`~hyperframes.sampling.Plan` with ``plan(videos, item, seed=, epoch=)``. Plans are a pure
function of (metadata, parameters, seed, epoch, item): the per-item generator is
``np.random.default_rng([seed, epoch, item])``, so any number of workers or processes, or an
epoch resumed half-way, gives the same plans.

Each video contributes ``count`` items (one per video, one per window, K clips...), times
``clips_per_video`` (:meth:`Sampler.with_clips_per_video`, default 1): a random sampler then
draws that many windows of each of its items per epoch, each its own item with its own
``[seed, epoch, item]`` generator. The base class precomputes, once per video list, the videos that have items and the cumulative counts;
``plan`` maps an item to its video with one ``np.searchsorted``.

Short videos (fewer frames than a window needs) follow ``short``:

* ``"error"`` (default) -- raise :class:`DataError` naming the video, its frame count and need;
* ``"drop"`` -- the video has no items (item numbers count only usable videos);
* ``"pad"`` -- the window is filled with the frames there are, the last real frame repeated at
  the end, and ``mask`` is False on the repeated positions. A video with no frames cannot be
  padded and is an error.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import ClassVar, Literal, get_args

import numpy as np

from .._core._errors import ConfigError, DataError
from ._meta import Plan, VideoMeta, VideoTable, as_video_table

__all__ = ["SHORT_POLICIES", "Sampler", "ShortPolicy"]

#: what a sampler does with a video shorter than its window: refuse it, leave it out, or pad it
ShortPolicy = Literal["error", "drop", "pad"]
SHORT_POLICIES: tuple[ShortPolicy, ...] = get_args(ShortPolicy)


def _positive_int(name: str, value, sampler: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < minimum:
        raise ConfigError(
            f"{sampler} sampler: {name} must be an integer >= {minimum}, got {value!r}"
        )
    return int(value)


def _check_seed(name: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ConfigError(f"{name} must be an integer >= 0, got {value!r}")
    return int(value)


class _Index:
    """Precomputed item space of one sampler over one video table."""

    __slots__ = ("ends", "short", "starts", "table", "total", "videos")

    def __init__(self, table: VideoTable, counts: np.ndarray, short: np.ndarray) -> None:
        self.table = table
        self.short = short
        self.videos = np.flatnonzero(counts > 0)
        c = counts[self.videos]
        self.ends = np.cumsum(c)
        self.starts = self.ends - c
        self.total = int(self.ends[-1]) if c.shape[0] else 0


class Sampler:
    """Base class of samplers; subclasses set ``name`` and implement the hooks below."""

    name: ClassVar[str] = ""
    #: True when plans depend on ``seed``/``epoch`` (training-time randomness)
    random: bool = False
    #: items drawn per item of the sampler's own (:meth:`with_clips_per_video`)
    clips_per_video: int = 1

    def __init__(self, *, frames: int, short: ShortPolicy = "error") -> None:
        self.frames = _positive_int("frames", frames, self.name)
        if short not in SHORT_POLICIES:
            raise ConfigError(
                f"{self.name} sampler: unknown short={short!r}; allowed: "
                f"{', '.join(SHORT_POLICIES)} (what to do with videos shorter than a window)"
            )
        self.short = short
        self._cache: tuple | None = None

    # -- hooks ---------------------------------------------------------------------------------
    def _need(self) -> int:
        """Frames a video needs for one full window (for error messages and the default test)."""
        return self.frames

    def _need_text(self) -> str:
        return f"{self._need()} frames (frames={self.frames})"

    def _describe(self, table: VideoTable, video: int) -> str:
        """Extra words after "video V has N frames" in the short-video error."""
        return ""

    def _short(self, table: VideoTable) -> np.ndarray:
        """Boolean array: which videos are too short for a full window."""
        return table.num_frames < self._need()

    def _counts(self, table: VideoTable, short: np.ndarray) -> np.ndarray:
        """Items per video (short videos get the count used under ``short="pad"``)."""
        return np.ones(len(table), dtype=np.int64)

    def _validate(self, table: VideoTable) -> None:
        """Raise if the table lacks what this sampler needs (e.g. change scores)."""

    def _plan(
        self,
        table: VideoTable,
        video: int,
        local: int,
        is_short: bool,
        item: int,
        seed: int,
        epoch: int,
    ) -> Plan:
        """Plan item ``item``, the ``local``-th item of video ``video`` (``is_short``: the video
        is shorter than a window and ``short="pad"``). Draw randomness only from
        ``self._rng(seed, epoch, item)``."""
        raise NotImplementedError

    # -- public --------------------------------------------------------------------------------
    def params(self) -> dict:
        """The parameters this sampler was created with (for logs and manifests)."""
        return {k: v for k, v in vars(self).items() if not k.startswith("_")}

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.params().items())
        return f"{type(self).__name__}({args})"

    def __getstate__(self) -> dict:
        state = dict(vars(self))
        state["_cache"] = None  # rebuilt in each worker; keeps pickles small
        return state

    def with_clips_per_video(self, clips_per_video: int) -> Sampler:
        """A copy of this sampler that draws ``clips_per_video`` windows for each item of its
        own: items ``k*n .. k*n + n-1`` (n = ``clips_per_video``) are drawn as the ``k``-th
        item is, each from its own ``[seed, epoch, item]`` generator, so an epoch holds n times
        as many independently drawn windows of every video. Only for a random sampler (a
        deterministic one would give the same window n times)."""
        n = _positive_int("clips_per_video", clips_per_video, self.name)
        if n > 1 and not self.random:
            raise ConfigError(
                f"clips_per_video={n}: the {self.name} sampler's windows do not depend on the "
                "seed, so each would be the same window repeated; allowed with it: 1 (use "
                "random, segments or duration with train=True, or per_segment with train=True, "
                "to draw several windows of each video per epoch)"
            )
        out = copy.copy(self)
        out.clips_per_video = n
        out._cache = None
        return out

    def num_items(self, videos: VideoTable | Sequence[VideoMeta]) -> int:
        """Number of items in one epoch over ``videos``."""
        return self._index(videos).total

    def item_videos(self, videos: VideoTable | Sequence[VideoMeta]) -> np.ndarray:
        """Video index of every item (int64, length ``num_items``)."""
        index = self._index(videos)
        return np.repeat(index.videos, index.ends - index.starts)

    def item_labels(self, videos: VideoTable | Sequence[VideoMeta]) -> np.ndarray:
        """Class label of every item (its video's label), e.g. for class-balanced sampling."""
        index = self._index(videos)
        return np.repeat(index.table.labels[index.videos], index.ends - index.starts)

    def plan(
        self, videos: VideoTable | Sequence[VideoMeta], item: int, *, seed: int = 0, epoch: int = 0
    ) -> Plan:
        """The frames of ``item`` in epoch ``epoch`` of a run seeded with ``seed``."""
        index = self._index(videos)
        if isinstance(item, bool) or not isinstance(item, int | np.integer):
            raise DataError(f"item must be an integer, got {item!r}")
        item = int(item)
        if not 0 <= item < index.total:
            raise DataError(
                f"item {item} is out of range: the {self.name} sampler has {index.total} items "
                f"over {len(index.table)} videos (valid items are 0..{index.total - 1})"
            )
        pos = int(np.searchsorted(index.ends, item, side="right"))
        video = int(index.videos[pos])
        local = (item - int(index.starts[pos])) // self.clips_per_video
        seed = _check_seed("seed", seed)
        epoch = _check_seed("epoch", epoch)
        return self._plan(index.table, video, local, bool(index.short[video]), item, seed, epoch)

    def plans(
        self,
        videos: VideoTable | Sequence[VideoMeta],
        items: Sequence[int] | np.ndarray,
        *,
        seed: int = 0,
        epoch: int = 0,
    ) -> list[Plan]:
        """``plan`` for several items."""
        return [self.plan(videos, int(i), seed=seed, epoch=epoch) for i in items]

    def plan_columns(
        self,
        videos: VideoTable | Sequence[VideoMeta],
        items: np.ndarray,
        epochs: np.ndarray,
        *,
        seed: int = 0,
    ) -> tuple[np.ndarray, ...]:
        """The plans of ``items`` (B,) in ``epochs`` (B,) as columns: ``(video (B,),
        frame_indices (B, T), mask (B, T), clip (B,), segment (B,))``, equal to :meth:`plan`
        item by item (samplers whose plans are index arithmetic compute them at once)."""
        plans = [self.plan(videos, int(i), seed=seed, epoch=int(e)) for i, e in zip(items, epochs)]
        lengths = {len(p.frame_indices) for p in plans}
        if len(lengths) > 1:
            raise DataError(
                f"cannot batch windows of different lengths {sorted(lengths)}; the sampler's "
                "short='pad' keeps T fixed"
            )
        t = lengths.pop() if lengths else self.frames
        return (
            np.asarray([p.video for p in plans], np.int64),
            np.asarray([p.frame_indices for p in plans], np.int64).reshape(len(plans), t),
            np.asarray([p.mask for p in plans], bool).reshape(len(plans), t),
            np.asarray([p.clip for p in plans], np.int64),
            np.asarray([p.segment for p in plans], np.int64),
        )

    def _positions(self, index: _Index, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(video (B,), local window number (B,)) of ``items`` (checked in range)."""
        items = np.asarray(items, np.int64).reshape(-1)
        bad = (items < 0) | (items >= index.total)
        if bad.any():
            item = int(items[bad][0])
            raise DataError(
                f"item {item} is out of range: the {self.name} sampler has {index.total} items "
                f"over {len(index.table)} videos (valid items are 0..{index.total - 1})"
            )
        pos = np.searchsorted(index.ends, items, side="right")
        local = (items - index.starts[pos]) // self.clips_per_video
        return index.videos[pos].astype(np.int64), local

    # -- machinery -----------------------------------------------------------------------------
    def _index(self, videos: VideoTable | Sequence[VideoMeta]) -> _Index:
        cache = self._cache
        if cache is not None and cache[0] is videos and cache[1] == len(videos):
            return cache[2]
        table = as_video_table(videos)
        self._validate(table)
        short = np.asarray(self._short(table), dtype=bool)
        if short.any():
            self._check_short(table, short)
        counts = np.asarray(self._counts(table, short), dtype=np.int64) * self.clips_per_video
        if self.short == "drop":
            counts = np.where(short, 0, counts)
        index = _Index(table, counts, short)
        self._cache = (videos, len(videos), index)
        return index

    def _check_short(self, table: VideoTable, short: np.ndarray) -> None:
        bad = np.flatnonzero(short)
        if self.short == "pad":
            empty = bad[table.num_frames[bad] == 0]
            if empty.shape[0] == 0:
                return
            bad = empty
            why = ", so there is nothing to pad with"
            hint = "use short='drop' to skip empty videos"
        elif self.short == "error":
            why = f" but the {self.name} sampler needs {self._need_text()}"
            hint = (
                "use short='pad' to repeat the last frame (mask False there) or short='drop' "
                "to skip short videos"
            )
        else:
            return
        v = int(bad[0])
        more = f" ({bad.shape[0] - 1} more videos are too short)" if bad.shape[0] > 1 else ""
        raise DataError(
            f"video {v} has {int(table.num_frames[v])} frames{self._describe(table, v)}{why}{more}; "
            f"{hint}"
        )

    @staticmethod
    def _rng(seed: int, epoch: int, item: int) -> np.random.Generator:
        return np.random.default_rng([seed, epoch, item])


def finish(indices: np.ndarray, num_frames: int) -> tuple[np.ndarray, np.ndarray]:
    """Clamp a window to the video: positions past the end repeat the last real index.

    Returns ``(frame_indices, mask)``; mask is False on repeated positions.
    """
    indices = np.asarray(indices, dtype=np.int64)
    mask = indices < num_frames
    if not mask.all():
        last = indices[mask][-1] if mask.any() else num_frames - 1
        indices = np.where(mask, indices, last)
    return indices, mask
