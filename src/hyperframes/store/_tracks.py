"""A store's tracks beside its frames: audio and optical flow (with homographies).

What ``_format`` describes, from the journal to the reader: the payload ranges a video's
journal record lists (:func:`payload_ranges`, which recovery and resume check), the index
tables built at assembly (:func:`track_tables`), their checks at open (:func:`check_track_tables`,
:func:`check_track_payload`; vectorised, a StoreError naming the file and the video), and
the reads (:class:`Tracks`, served by ``Store`` and ``H5Store`` through :class:`TrackMethods`).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import xxhash

from .._core._errors import DataError, StoreError
from ._records import ALTERED, MAX_SIDE, _Rows, first_overlap
from .format import AUDIO_DTYPE, FLOW_DTYPE, FLOW_DTYPE_CODES

__all__ = [
    "TRACK_KINDS",
    "TrackMethods",
    "Tracks",
    "check_track_payload",
    "check_track_tables",
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


# -- checks at open ----------------------------------------------------------------------


def _table(arr: np.ndarray, dtype: np.dtype, n: int, file: str) -> None:
    if arr.ndim != 1 or arr.dtype != dtype or len(arr) != n:
        raise StoreError(
            f"{file}: holds {arr.dtype} of shape {arr.shape}; expected one row per video ({n}) "
            f"with columns ({', '.join(dtype.names or ())}); {ALTERED}"
        )


def check_track_tables(
    audio: np.ndarray | None,
    flow: np.ndarray | None,
    videos: np.ndarray,
    paths: list[str],
    *,
    files: dict[str, str],
) -> None:
    """What every form of store must satisfy: one row per video, and each row's counts,
    parameters and sizes consistent with each other and with the video's frames.
    ``files``: {"audio": name, "flow": name} for messages. Vectorised."""
    rows, n = _Rows(paths), len(videos)
    if audio is not None:
        f = files["audio"]
        _table(audio, AUDIO_DTYPE, n, f)
        has, ns, rate, ch = (
            audio["has_audio"],
            audio["num_samples"],
            audio["sample_rate"],
            audio["channels"],
        )
        nb, start = audio["nbytes"], audio["start_seconds"]
        rows.require(np.isin(has, (0, 1)), f, lambda i: f"has_audio {has[i]} is not 0 or 1")
        on = has == 1
        rows.require(
            ~on | ((rate > 0) & np.isin(ch, (1, 2)) & (ns >= 0) & np.isfinite(start)),
            f,
            lambda i: (
                f"audio of {ns[i]} samples, {ch[i]} channel(s) at {rate[i]} Hz from "
                f"{start[i]} s is not a track (channels 1 or 2, a positive rate)"
            ),
        )
        q, r = np.divmod(nb, np.maximum(ch.astype(np.int64), 1) * 4)
        rows.require(
            ~on | ((nb >= 0) & (r == 0) & (q == ns)),
            f,
            lambda i: (
                f"nbytes {nb[i]} should be channels {ch[i]} x num_samples {ns[i]} x 4 (float32)"
            ),
        )
        rows.require(
            on | ((nb == 0) & (ns == 0)),
            f,
            lambda i: f"has no audio (has_audio 0) but lists {nb[i]} bytes, {ns[i]} samples",
        )
    if flow is not None:
        f = files["flow"]
        _table(flow, FLOW_DTYPE, n, f)
        pairs, h, w = flow["num_pairs"], flow["height"], flow["width"]
        code, scale = flow["dtype"], flow["scale"]
        want = np.maximum(videos["num_frames"].astype(np.int64) - 1, 0)
        rows.require(
            pairs == want,
            f,
            lambda i: f"num_pairs {pairs[i]} should be num_frames - 1 = {want[i]}",
        )
        rows.require(
            (h >= 1) & (h <= MAX_SIDE) & (w >= 1) & (w <= MAX_SIDE),
            f,
            lambda i: f"flow size {h[i]}x{w[i]} is not allowed (sides 1..{MAX_SIDE})",
        )
        rows.require(
            np.isin(code, list(_FLOW_NP)) & np.isfinite(scale) & (scale > 0),
            f,
            lambda i: (
                f"dtype code {code[i]} with scale {scale[i]} is not a stored flow (codes "
                f"{dict(zip(FLOW_DTYPES, range(len(FLOW_DTYPES))))}, a positive scale)"
            ),
        )
        itemsize = np.where(code == FLOW_DTYPE_CODES["int8"], 1, 2).astype(np.int64)
        fb = 2 * h.astype(np.int64) * w * itemsize
        nb, hnb = flow["nbytes"], flow["homography_nbytes"]
        rows.require(
            (nb >= 0) & (nb == pairs * fb),
            f,
            lambda i: (
                f"nbytes {nb[i]} should be num_pairs {pairs[i]} x 2 x {h[i]} x {w[i]} "
                f"x {itemsize[i]} = {int(pairs[i]) * int(fb[i])}"
            ),
        )
        rows.require(
            (hnb >= 0) & (hnb == pairs * 36),
            f,
            lambda i: f"homography_nbytes {hnb[i]} should be num_pairs {pairs[i]} x 36",
        )


def check_track_payload(
    audio: np.ndarray | None,
    flow: np.ndarray | None,
    videos: np.ndarray,
    paths: list[str],
    *,
    shard_files: list[str],
    shard_bytes: np.ndarray,
    files: dict[str, str],
) -> None:
    """Where a folder store's track payloads lie: in the video's own shard, inside the file,
    sharing no byte with any other payload (frames or track). Call after
    :func:`check_track_tables` and ``check_payload``. Vectorised."""
    rows = _Rows(paths)
    spans = [("frames", files["videos"], videos["shard"], videos["offset"], videos["nbytes"])]
    if audio is not None:
        spans.append(("audio", files["audio"], audio["shard"], audio["offset"], audio["nbytes"]))
    if flow is not None:
        spans.append(("flow", files["flow"], flow["shard"], flow["offset"], flow["nbytes"]))
        spans.append(
            (
                "homographies",
                files["flow"],
                flow["shard"],
                flow["homography_offset"],
                flow["homography_nbytes"],
            )
        )
    for what, file, shard, off, nb in spans[1:]:
        _inside(rows, videos, what, file, shard, off, nb, shard_files, shard_bytes)
    # no two payloads share a byte
    owner = np.concatenate([np.arange(len(videos))] * len(spans))
    kind = np.concatenate([np.full(len(videos), k) for k in range(len(spans))])
    shard = np.concatenate([s[2] for s in spans]).astype(np.int64)
    off = np.concatenate([s[3] for s in spans]).astype(np.int64)
    nb = np.concatenate([s[4] for s in spans]).astype(np.int64)
    pair = first_overlap(shard, off, nb)
    if pair is not None:
        a, z = pair
        za, ka = spans[kind[z]], spans[kind[a]]
        raise StoreError(
            f"{za[1]}: {rows.who(int(owner[z]))}: its {za[0]}, bytes {off[z]}..{off[z] + nb[z]}, "
            f"overlap the {ka[0]} of {rows.who(int(owner[a]))}, bytes {off[a]}..{off[a] + nb[a]},"
            f" in {shard_files[int(shard[z])]}; {ALTERED}"
        )


def _inside(rows, videos, what, file, shard, off, nb, shard_files, shard_bytes) -> None:
    """Each used payload (nbytes > 0) of ``what`` lies in its video's shard, inside the file."""
    used = nb > 0
    own = videos["shard"]
    rows.require(
        ~used | (shard == own),
        file,
        lambda i: f"its {what} lie in shard {shard[i]}, not in its own shard {own[i]}",
    )
    size = shard_bytes[own] if len(videos) else np.zeros(0, np.int64)
    rows.require(
        ~used | ((off >= 0) & (off <= size) & (nb <= size - off)),
        file,
        lambda i: (
            f"its {what}, bytes {off[i]}..{int(off[i]) + int(nb[i])} (offset, nbytes), lie "
            f"outside {shard_files[own[i]]} ({size[i]} bytes)"
        ),
    )


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
