from __future__ import annotations

import functools
import json
import os
import signal
from pathlib import Path

import pytest


def _share_the_cores() -> None:
    """Under pytest-xdist (``make test``: 2 test processes), each process's torch and OpenCV
    pools get their share of the cores, not one thread per core each: oversubscribed, OpenMP's
    spinning threads cost the suite half its time (6m30 against 4m20 on 2 cores, 10m26 of CPU
    against 5m50). Set before torch is imported, so the training subprocesses tests start
    inherit it; a value the caller set is kept."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "0") or 0)
    if workers < 1:
        return
    share = str(max(1, len(os.sched_getaffinity(0)) // workers))
    for var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ.setdefault(var, share)


_share_the_cores()

from _media import make_class_folder  # noqa: E402 (after the thread shares are set)

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
SHARED_VIDEOS = SHARED / "videos"
SHARED_RAWFRAMES = SHARED / "rawframes" / "imgs"


@pytest.fixture(scope="session")
def shared_videos() -> Path:
    if not (SHARED_VIDEOS / "truth.json").exists():
        pytest.skip(f"real test videos not found at {SHARED_VIDEOS} (a checkout without ../shared)")
    return SHARED_VIDEOS


@pytest.fixture(scope="session")
def truth(shared_videos) -> dict:
    return json.loads((shared_videos / "truth.json").read_text())


@pytest.fixture(scope="session")
def rawframes_dir() -> Path:
    if not SHARED_RAWFRAMES.exists():
        pytest.skip(f"real frame folder not found at {SHARED_RAWFRAMES}")
    return SHARED_RAWFRAMES


@pytest.fixture(scope="session")
def class_folder(tmp_path_factory) -> Path:
    """root/<label>/<video>.mp4: 3 classes x 2 videos, 20-23 frames, 64x48 at 20 fps."""
    return make_class_folder(tmp_path_factory.mktemp("classes") / "data")


#: test parameters that name a decoder backend
_DECODER_PARAMS = ("backend", "decoder", "name")


@functools.cache
def _decoder_unavailable(name: str) -> str | None:
    """Why decoder ``name`` cannot run on this machine (None: it can, or it is no decoder)."""
    from hyperframes._core._errors import ConfigError
    from hyperframes.decode import create_decoder, list_decoders

    if name not in list_decoders():
        return None
    try:
        create_decoder(name)
    except ConfigError as e:
        return str(e)
    return None


#: the longest files (measured with --durations), run first: `--dist loadfile` hands out whole
#: files in collection order, and a long file left for the end keeps one worker busy alone
LONGEST_FIRST = (
    "test_train_demo.py",
    "test_build_ray.py",
    "test_examples.py",
    "test_masked_video.py",
    "test_demo.py",
    "test_annotation_rows.py",
    "test_plan.py",
    "test_train_run.py",
    "test_s3.py",
    "test_train_elastic.py",
)


def _longest_first(item) -> int:
    name = item.path.name
    return LONGEST_FIRST.index(name) if name in LONGEST_FIRST else len(LONGEST_FIRST)


def pytest_collection_modifyitems(config, items):
    """A test parametrised over a decoder that cannot load here (torchcodec without the
    system's FFmpeg libraries) is skipped with the decoder's own reason; CI installs FFmpeg
    (`make system-deps`), so there every backend runs. The longest files go first
    (:data:`LONGEST_FIRST`; a stable sort, each file's own order kept)."""
    items.sort(key=_longest_first)
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        for key in _DECODER_PARAMS:
            value = params.get(key)
            why = _decoder_unavailable(value) if isinstance(value, str) else None
            if why:
                item.add_marker(pytest.mark.skip(reason=why))
                break


@pytest.fixture(scope="session", autouse=True)
def _sigint_raises_keyboard_interrupt():
    """The suite's signal tests test Python's Ctrl-C handler: under `nohup make test &` the
    shell starts the run with SIGINT ignored, which this process and its children inherit,
    so the handler is set here (children started from here get the default action back)."""
    before = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    if before is not None:  # None: a handler set outside Python, left as the run found it
        signal.signal(signal.SIGINT, before)


@pytest.fixture(autouse=True)
def _no_progress_noise(monkeypatch):
    monkeypatch.setenv("TQDM_DISABLE", os.environ.get("TQDM_DISABLE", "1"))


@pytest.fixture(scope="session")
def s3_server(tmp_path_factory):
    """A real S3 server (SeaweedFS, see tests/_s3server.py) on 127.0.0.1 for the session, with
    a bucket; the AWS_* environment of the test process (and its subprocesses) points at it."""
    from _s3server import BUCKET, SECRET_KEY, seaweed_s3

    with seaweed_s3(tmp_path_factory.mktemp("seaweedfs")) as endpoint:
        yield {"endpoint": endpoint, "bucket": BUCKET, "secret": SECRET_KEY}


@pytest.fixture
def s3_url(s3_server, request, monkeypatch, tmp_path) -> str:
    """A fresh URL under the test bucket for one test (staging folders under tmp_path)."""
    import uuid

    monkeypatch.setenv("HYPERFRAMES_CACHE", str(tmp_path / "hf-cache"))
    return f"s3://{s3_server['bucket']}/{request.node.name[:40]}-{uuid.uuid4().hex[:8]}"


@pytest.fixture(scope="session")
def tiny_motion_store(tmp_path_factory) -> Path:
    """A store of 3 motion classes x 3 videos (12 frames, 32x32, stored at their size), with
    no recorded split (the generated one: 6 train / 3 val): for the integrations' tests."""
    from hyperframes.build import BuildOptions, build_store
    from hyperframes.demo import make_motion_dataset

    base = tmp_path_factory.mktemp("tiny_motion")
    make_motion_dataset(
        base / "videos",
        classes=("left", "right", "up"),
        videos_per_class=3,
        frames=12,
        size=32,
        seed=1,
    )
    build_store(base / "videos", base / "store", BuildOptions(size="none"), progress=False)
    return base / "store"
