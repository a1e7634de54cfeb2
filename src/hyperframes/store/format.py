"""The on-disk layout of a hyperframes store, described in one place.

A store is a folder::

    STORE/
      manifest.json              written last and atomically: a store without it is incomplete
      build.json                 the build parameters, written when a build starts (resume check)
      .lock                      held (flock) by the process building the store; names the holder
      shards/RUN-WORKER-SEQ.bin  payload: per video, its frames back to back (see below)
      shards/RUN-WORKER-SEQ.jsonl  one JSON record per video stored in that shard
      shards/*.part              a shard being written (journal); recovered by the next build
      index/videos.npy           one row per video (``VIDEO_DTYPE``), in source order
      index/frames.npy           one row per stored frame (``FRAME_DTYPE``): pts and source index
      index/chunks.npy           one row per compressed chunk (``CHUNK_DTYPE``)
      index/strings.json         paths, class names, splits, shard names
      index/change_score.npy     float32 per stored frame, aligned with frames.npy: the
                                 ``keyframes`` sampler's change score (sampling.change_score)
                                 of the frames as stored, before compression; optional (a
                                 store assembled from older journals has none)
      index/details.jsonl        one JSON object per video, in index order: what the source
                                 was (``DETAIL_KEYS``: codec, source_size [W, H], rotation,
                                 color_matrix, color_range; null where unknown). For people
                                 and ``info``; readers do not need it
      index/segments.npy         optional: one row per labelled time range of a video
                                 (``SEGMENT_DTYPE``), rows of a video together, videos in
                                 index order; its classes are rows ``label_start ..
                                 label_start + num_labels`` of segment_labels.npy
      index/segment_labels.npy   optional: int32 class ids of the segments, back to back
      index/video_labels.npy     optional: one row per (video, class) of a multi-label video
                                 (``VIDEO_LABEL_DTYPE``), videos in index order; such a video's
                                 ``label_id`` is its one label or -1
      index/signatures.npy       optional: uint64 (num_videos, ``SIGNATURE_WIDTH``): each
                                 video's perceptual signature, mirror-blind pHashes of stored
                                 frames at fixed fractions of its duration, of the whole frame
                                 and of parts of it (0: no hash); ``hyperframes._core.
                                 _signature`` says how. Stores built before the parts were
                                 hashed hold (num_videos, ``SIGNATURE_FRAMES``) whole-frame
                                 hashes of an older kind: read, and recomputed from the frames
                                 by the leakage check
      index/boxes.npy            optional (build --boxes): one row per box of a stored frame
                                 (``BOX_DTYPE``), in (video, frame) order; a box annotated
                                 at time t is on the stored frame whose pts is nearest t;
                                 its class names are the manifest's ``box_classes``
      index/audio.npy            optional (build --audio): one row per video (``AUDIO_DTYPE``):
                                 where its audio lies in its shard, or has_audio 0
      index/flow.npy             optional (build --flow): one row per video (``FLOW_DTYPE``):
                                 where its flow and homographies lie in its shard
      index/flow_score.npy       optional (build --flow): float32 per stored frame, aligned
                                 with frames.npy: frame k's motion score, the mean length in
                                 stored-frame pixels of the flow k-1 -> k (``_flow.
                                 motion_score``, before quantising), 0 for frame 0; what the
                                 ``keyframes`` sampler ranks by when present. A store built
                                 before it was recorded has none (the change score serves)
      failures.jsonl             optional: every input the build did not store, a line each
                                 (``{"path", "error"}``, ``"target"`` beside a symlink's
                                 path); the manifest lists the first 1,000 (``failed``) and
                                 counts them all (``failed_count``). Not part of the store's
                                 checked files: not uploaded to a URL, not in an HDF5 file
      .NAME.PID.tmp              a file being written atomically (removed on success; stale
                                 ones, of killed processes, are removed by the next writer)

``manifest.json`` holds: ``format``, ``format_version``, the build (options, decoder and its
version, codec and its parameters, dtype, layout, normalisation), ``shards`` and ``index``
(each file's name, bytes and ``checksum_algorithm`` checksum; every reader checks each index
file against its checksum at every open and refuses a manifest without them, which
``hyperframes verify --resign`` records), ``num_videos``,
``num_frames``, ``store_bytes``, ``source_bytes``, ``classes``, and the inputs not stored:
``failed`` (the first 1,000; ``failed_count``, optional, counts them all: a manifest
without it lists every one), ``damaged`` (stored with decoder errors) and ``skipped``; ``notes``
(optional): ``{"path", "row", "note"}`` for each segment the build clamped to its video's end
or dropped (it starts after the end); and ``gaps`` (optional): ``{"path", "count", "seconds",
"max_gap", "first"}`` for each video whose frames lie further apart than the build's
``max_gap`` somewhere (``first``: the first few gaps as ``[pts_before, pts_after]``; resampling
did not fill them). The journal record of such a video has the same object as
``timestamp_gaps``.

Segments and video labels come from the annotation (``Source.segments``, ``Source.labels``)
at assembly, times in the source's own seconds (the stored frames' pts); the optional files
are written only when some video has any, so a store without them reads as before (and a
reader that does not know them ignores them: the format version stays 2). A segment holds the
stored frames whose pts ``t`` satisfy ``start_seconds <= t < end_seconds``.

A row of ``videos.npy`` is built from a :class:`VideoRow` (one typed field per column, packed
by name with :func:`pack_video_row`), never from a positional tuple.

Payload per video, starting at a 4096-byte aligned offset:

- ``raw``: the array ``[F, C, H, W]`` (uint8, or float16 when normalised), C-order, so a
  memory map gives zero-copy views.
- ``lz4`` / ``zstd``: chunks of ``chunk_frames`` consecutive frames, each compressed on its own;
  ``chunks.npy`` says where each chunk lies.
- ``jpeg``: one JPEG (RGB, HWC) per frame; one chunk row per frame.

Version 2 adds per video ``payload_xxh3_64`` (checksum of its payload bytes, used to decide
what a resumed build keeps and by ``open_store(..., check="video")``) and ``decode_errors``
(error signals the decoder reported: a damaged source). Version 1 stores stay readable.

Tracks (optional, format version 2 still: a reader that does not know them ignores them).
A video's track payloads follow its frames in the same shard, each at a 4096-byte aligned
offset with its own xxh3-64 (of exactly its bytes), and its journal record lists them
(``"audio"`` / ``"flow"`` objects with offset, nbytes, xxh3_64 and the parameters below), so
a resumed build keeps them or decodes the video again exactly as it does its frames. The
manifest's ``build`` records the parameters (``audio``, ``audio_rate``, ``audio_channels``;
``flow``, ``flow_size``, ``flow_dtype``); a build resumed with others is refused.

- audio (``build --audio``): the source's first audio stream, decoded once and resampled
  (``hyperframes.decode.stream_audio``) to ``sample_rate`` and ``channels`` (1 mono, 2
  stereo), only over the stored frames' span (first pts to one frame past the last) with
  ``AUDIO_MARGIN_SECONDS`` (0.5 s) either side: float32 ``[C, N]``, C-order (planar). Damage
  the audio decoder reports is counted in the video's ``decode_errors`` (signals ``audio_*``
  in the manifest's ``damaged``), the audio stored as far as it decodes. Sample n is at ``start_seconds + n /
  sample_rate`` in the source's seconds (the clock of ``frames.npy``'s pts_seconds). A video
  without an audio stream has the row ``has_audio = 0`` (offset, nbytes, counts 0).
- flow (``build --flow dis|farneback``, ``_flow`` says how it is computed): per pair of
  consecutive stored frames (k -> k+1), ``[F-1, 2, h, w]`` of float16 (dtype code 0), or
  int8 (code 1) with the video's ``scale`` (value = int8 * scale); component 0 = dx, 1 = dy,
  in pixels of the flow size h x w. Then its homographies, float32 ``[F-1, 3, 3]``: H_k maps
  a pixel (x, y, 1) of stored frame k+1 to frame k (stored frame pixels, pixel centres at
  integers).

The reader refuses a ``format_version`` it does not know.
"""

from __future__ import annotations

import dataclasses

import numpy as np

FORMAT_NAME = "hyperframes-store"
FORMAT_VERSION = 2
#: versions this reader opens (version 1 stores lack the per-video checksum and error columns)
READABLE_VERSIONS = (1, 2)
ALIGNMENT = 4096
CHECKSUM_ALGORITHM = "xxh3_128"

MANIFEST = "manifest.json"
BUILD_PARAMS = "build.json"
LOCK = ".lock"
#: every failed input of the last build, a JSON line each (the manifest lists the first)
FAILURES_FILE = "failures.jsonl"
SHARDS_DIR = "shards"
INDEX_DIR = "index"
#: at a URL: ``generations/G/shards/...`` and ``generations/G/index/...``, G the manifest's
#: ``generation`` (16 hex digits, a hash of the build's own manifest), so a rebuild writes new
#: object names and replaces only ``manifest.json``; a manifest without ``generation`` (a URL
#: published before, or by a Ray build) has ``shards/`` and ``index/`` at the top
GENERATIONS_DIR = "generations"
VIDEOS_FILE = "videos.npy"
FRAMES_FILE = "frames.npy"
CHUNKS_FILE = "chunks.npy"
STRINGS_FILE = "strings.json"
CHANGE_FILE = "change_score.npy"
DETAILS_FILE = "details.jsonl"
SEGMENTS_FILE = "segments.npy"
SEGMENT_LABELS_FILE = "segment_labels.npy"
VIDEO_LABELS_FILE = "video_labels.npy"
SIGNATURES_FILE = "signatures.npy"
BOXES_FILE = "boxes.npy"
AUDIO_FILE = "audio.npy"
FLOW_FILE = "flow.npy"
FLOW_SCORE_FILE = "flow_score.npy"
FLOW_SCORE_FILE = "flow_score.npy"
#: keys of each ``details.jsonl`` line
DETAIL_KEYS = ("codec", "source_size", "rotation", "color_matrix", "color_range")

SHARD_SUFFIX = ".bin"
RECORDS_SUFFIX = ".jsonl"
PART_SUFFIX = ".part"

VIDEO_DTYPE = np.dtype(
    [
        ("shard", "<i4"),
        ("offset", "<i8"),  # byte offset of the video's payload in its shard
        ("nbytes", "<i8"),  # payload bytes (without alignment padding)
        ("num_frames", "<i8"),  # frames stored
        ("channels", "<i4"),
        ("height", "<i4"),
        ("width", "<i4"),
        ("fps", "<f8"),  # rate of the stored frames
        ("label_id", "<i4"),  # -1 when unlabelled
        ("split_id", "<i4"),  # -1 when no split
        ("frame_start", "<i8"),  # first row in frames.npy
        ("chunk_start", "<i8"),  # first row in chunks.npy (compressed codecs)
        ("num_chunks", "<i8"),
        ("num_frames_decoded", "<i8"),
        ("num_frames_from_header", "<i8"),  # -1 when the container does not say
        ("source_bytes", "<i8"),
        ("source_mtime_ns", "<i8"),
        ("stream", "<i4"),  # index among the source's video streams
    ]
)

#: per-video table of format version 1 (kept to read older stores)
VIDEO_DTYPE_V1 = VIDEO_DTYPE

VIDEO_DTYPE = np.dtype(
    [
        *VIDEO_DTYPE_V1.descr,
        ("payload_xxh3_64", "<u8"),  # xxh3-64 of the payload bytes [offset, offset + nbytes)
        ("decode_errors", "<i8"),  # error signals the decoder reported for this video
    ]
)

VIDEO_DTYPES = {1: VIDEO_DTYPE_V1, 2: VIDEO_DTYPE}

#: stored element types a reader accepts (anything else is refused at open)
ALLOWED_DTYPES = ("uint8", "float16")

FRAME_DTYPE = np.dtype([("pts_seconds", "<f8"), ("source_index", "<i8")])

SEGMENT_DTYPE = np.dtype(
    [
        ("video", "<i8"),  # row of videos.npy
        ("start_seconds", "<f8"),  # the source's seconds (the stored frames' pts)
        ("end_seconds", "<f8"),  # excluded: frames with start <= pts < end
        ("label_start", "<i8"),  # first row in segment_labels.npy
        ("num_labels", "<i8"),
    ]
)
SEGMENT_LABEL_DTYPE = np.dtype("<i4")  # class id (index into the store's classes)

VIDEO_LABEL_DTYPE = np.dtype([("video", "<i8"), ("label_id", "<i4")])
#: one row per box of a stored frame (``build --boxes``), rows in (video, frame) order
BOX_DTYPE = np.dtype(
    [
        ("video", "<i8"),  # row of videos.npy
        ("frame", "<i8"),  # the video's stored frame (0 .. num_frames - 1)
        ("x1", "<f4"),  # corners, normalised to [0, 1] of the frame's width and height
        ("y1", "<f4"),
        ("x2", "<f4"),
        ("y2", "<f4"),
        ("label_id", "<i4"),  # row of the manifest's box_classes
    ]
)

SIGNATURE_DTYPE = np.dtype("<u8")  # signatures.npy: (num_videos, SIGNATURE_FRAMES) of these

AUDIO_DTYPE = np.dtype(
    [
        ("has_audio", "u1"),  # 0: the source has no audio stream (the other columns are 0)
        ("shard", "<i4"),  # the video's own shard
        ("offset", "<i8"),
        ("nbytes", "<i8"),  # channels * num_samples * 4
        ("num_samples", "<i8"),
        ("sample_rate", "<i4"),
        ("channels", "<i4"),
        ("start_seconds", "<f8"),  # time of sample 0 in the source's seconds
        ("xxh3_64", "<u8"),
    ]
)

FLOW_DTYPE = np.dtype(
    [
        ("shard", "<i4"),  # the video's own shard
        ("offset", "<i8"),
        ("nbytes", "<i8"),  # num_pairs * 2 * height * width * itemsize
        ("num_pairs", "<i8"),  # num_frames - 1 (0 for a one-frame video)
        ("height", "<i4"),  # flow size
        ("width", "<i4"),
        ("dtype", "<i4"),  # FLOW_DTYPE_CODES
        ("scale", "<f4"),  # value = stored * scale (1 for float16)
        ("xxh3_64", "<u8"),
        ("homography_offset", "<i8"),
        ("homography_nbytes", "<i8"),  # num_pairs * 9 * 4
        ("homography_xxh3_64", "<u8"),
    ]
)
#: stored flow element type by its code in ``FLOW_DTYPE``'s dtype column
FLOW_DTYPE_CODES = {"float16": 0, "int8": 1}

CHUNK_DTYPE = np.dtype(
    [
        ("offset", "<i8"),  # absolute byte offset in the shard
        ("nbytes", "<i8"),
        ("first_frame", "<i8"),  # index of the chunk's first frame within its video
        ("num_frames", "<i8"),
    ]
)


@dataclasses.dataclass(frozen=True)
class VideoRow:
    """One row of ``videos.npy`` (``VIDEO_DTYPE``), field by field; see the dtype's comments."""

    shard: int
    offset: int
    nbytes: int
    num_frames: int
    channels: int
    height: int
    width: int
    fps: float
    label_id: int
    split_id: int
    frame_start: int
    chunk_start: int
    num_chunks: int
    num_frames_decoded: int
    num_frames_from_header: int
    source_bytes: int
    source_mtime_ns: int
    stream: int
    payload_xxh3_64: int
    decode_errors: int


def pack_video_row(row: VideoRow) -> tuple:
    """``row`` as a tuple in ``VIDEO_DTYPE``'s column order (assign it to a row of an array of
    that dtype). Packed by name: a column without a field, or a field without a column, is
    an error here, not a value shifted into its neighbour's column."""
    fields = {f.name for f in dataclasses.fields(row)}
    columns = VIDEO_DTYPE.names or ()  # a structured dtype: never None
    if fields != set(columns):
        raise ValueError(
            f"VideoRow fields {sorted(fields ^ set(columns))} do not match VIDEO_DTYPE's columns"
        )
    return tuple(getattr(row, name) for name in columns)


def align(offset: int) -> int:
    """Round ``offset`` up to the payload alignment."""
    return -(-offset // ALIGNMENT) * ALIGNMENT
