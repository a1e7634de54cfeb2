"""A Hugging Face ``datasets`` dataset in: video paths + a ClassLabel, saved with
``save_to_disk``, built into a store whose classes are the ClassLabel's, in its order.

    pip install 'hyperframes-video[hf]'
    python examples/huggingface_dataset.py videos/ work/

``videos/`` holds one folder per class (``videos/walk/a.mp4`` ...). With a dataset of your
own, skip the first step: ``hyperframes build SAVED --root VIDEOS --out STORE`` reads it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import datasets

import hyperframes
from hyperframes.build import BuildOptions, build_store


def main(argv: list[str] | None = None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("videos", type=Path, help="a folder of class folders of videos")
    p.add_argument("work", type=Path, help="where the saved dataset and the store go")
    p.add_argument("--size", default="128", help="stored short side (none: as decoded)")
    args = p.parse_args(argv)

    # 1. a dataset as a Hugging Face user has one: a string column of paths (relative to the
    #    videos' folder) and a ClassLabel column
    files = sorted(f for f in args.videos.rglob("*") if f.suffix in (".mp4", ".mkv", ".webm"))
    names = sorted({f.parent.name for f in files})
    features = datasets.Features(
        {"video": datasets.Value("string"), "label": datasets.ClassLabel(names=names)}
    )
    table = {
        "video": [str(f.relative_to(args.videos)) for f in files],
        "label": [names.index(f.parent.name) for f in files],
    }
    saved = args.work / "hf_saved"
    datasets.Dataset.from_dict(table, features=features).save_to_disk(str(saved))

    # 2. the store: paths are read relative to root (the CLI: --root)
    report = build_store(
        saved, args.work / "store", BuildOptions(size=args.size), progress=False, root=args.videos
    )
    print(report.summary())

    # 3. windows of it
    ds = hyperframes.HyperframeDataset(args.work / "store", sampler="random", frames=4)
    h = ds[0]
    print(ds.classes, tuple(h.frames.shape), ds.classes[h.label])
    return ds


if __name__ == "__main__":
    main()
