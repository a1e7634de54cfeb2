"""A store's tracks beside its frames: audio and optical flow (with homographies).

What ``format`` describes, from the journal to the reader: the payload ranges a video's
journal record lists (:func:`payload_ranges`, which recovery and resume check), the index
tables built at assembly (:func:`track_tables`) and the reads (:class:`Tracks`, served by
``Store`` and ``H5Store`` through :class:`TrackMethods`). Their checks at open are in
``_track_checks``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xxhash

from .._core._errors import DataError, StoreError
from .format import AUDIO_DTYPE, FLOW_DTYPE, FLOW_DTYPE_CODES

__all__ = [
    "TRACK_KINDS",
    "TrackMethods",
    "Tracks",
    "payload_ranges",
    "track_keys",
    "track_tables",
]

#: the payloads a track adds to a video, by name: (record key, offset/nbytes/xxh3 keys)
TRACK_KINDS = {
    "audio": ("audio", "offset", "nbytes", "xxh3_64"),
    "flow": ("flow", "offset", "nbytes", "xxh3_64"),
    "homography": ("flow", "homography_offset", "homography_nbytes", "homography_xxh3_64"),
}
_FLOW_NP = {code: np.dtype(name) for name, code in FLOW_DTYPE_CODES.items()}


#: stored flow element types, by their code in ``index/flow.npy``
FLOW_DTYPES = ("float16", "int8")


def dequantise(stored: np.ndarray, scale: float) -> np.ndarray:
    """Stored flow back to float32 pixels."""
    if stored.dtype == np.int8:
        return stored.astype(np.float32) * np.float32(scale)
    return stored.astype(np.float32)


def track_keys(options) -> tuple[str, ...]:
    """Record keys every journal record of a build with ``options`` must have."""
    return (("audio",) if options.audio else ()) + (("flow",) if options.flow else ())


def payload_ranges(rec: dict) -> list[tuple[str, int, int, int | None]]:
    """``(what, offset, nbytes, xxh3_64)`` of every payload a journal record lists: its
    frames, then its tracks (xxh3_64 None where the record has none: an older build)."""
    out = [("frames", int(rec["offset"]), int(rec["nbytes"]), rec.get("payload_xxh3_64"))]
    for kind, (key, off, nb, h) in TRACK_KINDS.items():
        track = rec.get(key)
        if isinstance(track, dict):
            out.append((kind, int(track[off]), int(track[nb]), track.get(h)))
    return out


# -- assembly ----------------------------------------------------------------------------


def track_tables(
    records: list[dict], shard_ids: list[int], options
) -> tuple[np.ndarray | None, np.ndarray | None]:
    """``(audio.npy, flow.npy)`` rows of the stored videos' journal ``records`` (index order;
    ``shard_ids``: each one's shard number), or None for a track the build did not ask for."""
    audio = flow = None
    if options.audio:
        audio = np.zeros(len(records), AUDIO_DTYPE)
        for v, (r, shard) in enumerate(zip(records, shard_ids)):
            a = r.get("audio")
            if a is not None:
                audio[v] = (
                    1,
                    shard,
                    a["offset"],
                    a["nbytes"],
                    a["num_samples"],
                    a["sample_rate"],
                    a["channels"],
                    a["start_seconds"],
                    a["xxh3_64"],
                )
    if options.flow:
        flow = np.zeros(len(records), FLOW_DTYPE)
        for v, (r, shard) in enumerate(zip(records, shard_ids)):
            f = r["flow"]
            flow[v] = (
                shard,
                f["offset"],
                f["nbytes"],
                f["num_pairs"],
                f["height"],
                f["width"],
                FLOW_DTYPE_CODES[f["dtype"]],
                f["scale"],
                f["xxh3_64"],
                f["homography_offset"],
                f["homography_nbytes"],
                f["homography_xxh3_64"],
            )
    return audio, flow


# -- reads -------------------------------------------------------------------------------


class Tracks:
    """The tracks of an opened store. ``fetch(kind, video)`` gives the bytes (1-D uint8) of
    the payload ``kind`` ("audio", "flow", "homography") of ``video``; ``where(kind, video)``
    names it in messages. ``check``: verify each payload's xxh3-64 on its first read."""

    def __init__(
        self,
        audio: np.ndarray | None,
        flow: np.ndarray | None,
        build: dict,
        paths: list[str],
        fetch: Callable[..., np.ndarray],
        where: Callable[[str, int], str],
        *,
        check: bool = False,
    ):
        self.audio, self.flow, self.build = audio, flow, build
        self.paths, self._fetch, self._where = paths, fetch, where
        self._verified: set[tuple[str, int]] | None = set() if check else None

    # -- checksums
    def _row(self, kind: str) -> np.ndarray | None:
        return self.audio if kind == "audio" else self.flow

    def kinds(self, i: int) -> list[str]:
        """The payloads video ``i`` has."""
        out = []
        if self.audio is not None and self.audio["has_audio"][i]:
            out.append("audio")
        if self.flow is not None:
            out += ["flow", "homography"]
        return out

    def problem(self, kind: str, i: int) -> str | None:
        """What is wrong with video ``i``'s ``kind`` payload against its checksum, or None."""
        table = self._row(kind)
        assert table is not None
        _, _, _, h = TRACK_KINDS[kind]
        want = int(table[h][i])
        try:
            data = self._fetch(kind, i)
        except StoreError as e:
            return str(e)
        got = xxhash.xxh3_64_intdigest(memoryview(np.ascontiguousarray(data)))  # type: ignore[arg-type]
        if got == want:
            return None
        return (
            f"{self._where(kind, i)}: video {i} ({self.paths[i]!r}): its {kind}, "
            f"{len(data)} bytes, has xxh3-64 {got:016x}, the index recorded {want:016x} at "
            "build: the file is damaged; rebuild the store or restore the file"
        )

    def spec(self, kind: str, i: int) -> tuple[tuple[int, ...], np.dtype]:
        """(shape, dtype) of video ``i``'s ``kind`` payload, as the index describes it."""
        if kind == "audio":
            assert self.audio is not None
            r = self.audio[i]
            return (int(r["channels"]), int(r["num_samples"])), np.dtype(np.float32)
        assert self.flow is not None
        r = self.flow[i]
        pairs = int(r["num_pairs"])
        if kind == "flow":
            shape = (pairs, 2, int(r["height"]), int(r["width"]))
            return shape, _FLOW_NP[int(r["dtype"])]
        return (pairs, 3, 3), np.dtype(np.float32)

    def problems(self, i: int) -> list[str]:
        return [p for k in self.kinds(i) if (p := self.problem(k, i)) is not None]

    def _bytes(self, kind: str, i: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Bytes ``lo .. hi`` (None: the end) of video ``i``'s ``kind`` payload: only those
        are read (one range of a store at a URL), after the whole payload's checksum the
        first time when the store checks videos."""
        if self._verified is not None and (kind, i) not in self._verified:
            problem = self.problem(kind, i)
            if problem is not None:
                raise StoreError(problem)
            self._verified.add((kind, i))
        return self._fetch(kind, i, lo, hi)

    # -- audio
    @property
    def has_audio(self) -> bool:
        return self.audio is not None

    def audio_info(self, i: int) -> dict | None:
        if self.audio is None or not self.audio["has_audio"][i]:
            return None
        r = self.audio[i]
        return {
            "rate": int(r["sample_rate"]),
            "channels": int(r["channels"]),
            "start_seconds": float(r["start_seconds"]),
            "num_samples": int(r["num_samples"]),
        }

    def read_audio(
        self, i: int, start_seconds: float, end_seconds: float
    ) -> tuple[np.ndarray, int, float] | None:
        info = self.audio_info(i)
        if info is None:
            return None
        if not (np.isfinite(start_seconds) and np.isfinite(end_seconds)):
            raise DataError(f"audio times must be finite, got {start_seconds}..{end_seconds}")
        if end_seconds < start_seconds:
            raise DataError(
                f"end_seconds {end_seconds} is before start_seconds {start_seconds} (video {i})"
            )
        rate, c, n = info["rate"], info["channels"], info["num_samples"]
        first = round((start_seconds - info["start_seconds"]) * rate)
        count = round((end_seconds - start_seconds) * rate)
        out = np.zeros((c, count), np.float32)
        a, b = max(first, 0), min(first + count, n)
        for ch in range(c if b > a else 0):  # the channels are planar: one range each
            at = ch * n * 4
            out[ch, a - first : b - first] = self._bytes("audio", i, at + a * 4, at + b * 4).view(
                np.float32
            )
        return out, rate, info["start_seconds"] + first / rate

    # -- flow
    @property
    def has_flow(self) -> bool:
        return self.flow is not None

    def flow_info(self) -> dict | None:
        if self.flow is None:
            return None
        b = self.build
        return {
            "method": b.get("flow"),
            "size": b.get("flow_size"),
            "dtype": b.get("flow_dtype", "float16"),
        }

    def _need_flow(self) -> np.ndarray:
        if self.flow is None:
            raise StoreError("this store has no flow: build it with --flow dis|farneback")
        return self.flow

    def flow_shape(self, i: int) -> tuple[int, int]:
        r = self._need_flow()[i]
        return int(r["height"]), int(r["width"])

    def read_flow(self, i: int, pair_indices) -> np.ndarray:
        r = self._need_flow()[i]
        pairs, h, w = int(r["num_pairs"]), int(r["height"]), int(r["width"])
        idx = np.asarray(pair_indices, np.int64).reshape(-1)
        if idx.size and (idx.min() < 0 or idx.max() >= pairs):
            bad = idx[(idx < 0) | (idx >= pairs)][0]
            raise DataError(
                f"flow pair {bad} is out of range for video {i} ({self.paths[i]}), which has "
                f"{pairs} pairs (frames - 1)"
            )
        if not idx.size:
            return np.zeros((0, 2, h, w), np.float32)
        lo, hi = int(idx.min()), int(idx.max()) + 1  # the pairs from the first to the last asked
        span, scale = self.read_flow_stored(i, lo, hi)
        return dequantise(span[idx - lo], scale)

    def read_flow_stored(self, i: int, lo: int, hi: int) -> tuple[np.ndarray, float]:
        """Pairs ``lo .. hi - 1`` as stored, (hi - lo, 2, h, w) float16 or int8 (a read-only
        view of the payload where the store maps it), and the scale turning them into
        pixels."""
        r = self._need_flow()[i]
        pairs, h, w = int(r["num_pairs"]), int(r["height"]), int(r["width"])
        if not 0 <= lo <= hi <= pairs:
            raise DataError(
                f"flow pairs {lo}..{hi - 1} are out of range for video {i} ({self.paths[i]}), "
                f"which has {pairs} pairs (frames - 1)"
            )
        dtype = np.dtype(_FLOW_NP[int(r["dtype"])])
        per_pair = 2 * h * w * dtype.itemsize
        span = self._bytes("flow", i, lo * per_pair, hi * per_pair) if hi > lo else None
        if span is None:
            return np.zeros((0, 2, h, w), dtype), float(r["scale"])
        return span.view(dtype).reshape(hi - lo, 2, h, w), float(r["scale"])

    def homographies(self, i: int) -> np.ndarray | None:
        if self.flow is None:
            return None
        pairs = int(self.flow["num_pairs"][i])
        return self._bytes("homography", i).view(np.float32).reshape(pairs, 3, 3).copy()


class TrackMethods:
    """The track reads of a store (``Store``, ``H5Store``): ``self._tracks`` is its
    :class:`Tracks`; ``self._video_id`` turns a video (id or record) into its row."""

    _tracks: Tracks

    def _video_id(self, video) -> int:  # provided by the store
        raise NotImplementedError

    def track_problems(self, video) -> list[str]:
        """What is wrong with the video's track payloads (audio, flow, homographies) against
        the checksums taken at build: empty when they match (``verify``, ``convert``)."""
        return self._tracks.problems(self._video_id(video))

    def damaged_tracks(self, video) -> list[str]:
        """The names of the video's track payloads whose checksum does not match."""
        i = self._video_id(video)
        return [k for k in self._tracks.kinds(i) if self._tracks.problem(k, i) is not None]

    @property
    def has_audio(self) -> bool:
        """Whether the store was built with audio (``build --audio``)."""
        return self._tracks.has_audio

    def audio_info(self, video) -> dict | None:
        """``{"rate", "channels", "start_seconds", "num_samples"}`` of the video's audio, or
        None when it has none (no audio stream, or a store built without audio)."""
        return self._tracks.audio_info(self._video_id(video))

    def read_audio(
        self, video, start_seconds: float, end_seconds: float
    ) -> tuple[np.ndarray, int, float] | None:
        """The video's audio from ``start_seconds`` to ``end_seconds`` (the source's seconds,
        the frames' pts clock): ``(samples (C, N) float32, rate, first_sample_seconds)`` with
        ``N = round((end - start) * rate)``, the first sample the one nearest
        ``start_seconds`` (at ``first_sample_seconds``); zeros where the stored audio does not
        reach. None when the video has no audio."""
        return self._tracks.read_audio(self._video_id(video), start_seconds, end_seconds)

    @property
    def has_flow(self) -> bool:
        """Whether the store was built with optical flow (``build --flow``)."""
        return self._tracks.has_flow

    def flow_info(self) -> dict | None:
        """``{"method", "size", "dtype"}`` of the stored flow (size: build's ``flow_size``,
        None = the stored frame size), or None without flow."""
        return self._tracks.flow_info()

    def flow_shape(self, video) -> tuple[int, int]:
        """(h, w) of the video's flow."""
        return self._tracks.flow_shape(self._video_id(video))

    def read_flow(self, video, pair_indices) -> np.ndarray:
        """Flow of pairs ``pair_indices`` (pair k: stored frame k -> k+1) as ``(n, 2, h, w)``
        float32 pixels of the flow size (component 0 dx, 1 dy), dequantised."""
        return self._tracks.read_flow(self._video_id(video), pair_indices)

    def read_flow_stored(self, video, lo: int, hi: int) -> tuple[np.ndarray, float]:
        """Flow of pairs ``lo .. hi - 1`` as stored (float16, or int8 to multiply by the
        returned scale): what a batched reader dequantises itself, in one op per batch."""
        return self._tracks.read_flow_stored(self._video_id(video), lo, hi)

    def homographies(self, video) -> np.ndarray | None:
        """``(F-1, 3, 3)`` float32: H_k maps a pixel of stored frame k+1 to frame k; None
        without flow."""
        return self._tracks.homographies(self._video_id(video))
