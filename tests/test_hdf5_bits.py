"""An HDF5 store with one bit flipped anywhere is refused with a StoreError naming the file
(open, ``check="video"`` reads, ``verify``, ``info``) or read exactly as written: never a
traceback from h5py, never wrong pixels or index values served. A file written before the
index checksum opens with a one-line note, and ``verify --resign`` records what it lacks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _stores import unsign_h5
from hyperframes import StoreError
from hyperframes.build import BuildOptions, build_store, convert_to_hdf5
from hyperframes.demo import make_motion_dataset
from hyperframes.store import H5Store, describe_store, verify_store

#: seeded bit positions per file: half in the first 4 KiB (superblock, object headers, the
#: index's metadata), half anywhere
FLIPS = 20


@pytest.fixture(scope="module")
def h5_files(tmp_path_factory) -> dict[str, Path]:
    base = tmp_path_factory.mktemp("h5bits")
    make_motion_dataset(
        base / "v", classes=("left", "right"), videos_per_class=1, frames=6, size=16, seed=1
    )
    build_store(base / "v", base / "store", BuildOptions(size="none"), progress=False)
    return {
        c: convert_to_hdf5(base / "store", base / f"{c}.h5", compression=c, progress=False)
        for c in ("none", "lzf")
    }


def _everything(h5: Path) -> tuple:
    """What a ``check="video"`` reader serves: every frame, and the index's tables."""
    with H5Store(h5, check="video") as s:
        frames = [s.read_numpy(i, np.arange(s.videos[i].num_frames)) for i in range(len(s))]
        index = (s.index.videos.tobytes(), s.index.frames.tobytes(), s.videos.paths, s.classes)
        return [f.tobytes() for f in frames], index


@pytest.mark.parametrize("compression", ["none", "lzf"])
def test_a_flipped_bit_is_refused_naming_the_file_or_harmless(h5_files, tmp_path, compression):
    src = h5_files[compression]
    want = _everything(src)
    data = src.read_bytes()
    rng = np.random.default_rng(39)
    bits = [*rng.integers(0, 4096 * 8, FLIPS // 2), *rng.integers(0, len(data) * 8, FLIPS // 2)]
    refused = 0
    for bit in bits:
        h5 = tmp_path / f"{bit}.h5"
        flipped = bytearray(data)
        flipped[bit // 8] ^= 1 << (bit % 8)
        h5.write_bytes(bytes(flipped))
        try:
            got = _everything(h5)
        except StoreError as e:
            assert str(h5) in str(e), (bit, str(e))
            refused += 1
            problems = verify_store(h5)
            assert problems and all(str(h5) in p for p in problems), (bit, problems)
            continue
        assert got == want, f"bit {bit}: read differs from what was written"
        assert verify_store(h5) == [], bit
        with H5Store(h5) as s:
            describe_store(s)
    assert refused >= FLIPS // 4  # the sweep did reach the index and the frames


def test_a_file_without_checksums_opens_with_a_note_and_resign_records_them(
    h5_files, tmp_path, capfd
):
    h5 = Path(shutil.copyfile(h5_files["lzf"], tmp_path / "old.h5"))
    want = _everything(h5_files["lzf"])
    unsign_h5(h5, frames=True)
    capfd.readouterr()
    H5Store(h5).close()
    H5Store(h5).close()
    note = capfd.readouterr().err.splitlines()
    assert note == [
        f"hyperframes: note: {h5} records no checksum of its index or frames (written by an "
        "older hyperframes), so damage to it cannot be detected; `hyperframes verify --resign "
        f"{h5}` records them"
    ]
    assert f"`hyperframes verify --resign {h5}` records them" in verify_store(h5)[0]

    r = subprocess.run(
        [sys.executable, "-m", "hyperframes", "verify", "--resign", str(h5)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert f"signed  {h5}:/index/frames_xxh3_64 (2 videos)" in r.stdout
    assert f"{h5}: 2 checksum(s) recorded" in r.stdout
    assert verify_store(h5) == []
    assert _everything(h5) == want
    assert not list(tmp_path.glob(".*.tmp"))

    # signed, a changed index value is now refused
    import h5py

    with h5py.File(h5, "r+") as f:
        strings = json.loads(f["index/strings"][()])
        strings["classes"] = strings["classes"][::-1]
        f["index/strings"][()] = json.dumps(strings)
    with pytest.raises(StoreError, match=rf"{h5}: its index .* has xxh3-64 [0-9a-f]+, the file"):
        H5Store(h5)
    assert "the file recorded" in verify_store(h5)[0]
