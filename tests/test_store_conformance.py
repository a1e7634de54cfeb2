"""The build pipeline end to end on real videos: ``--size none --codec raw`` stores exactly the
frames FFmpeg decodes (count, timestamps, pixels), with every installed decoder backend."""

from __future__ import annotations

import math
import shutil

import numpy as np
import pytest

from hyperframes import ConfigError
from hyperframes.build import BuildOptions, build_store
from hyperframes.decode import create_decoder, list_decoders
from hyperframes.store import open_store

BACKENDS = list_decoders(reads="video")
OFF_BY_ONE = ("test.mp4", "test.avi", "part_0.mp4")
# what a backend cannot do, said in its failure message (see test_decode_conformance.py)
CANNOT = {
    ("decord", "av1_video.mkv"): "no decoder for av1",
    ("opencv", "av1_video.mkv"): "cannot decode av1",
    ("decord", "nasa_13013.mp4"): "cannot choose a video stream",
}


@pytest.fixture(scope="module", params=BACKENDS)
def built(request, shared_videos, tmp_path_factory):
    backend = request.param
    try:
        create_decoder(backend)
    except ConfigError as e:
        pytest.skip(f"decoder {backend!r} is not installed: {e}")
    data = tmp_path_factory.mktemp(f"conf-{backend}") / "videos"
    data.mkdir()
    for f in shared_videos.iterdir():
        if f.suffix in (".mp4", ".avi", ".mkv"):
            shutil.copy(f, data / f.name)
    out = data.parent / "store"
    report = build_store(
        data,
        out,
        BuildOptions(size="none", codec="raw", decoder=backend, stream=0),
        progress=False,
    )
    failed = {f["path"].rsplit("/", 1)[-1]: f["error"] for f in report.failed}
    return backend, open_store(out), failed


def _video(built, truth, name):
    backend, store, failed = built
    if name in failed:
        words = CANNOT.get((backend, name))
        assert words and words in failed[name], failed[name]
        pytest.skip(f"{backend} cannot decode {name}: {failed[name]}")
    (rec,) = [v for v in store.videos if v.path.endswith("/" + name)]
    return store, rec, truth[name]


@pytest.mark.parametrize(
    "name",
    sorted(
        ["test.mp4", "test.avi", "part_0.mp4", "nasa_13013.mp4", "av1_video.mkv", "h265_video.mp4"]
    ),
)
def test_count_timestamps_and_pixels(built, truth, shared_videos, name):
    store, rec, t = _video(built, truth, name)
    assert rec.num_frames == rec.num_frames_decoded == t["decoded_frames"]
    finite = [i for i, p in enumerate(t["pts_seconds"]) if not math.isnan(p)]
    np.testing.assert_allclose(
        rec.pts_seconds[finite], np.asarray(t["pts_seconds"])[finite], atol=1e-3
    )
    assert rec.shape == (3, t["height"], t["width"])
    for k in t["reference_frames"]:
        ref = np.load(shared_videos / f"{name}.frame{k:06d}.npy").astype(np.float32)
        got = store.read_numpy(rec, [k])[0].transpose(1, 2, 0)
        assert np.abs(got - ref).mean() < 1.0, (name, k)


@pytest.mark.parametrize("name", OFF_BY_ONE)
def test_the_check_catches_an_off_by_one_frame(built, truth, shared_videos, name):
    store, rec, t = _video(built, truth, name)
    mid = t["reference_frames"][1]
    ref = np.load(shared_videos / f"{name}.frame{mid:06d}.npy").astype(np.float32)
    neighbour = store.read_numpy(rec, [mid + 1])[0].transpose(1, 2, 0)
    assert np.abs(neighbour - ref).mean() >= 1.0


def test_best_stream_is_chosen_by_default(shared_videos, tmp_path):
    """nasa_13013.mp4 holds several video streams; the widest is not v:0."""
    build_store(
        shared_videos / "nasa_13013.mp4", tmp_path / "s", BuildOptions(size="none"), progress=False
    )
    rec = open_store(tmp_path / "s").videos[0]
    assert rec.stream != 0 and rec.shape[1:] == (270, 480)
