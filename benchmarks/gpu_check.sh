#!/usr/bin/env bash
# On a machine with a CUDA GPU: the GPU tests (memory="cuda", batch augmentation on the GPU,
# prefetch to the GPU on a side stream, training and validation through it, a jpeg store
# decoded by nvJPEG, the GPU cache and nvJPEG from a config), the training data-wait benchmark and the activation-checkpointing
# benchmark on the GPU, in under 6 minutes. Writes benchmarks/results/gpu.json (the benchmark's result plus the tests' summary).
# Run from the repository root: bash benchmarks/gpu_check.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
RESULTS=benchmarks/results
mkdir -p "$RESULTS"
"$PY" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else "no CUDA GPU here: gpu_check.sh needs one")'

# 1. the GPU tests (skipped without a GPU, so here they must pass, not skip)
set +e
timeout 150 "$PY" -m pytest -p no:cacheprovider -q -rs tests/test_gpu.py tests/test_gpu_cache_plan.py \
    tests/test_dataset.py::test_gpu_resident_mode \
    tests/test_batch_pipeline.py::test_prefetch_to_the_gpu_on_a_side_stream_gives_the_cpu_results \
    tests/test_prefetch_train.py 2>&1 | tee "$RESULTS/gpu_tests.log"
TESTS_RC=${PIPESTATUS[0]}
set -e

# 2. training's wait for data on the GPU: raw store, jpeg store, on-the-fly decoding
WORKERS=$("$PY" -c 'import os; print(min(8, os.cpu_count() or 1))')
timeout 240 "$PY" benchmarks/bench_train_wait.py --device cuda --steps 150 --warmup 20 \
    --workers "$WORKERS" --out gpu_train_wait

# 3. activation checkpointing on the GPU: peak memory and step time (checkpointing_cuda.json)
timeout 120 "$PY" benchmarks/bench_checkpointing.py --device cuda --steps 10

# 4. one file: the benchmark's result and the tests' outcome
"$PY" - "$TESTS_RC" <<'PY'
import json, sys, torch
from pathlib import Path
res = Path("benchmarks/results")
bench = json.loads((res / "gpu_train_wait.json").read_text())
log = (res / "gpu_tests.log").read_text().strip().splitlines()
out = {
    "benchmark": "gpu",
    "gpu": torch.cuda.get_device_name(0),
    "tests": {"exit_code": int(sys.argv[1]), "summary": log[-1] if log else ""},
    "train_wait": bench,
    "checkpointing": json.loads((res / "checkpointing_cuda.json").read_text()),
}
(res / "gpu.json").write_text(json.dumps(out, indent=1) + "\n")
(res / "gpu_train_wait.json").unlink()
print(json.dumps({k: out[k] for k in ("gpu", "tests")}, indent=1))
PY
exit "$TESTS_RC"
