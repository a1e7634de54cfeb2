from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _media import make_class_folder

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
