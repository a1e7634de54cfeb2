"""The checks at open of a store's track tables (``index/audio.npy``, ``index/flow.npy``, or
the HDF5 form's ``/index/audio``, ``/index/flow``): one row per video with counts, parameters
and sizes that agree (:func:`check_track_tables`, every form), and where a folder store's track
payloads lie in its shards (:func:`check_track_payload`). Vectorised; the first violation is a
StoreError naming the file and the video."""

from __future__ import annotations

import numpy as np

from .._core._errors import StoreError
from ._table_checks import ALTERED, MAX_SIDE, _Rows, first_overlap
from ._tracks import _FLOW_NP, FLOW_DTYPES
from .format import AUDIO_DTYPE, FLOW_DTYPE, FLOW_DTYPE_CODES

__all__ = ["check_track_payload", "check_track_tables"]


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
        _check_audio(rows, audio, n, files["audio"])
    if flow is not None:
        _check_flow(rows, flow, videos, files["flow"])


def _check_audio(rows: _Rows, audio: np.ndarray, n: int, f: str) -> None:
    """Each audio row: a track (channels 1 or 2, a positive rate) whose bytes hold its
    samples as float32, or no audio and no bytes."""
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
        lambda i: f"nbytes {nb[i]} should be channels {ch[i]} x num_samples {ns[i]} x 4 (float32)",
    )
    rows.require(
        on | ((nb == 0) & (ns == 0)),
        f,
        lambda i: f"has no audio (has_audio 0) but lists {nb[i]} bytes, {ns[i]} samples",
    )


def _check_flow(rows: _Rows, flow: np.ndarray, videos: np.ndarray, f: str) -> None:
    """Each flow row: one pair per two consecutive frames, an allowed size, a stored dtype
    with a positive scale, and bytes (flow and homographies) that hold its pairs."""
    _table(flow, FLOW_DTYPE, len(videos), f)
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
