"""Write a video's tracks into its shard at build, after its frames (``store.format``).

Audio is decoded once (``hyperframes.decode.stream_audio``) when the frames are done, only
over the time the stored frames span (plus a margin), block by block straight into the shard:
channel 0 as it is decoded, the second channel of stereo through an unnamed temporary file (the
track is planar), so memory stays a block whatever the audio's length. Audio the decoder reports
damage in is stored as far as it decodes, its signals counted into the video's ``DecodeReport``
as ``audio_*`` (the video is then listed as damaged); it never fails the video. Flow is
computed as the frames stream by (``_flow.FlowEstimator``), and each pair's flow is spilled as
float16 to an unnamed temporary file beside the shards, so a long video's flow is never held
in memory whole: it is copied into the shard block by block (quantised to int8 on the way with
the video's scale, known once every pair is in) when the frames are done. Each pair's motion
score (``_flow.motion_score``, of the float32 flow) is kept too: the journal's flow object
lists them per stored frame (``"score"``, frame 0 scores 0), for ``index/flow_score.npy``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..decode import DecodeReport, stream_audio
from ..inputs import Source
from ._flow import FlowEstimator, flow_scale, motion_score, quantise
from ._options import BuildOptions
from ._shard import OutputError, ShardWriter, output_error

__all__ = ["FlowSpill", "write_tracks"]

#: flow pairs copied into the shard per block
_BLOCK_PAIRS = 64


class FlowSpill:
    """A video's flow pairs as they are computed (``add`` each stored frame): float16 in an
    unnamed temporary file in ``directory``, their peak |component|, the homographies
    (36 bytes a pair, kept in memory) and each stored frame's motion score (``scores``:
    frame k's is the pair k-1 -> k's, frame 0's is 0)."""

    def __init__(self, method: str, size: tuple[int, int] | None, directory: Path):
        self.estimator = FlowEstimator(method, size)
        self._store = Path(directory).parent
        try:
            self._file = tempfile.TemporaryFile(dir=directory, prefix=".flow-")  # noqa: SIM115
        except OSError as e:
            raise output_error(e, self._store) from None
        self.homographies: list[np.ndarray] = []
        self.scores: list[float] = []
        self.peak = 0.0
        self.pairs = 0

    def add(self, rgb: np.ndarray) -> None:
        pair = self.estimator.add(rgb)
        if pair is None:
            self.scores.append(0.0)  # frame 0 has no predecessor
            return
        flow, homography = pair
        self.scores.append(motion_score(flow, (int(rgb.shape[0]), int(rgb.shape[1]))))
        half = flow.astype(np.float16)
        try:
            self._file.write(half.data)
        except OSError as e:  # the disk's fault (full?), never the input's
            raise output_error(e, self._store) from None
        self.peak = max(self.peak, float(np.abs(half).max(initial=0)))
        self.homographies.append(homography)
        self.pairs += 1

    def blocks(self, dtype: str, scale: float) -> Iterator[np.ndarray]:
        """The stored flow, ``_BLOCK_PAIRS`` pairs at a time."""
        h, w = self.estimator.flow_size or (0, 0)
        pair_bytes = 2 * h * w * 2
        try:
            self._file.flush()
            self._file.seek(0)
        except OSError as e:
            raise output_error(e, self._store) from None
        for first in range(0, self.pairs, _BLOCK_PAIRS):
            n = min(_BLOCK_PAIRS, self.pairs - first)
            try:
                data = self._file.read(n * pair_bytes)
            except OSError as e:
                raise output_error(e, self._store) from None
            if len(data) != n * pair_bytes:
                raise OutputError(
                    f"{self._store}: the temporary flow file of a video came back short "
                    f"(pairs {first}..{first + n}); rerun the same command"
                )
            yield quantise(np.frombuffer(data, np.float16).reshape(n, 2, h, w), dtype, scale)

    def close(self) -> None:
        self._file.close()


#: bytes of the temporary audio file read back per block
_BLOCK_BYTES = 1 << 20


def _planar(blocks: Iterator[np.ndarray], channels: int, directory: Path) -> Iterator:
    """``(channels, n)`` blocks as the planar track: channel 0 as it comes, then channel 1
    (spilled to an unnamed temporary file in ``directory`` meanwhile)."""
    store = Path(directory).parent
    if channels == 1:
        for block in blocks:
            yield block[0]
        return
    try:
        spill = tempfile.TemporaryFile(dir=directory, prefix=".audio-")  # noqa: SIM115
    except OSError as e:
        raise output_error(e, store) from None
    with spill:
        try:
            for block in blocks:
                yield np.ascontiguousarray(block[0])
                spill.write(np.ascontiguousarray(block[1]).data)
            spill.flush()
            spill.seek(0)
            while data := spill.read(_BLOCK_BYTES):
                yield data
        except OSError as e:  # the disk's fault (full?), never the input's
            raise output_error(e, store) from None


def _write_audio(
    source: Source,
    options: BuildOptions,
    writer: ShardWriter,
    span: tuple[float, float] | None,
    report: DecodeReport | None,
) -> dict | None:
    """The audio entry of the journal (None: no audio stream), its samples appended."""
    if source.kind != "video":
        return None  # a frame folder has no audio
    damage = DecodeReport()
    audio = stream_audio(
        source.path,
        rate=options.audio_rate,
        channels=options.audio_channels,
        span_seconds=span,
        report=damage,
    )
    if audio is None:
        return None
    with audio:
        off, nb, digest = writer.append(
            _planar(audio.blocks(), options.audio_channels, writer.directory)
        )
    if report is not None:
        report.include(damage, what="audio")
    return {
        "offset": off,
        "nbytes": nb,
        "xxh3_64": digest,
        "num_samples": audio.num_samples,
        "sample_rate": audio.sample_rate,
        "channels": audio.channels,
        "start_seconds": audio.start_seconds,
    }


def write_tracks(
    source: Source,
    options: BuildOptions,
    writer: ShardWriter,
    flow: FlowSpill | None,
    *,
    span: tuple[float, float] | None = None,
    report: DecodeReport | None = None,
) -> dict:
    """Append the video's tracks after its frames; their journal entries (``store.format``).
    ``span``: the seconds the stored frames cover (the audio kept, plus a margin; None: all
    of it); ``report``: the video's, which the audio's damage signals join."""
    out: dict = {}
    if options.audio:
        out["audio"] = _write_audio(source, options, writer, span, report)
    if flow is not None:
        scale = flow_scale(flow.peak, options.flow_dtype)
        off, nb, digest = writer.append(flow.blocks(options.flow_dtype, scale))
        homographies = (
            np.stack(flow.homographies).astype(np.float32)
            if flow.homographies
            else np.zeros((0, 3, 3), np.float32)
        )
        h_off, h_nb, h_digest = writer.append([homographies])
        h, w = flow.estimator.flow_size or (0, 0)
        out["flow"] = {
            "offset": off,
            "nbytes": nb,
            "xxh3_64": digest,
            "num_pairs": flow.pairs,
            "height": h,
            "width": w,
            "dtype": options.flow_dtype,
            "scale": scale,
            "homography_offset": h_off,
            "homography_nbytes": h_nb,
            "homography_xxh3_64": h_digest,
            "score": [float(np.float32(x)) for x in flow.scores],
        }
    return out
