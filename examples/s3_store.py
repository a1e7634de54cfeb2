"""A store on S3: built straight to an s3:// URL, read from there through a node cache.

    pip install 'hyperframes-video[s3]'
    export AWS_ACCESS_KEY_ID=... AWS_SECRET_ACCESS_KEY=... AWS_REGION=...
    # (an S3-compatible server: AWS_ENDPOINT_URL=http://host:port)
    python examples/s3_store.py videos/ s3://bucket/stores/demo --cache-dir /tmp/hf-cache

Credentials come only from the standard AWS environment and config; they are never written
into the store. The build stages shards locally, uploads them and writes manifest.json last,
so a reader never sees half a store.
"""

from __future__ import annotations

import argparse

import hyperframes
from hyperframes.build import BuildOptions, build_store


def main(argv: list[str] | None = None) -> list[tuple]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("videos", help="a folder of class folders of videos")
    p.add_argument("url", help="where the store goes: s3://bucket/prefix")
    p.add_argument("--cache-dir", default=None, help="a node cache shared by this machine")
    p.add_argument("--cache-limit", type=int, default=10**9, help="the cache's bytes")
    p.add_argument("--size", default="128", help="stored short side (none: as decoded)")
    p.add_argument("--batches", type=int, default=2, help="batches to read back")
    args = p.parse_args(argv)

    report = build_store(
        args.videos, args.url, BuildOptions(codec="lz4", size=args.size), progress=False
    )
    print(report.summary())

    store = hyperframes.open_store(args.url, cache_dir=args.cache_dir, cache_limit=args.cache_limit)
    print(f"{len(store.videos)} videos at {args.url}")
    ds = hyperframes.HyperframeDataset(store, sampler="random", frames=4, seed=0)
    # the thread loader hands the store the next batches' plans: their byte ranges are
    # fetched in the background while the current batch trains
    dl = hyperframes.loader(ds, batch_size=2, drop_last=False)
    shapes = []
    for i, batch in enumerate(dl):
        if i == args.batches:
            break
        shapes.append(tuple(batch.frames.shape))
        print(f"batch {i}: frames {shapes[-1]}, labels {batch.labels.tolist()}")
    return shapes


if __name__ == "__main__":
    main()
