"""Open a store folder and read frames from it: zero-copy memory maps for raw, chunk decoding
otherwise (:class:`Store`; its batched reads are in ``_batch``), and :func:`open_store`, which
opens every form of store (a folder, an HDF5 file, a store at a URL).

A store may come from elsewhere (copied, shared, downloaded), so opening checks it cannot reach
outside itself or return wrong frames silently: the manifest's shape, file names (plain names
inside the store), sizes, dtypes, every index file against the checksum the manifest records
for it (at every open: a label, an audio rate or a flow size edited in place is refused), and
every index row against the others and against the shard files' sizes (vectorised). The
sequence is ``_open.open_index``, shared with the HDF5 form; the folder's own steps are
``_folder.FolderIndex``. Payload bytes are not read at open; ``check="video"`` verifies each
video's payload checksum on its first read.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import xxhash

from .._core._errors import DataError, StoreError
from ..remote import frame_runs, read_ranges
from ._base import take
from ._batch import BatchReads, scratch_array
from ._folder import FolderIndex, LocalFolder
from ._open import Check, check_option
from ._table_checks import ALTERED
from ._tracks import TRACK_KINDS
from .format import SHARDS_DIR

__all__ = ["Store"]


class Store(BatchReads):
    """A built store. ``videos`` describes every video; ``read`` returns frames.

    ``check="video"``: each video's payload is verified against its checksum (recorded at
    build, format version 2) the first time it is read. Version-1 stores record none, and
    refuse the option: ``hyperframes verify`` checks them shard by shard.

    Tracks (a store built with ``--audio`` / ``--flow``): ``has_audio``, ``audio_info``,
    ``read_audio``, ``has_flow``, ``flow_info``, ``read_flow``, ``homographies``
    (:class:`~hyperframes.store._tracks.TrackMethods`).
    """

    path: Path  # (a URL, a str, for a store in object storage)

    def __init__(self, path: str | os.PathLike, *, check: Check = None, files=None):
        check_option(check)
        #: where the files are: a local folder, or (``_remote_store``) the objects at a URL
        self._files = files = LocalFolder(Path(path)) if files is None else files
        self.path = files.path
        src = FolderIndex(files)
        self._open_index(src, check)
        self._shard_names: list[str] = src.shard_names
        self._chunks = src.chunks
        self.codec_name: str = self.manifest["codec"]["name"]
        self._codec = src.codec
        #: the payload bytes: memory maps, or byte ranges of objects (``_source``)
        self._source = files.shards(self._shard_names, src.shard_bytes)
        self._geoms: dict[int, tuple[int, ...]] = {}
        self._views: dict[int, np.ndarray] = {}
        if check == "video":
            if "payload_xxh3_64" not in (self._videos.dtype.names or ()):
                raise StoreError(
                    f"{self.path}: check='video' needs per-video payload checksums, which a "
                    f"store of format version {self.manifest['format_version']} does not "
                    f"record (version 2 does); verify it shard by shard with `hyperframes "
                    f"verify {self.path}`, or rebuild it with this hyperframes"
                )
            self._verified = set()

    # -- metadata -------------------------------------------------------------------------
    def __repr__(self) -> str:
        return (
            f"Store({str(self.path)!r}, videos={len(self)}, frames={self.num_frames}, "
            f"codec={self.codec_name!r}, dtype={self.dtype})"
        )

    @property
    def shard_names(self) -> list[str]:
        """File names of the payload shards in ``shards/``; the index's ``shard`` column
        numbers them."""
        return list(self._shard_names)

    # -- raw access -----------------------------------------------------------------------
    def _track_bytes(self, kind: str, i: int, lo: int = 0, hi: int | None = None) -> np.ndarray:
        """Bytes ``lo .. hi`` (None: the end) of video ``i``'s track payload ``kind`` (checked
        at open to lie in its shard): a view of the shard's map, or one ranged read of a
        store at a URL."""
        key, off, nb, _ = TRACK_KINDS[kind]
        table = self._tracks.audio if key == "audio" else self._tracks.flow
        assert table is not None
        o, n = int(table[off][i]), int(table[nb][i])
        hi = n if hi is None else min(hi, n)
        return self._bytes(int(self._videos["shard"][i]), o + lo, max(hi - lo, 0))

    def _track_where(self, kind: str, i: int) -> str:
        return str(self._shard_file(int(self._videos["shard"][i])))

    def _shard_file(self, k: int) -> Path | str:
        return self._files.where(SHARDS_DIR, self._shard_names[k])

    def _shard(self, k: int) -> np.ndarray:
        return self._source.whole(k)

    def _bytes(self, k: int, off: int, nbytes: int) -> np.ndarray:
        """Bytes ``off .. off + nbytes`` of shard ``k``: a view of its map, or one ranged read."""
        buf, at = self._source.ranges(k, np.array([off]), np.array([nbytes]))
        return buf[int(at[0]) : int(at[0]) + nbytes]

    def payload_problem(self, video) -> str | None:
        """What is wrong with the video's payload bytes against the checksum taken at build
        (format version 2), or None when they match (``verify`` and ``convert`` ask this)."""
        i = self._video_id(video)
        shard, off, nbytes = self._geom(i)[:3]
        payload = self._bytes(shard, off, nbytes)
        # numpy's stubs give ndarray __buffer__ only for Python >= 3.12
        got = xxhash.xxh3_64_intdigest(memoryview(payload))  # type: ignore[arg-type]
        want = int(self._videos["payload_xxh3_64"][i])
        if got == want:
            return None
        return (
            f"{self._shard_file(shard)}: video {i} ({self.videos.paths[i]!r}): its payload, "
            f"bytes {off}..{off + nbytes}, has xxh3-64 {got:016x}, the index recorded "
            f"{want:016x} at build: the shard is damaged; rebuild the store or restore the file"
        )

    def video_problems(self, video) -> dict[str, str]:
        """What ``verify`` finds wrong with one video, by payload (``"frames"``, ``"audio"``,
        ``"flow"``, ``"homography"``): each payload read where the index says it lies and
        checked against the xxh3-64 taken at build (what ``check="video"`` checks on a first
        read; a version-1 store records none for frames), and each chunk's own header against
        the frames the index says it holds (a JPEG's size, a zstd frame's length; an lz4 chunk
        decoded: what a read would find decoding it). Empty when everything matches."""
        i = self._video_id(video)
        found = {}
        if "payload_xxh3_64" in (self._videos.dtype.names or ()):
            problem = self.payload_problem(i)
        else:
            problem = None
        if problem is None:
            problem = self._chunk_problem(i)
        if problem is not None:
            found["frames"] = problem
        for kind in self._tracks.kinds(i):
            problem = self._tracks.problem(kind, i)
            if problem is not None:
                found[kind] = problem
        return found

    def _chunk_problem(self, i: int) -> str | None:
        """The first of video ``i``'s chunks whose header does not describe the frames the
        index gives it (the codec's ``chunk_problem``), or None."""
        codec = self._codec
        shard, _, _, _, c, h, w, c0, k = self._geom(i)
        if codec is None or codec.chunk_problem is None or not k:
            return None
        rows = self._chunks[c0 : c0 + k]
        buf, offs = self._source.ranges(shard, rows["offset"], rows["nbytes"])
        for j, (at, nbytes, first, n) in enumerate(
            zip(
                offs.tolist(),
                rows["nbytes"].tolist(),
                rows["first_frame"].tolist(),
                rows["num_frames"].tolist(),
            )
        ):
            what = codec.chunk_problem(buf[at : at + nbytes], (n, c, h, w), self.dtype)
            if what is not None:
                return (
                    f"{self._shard_file(shard)}: video {i} ({self.videos.paths[i]!r}): its "
                    f"chunk of frames {first}..{first + n} (row {c0 + j} of the chunk table) "
                    f"{what}; {ALTERED}"
                )
        return None

    def _verify_payload(self, i: int) -> None:
        """``check="video"``, on a video's first read. Verified ids are remembered; two threads
        racing on one video may both verify it (harmless)."""
        problem = self.payload_problem(i)
        if problem is not None:
            raise StoreError(problem)
        assert self._verified is not None  # only called with check="video"
        self._verified.add(i)

    def _geom(self, i: int) -> tuple[int, ...]:
        """(shard, offset, nbytes, F, C, H, W, chunk_start, num_chunks) of video ``i``, cached
        as plain ints."""
        g = self._geoms.get(i)
        if g is None:
            r = self._videos[i]
            g = tuple(int(r[k]) for k in _GEOMETRY)
            self._geoms[i] = g
        return g

    def frames_view(self, video) -> np.ndarray:
        """Zero-copy ``(F, C, H, W)`` view of a video in a raw store (read-only memory map)."""
        if self._codec is not None:
            raise StoreError(
                f"frames_view needs a raw store; {self.path} uses codec {self.codec_name!r}"
            )
        i = self._video_id(video)
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
        view = self._views.get(i)
        if view is None:
            shard, off, nbytes, *shape = self._geom(i)[:7]
            view = self._bytes(shard, off, nbytes).view(self.dtype).reshape(shape)
            self._views[i] = view
        return view

    def _frame_shape(self, i: int) -> tuple[int, ...]:
        return self._geom(i)[4:7]

    # -- reads ----------------------------------------------------------------------------
    def _check_indices(self, i: int, idx: np.ndarray) -> np.ndarray:
        n = self._geom(i)[3]
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            bad = idx[(idx < 0) | (idx >= n)][0]
            raise DataError(
                f"frame index {bad} is out of range for video {i} ({self.videos.paths[i]}), "
                f"which has {n} frames"
            )
        return idx

    def _read_into(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        """Frames ``idx`` (checked) of video ``i`` into ``out`` (its shape and dtype checked)."""
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
        if self._codec is None:
            if self._source.is_local:
                take(self.frames_view(i), idx, out)
            else:
                self._read_raw_runs(i, idx, out)
        elif self._codec.decode_to_address is not None and out.flags.c_contiguous:
            self._read_batch_at([i], idx[None], out[None])
        else:
            try:
                self._read_chunks(i, idx, out)
            except ValueError as e:  # the codec's: a chunk that is not what the index says
                raise self._undecodable(i, e) from None

    def _undecodable(self, i: int, what: object) -> StoreError:
        """The error of video ``i``'s chunk that does not decode to the frames the index
        describes (``what``: the codec's words)."""
        return StoreError(
            f"{self._shard_file(self._geom(i)[0])}: video {i} ({self.videos.paths[i]!r}): "
            f"{what}: its payload does not hold the frames the index describes; {ALTERED}"
        )

    def _read_chunks(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        """Decode the chunks holding frames ``idx`` of video ``i`` into ``out``.

        No array is allocated per chunk and no copy holds the GIL: a chunk whose frames are all
        wanted, in order, is decoded straight into ``out``; one partly wanted is decoded into
        a per-thread scratch array and its run of frames copied (contiguous numpy copies
        release the GIL; the fancy-indexed copy the reader used before did not)."""
        shard, c0, k = self._geom(i)[0], self._geom(i)[7], self._geom(i)[8]
        codec = self._codec
        assert codec is not None  # _read_into reads a raw store itself
        if not len(idx):
            return
        if codec.chunk_frames == 1:  # one frame per chunk (jpeg): chunk j is frame j
            rows = self._chunks[c0 + idx]
            buf, offs = self._source.ranges(shard, rows["offset"], rows["nbytes"])
            datas = [buf[o : o + n] for o, n in zip(offs.tolist(), rows["nbytes"].tolist())]
            if codec.decode_frames is not None:
                codec.decode_frames(datas, out)
            else:
                for j, data in enumerate(datas):
                    codec.decode_into(data, out[j : j + 1])
            return
        chunks = self._chunks[c0 : c0 + k]
        which = np.searchsorted(chunks["first_frame"], idx, side="right") - 1
        cuts = np.flatnonzero(np.diff(which)) + 1
        starts, ends = [0, *cuts.tolist()], [*cuts.tolist(), len(idx)]
        rows = chunks[which[starts]]
        buf, offs = self._source.ranges(shard, rows["offset"], rows["nbytes"])
        for p0, p1, off, nbytes, first, n in zip(
            starts,
            ends,
            offs.tolist(),
            rows["nbytes"].tolist(),
            rows["first_frame"].tolist(),
            rows["num_frames"].tolist(),
        ):
            data = buf[off : off + nbytes]
            local = idx[p0:p1] - first
            a, m = int(local[0]), p1 - p0
            run = int(local[-1]) - a == m - 1 and (m < 3 or bool(np.all(np.diff(local) == 1)))
            if run and a == 0 and m == n:  # the whole chunk, in order: straight into out
                codec.decode_into(data, out[p0:p1])
                continue
            block = scratch_array((n, *out.shape[1:]), out.dtype)
            codec.decode_into(data, block)
            if run:
                out[p0:p1] = block[a : a + m]
            else:
                np.take(block, local, axis=0, out=out[p0:p1])

    def encoded_frames(self, video, frame_indices) -> list[np.ndarray]:
        """The stored JPEG of each of ``frame_indices`` (read-only views of the memory-mapped
        shard, nothing decoded): for decoding elsewhere, e.g. a batch at once on a GPU
        (``HyperframeDataset(decode_device="cuda")``). Only a jpeg store keeps frames apart."""
        if self.codec_name != "jpeg":
            raise StoreError(
                f"encoded_frames needs a jpeg store (one JPEG per frame); {self.path} uses codec "
                f"{self.codec_name!r}"
            )
        i = self._video_id(video)
        idx = self._check_indices(i, np.asarray(frame_indices, dtype=np.int64).reshape(-1))
        return self.frame_chunks(i, idx)

    def frame_chunks(self, i: int, idx: np.ndarray) -> list[np.ndarray]:
        """The chunks of frames ``idx`` (checked) of video ``i`` of a codec that keeps one
        frame per chunk (jpeg, yuv420), as read-only views (or the ranges read from a URL),
        the video's payload verified first under ``check="video"``."""
        if self._verified is not None and i not in self._verified:
            self._verify_payload(i)
        rows = self._chunks[self._geom(i)[7] + idx]
        buf, offs = self._source.ranges(self._geom(i)[0], rows["offset"], rows["nbytes"])
        return [buf[o : o + n] for o, n in zip(offs.tolist(), rows["nbytes"].tolist())]

    def _ranges(self, geom, idx: np.ndarray):
        c, h, w = geom[4:7]
        fb = c * h * w * self.dtype.itemsize
        return read_ranges(geom, self._chunks, idx, frame_bytes=fb, chunked=self._codec is not None)

    def _read_raw_runs(self, i: int, idx: np.ndarray, out: np.ndarray) -> None:
        """A raw store at a URL: one byte range per run of consecutive frames wanted."""
        shard, off, _, _, c, h, w = self._geom(i)[:7]
        if not len(idx):
            return
        fb = c * h * w * self.dtype.itemsize
        frames, inverse, first, run, lengths = frame_runs(idx)
        buf, at = self._source.ranges(shard, off + frames[first] * fb, lengths * fb)
        pos = (at[run] + (frames - frames[first][run]) * fb) // fb
        stack = buf[: len(buf) // fb * fb].view(self.dtype).reshape(-1, c, h, w)
        np.take(stack, pos[inverse], axis=0, out=out)

    def close(self) -> None:
        self._views.clear()
        self._source.close()


#: the index columns ``Store._geom`` caches per video, in this order
_GEOMETRY = (
    "shard",
    "offset",
    "nbytes",
    "num_frames",
    "channels",
    "height",
    "width",
    "chunk_start",
    "num_chunks",
)
