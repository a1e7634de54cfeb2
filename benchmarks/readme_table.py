"""Fill the README's performance table from benchmarks/results/*.json (run after the benchmarks)."""

from __future__ import annotations

import json
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RES = ROOT / "benchmarks" / "results"


def load(name: str) -> dict:
    return json.loads((RES / f"{name}.json").read_text())


def main() -> None:
    read, build, opened, pred = load("read"), load("build"), load("open"), load("predict")
    rows, t = read["rows"], read["targets"]
    lw = read["loader_windows_per_s"]
    sizes = build["store_size_by_codec"]
    tsn = {r["mode"]: r for r in pred["rows"] if r["model"] == "tsn_resnet18"}
    values = {
        "RAW_MEMCPY": f"{t['raw_vs_memcpy']['value']:.2f}x",
        "RAW_DEC": f"{t['raw_vs_fastest_decoder']['value']:.0f}x",
        "JPEG_DEC": f"{t['jpeg_vs_fastest_decoder']['value']:.0f}x",
        "JPEG_SIZE": f"{t['jpeg_store_over_source_bytes_at_most']['value']:.2f}x",
        "LOADER": f"{t['loader_2_workers_vs_main_process']['value']:.2f}x "
        f"({lw['workers_2_threads']:.0f} vs {lw['main_process']:.0f} windows/s; worker "
        f"processes {lw['workers_2_processes']:.0f})",
        "BUILD": f"{build['build_over_decode']:.2f}x ({build['build_seconds']:.1f} s vs "
        f"{build['decode_only_seconds']:.1f} s)",
        "SIZES": ", ".join(
            f"{sizes[c]['ratio_to_source']:.2f}x" for c in ("raw", "lz4", "zstd", "jpeg")
        ),
        "OPEN": f"{opened['open_seconds_median']:.2f} s",
        "PRED": f"{tsn['reuse']['frames_per_second']:.0f} vs {tsn['naive']['frames_per_second']:.0f} "
        f"frames/s ({tsn['reuse']['speedup_vs_naive']:.1f}x; re-decoding every window: "
        f"{tsn['redecode']['frames_per_second']:.0f})",
        "STORE_ROWS": ", ".join(
            f"{k.split(':')[1]} {v['windows_per_s']:.0f}"
            for k, v in rows.items()
            if k.startswith("store:")
        )
        + f" (memcpy {rows['memcpy']['windows_per_s']:.0f})",
        "DEC_ROWS": ", ".join(
            f"{k.split(':')[1]} {v['windows_per_s']:.1f}"
            for k, v in rows.items()
            if k.startswith("decode:") and "windows_per_s" in v
        )
        + " windows/s",
    }
    readme = (ROOT / "README.md").read_text()
    start = readme.index("## Performance")
    end = readme.index("## Development")
    section = readme[start:end]
    for key, value in values.items():
        section = re.sub(rf"\b{key}\b", value, section)
    (ROOT / "README.md").write_text(readme[:start] + section + readme[end:])
    print(section)


if __name__ == "__main__":
    main()
