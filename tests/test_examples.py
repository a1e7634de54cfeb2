"""The scripts in examples/ run as a user runs them (each one's ``main(argv)``, in this process)
on tiny generated data: a plain PyTorch loop and a Lightning module on a store, a Hugging Face
dataset built into a store, a store built to and read from S3 (the suite's SeaweedFS server),
a checkpoint exported to ONNX and run in ONNX Runtime by the recipe in its metadata (equal to
``hyperframes predict``), and a ``Predictor`` fed a stream frame by frame (the same windows)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import pytest
import yaml

from _stores import tiny_train_config
from hyperframes.cli import main as hyperframes

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def example(name: str):
    """examples/NAME.py as a module (its ``main`` is what ``python examples/NAME.py`` runs)."""
    spec = importlib.util.spec_from_file_location(f"example_{name}", EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_there_are_six_examples_each_with_a_usage_line():
    scripts = sorted(p.stem for p in EXAMPLES.glob("*.py"))
    assert scripts == [
        "huggingface_dataset",
        "lightning_module",
        "live_stream",
        "onnx_predict",
        "s3_store",
        "train_loop",
    ]
    for name in scripts:
        assert "python examples/" + name + ".py" in (EXAMPLES / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def videos(tiny_motion_store) -> Path:
    return tiny_motion_store.parent / "videos"


@pytest.fixture(scope="module")
def checkpoint(tiny_motion_store, tmp_path_factory) -> Path:
    """A one-epoch run on the tiny store, its eval crop 24 (what the export examples read)."""
    root = tmp_path_factory.mktemp("example_run")
    config = tiny_train_config(tiny_motion_store, epochs=1)
    config["data"]["augmentation"] = {"size": 24}
    (root / "c.yaml").write_text(yaml.safe_dump(config))
    assert hyperframes(["train", str(root / "c.yaml"), "--out", str(root / "run"), "--quiet"]) == 0
    return root / "run" / "best.pt"


def test_train_loop(tiny_motion_store, tmp_path, capsys):
    out = tmp_path / "w.pt"
    args = [str(tiny_motion_store), "--epochs", "1", "--frames", "4", "--size", "24"]
    loss = example("train_loop").main([*args, "--batch-size", "4", "--out", str(out)])
    assert math.isfinite(loss) and out.stat().st_size > 0
    assert "epoch 0: loss" in capsys.readouterr().out


@pytest.mark.filterwarnings("ignore::lightning.fabric.utilities.warnings.PossibleUserWarning")
@pytest.mark.filterwarnings("ignore:`isinstance.treespec, LeafSpec.` is deprecated")
def test_lightning_module(tiny_motion_store, tmp_path):
    pytest.importorskip("lightning", reason="lightning is an optional extra")
    args = [str(tiny_motion_store), "--epochs", "1", "--frames", "4", "--size", "24"]
    metrics = example("lightning_module").main([*args, "--out", str(tmp_path)])
    assert math.isfinite(metrics["train_loss"]) and math.isfinite(metrics["val_loss"])


def test_huggingface_dataset(videos, tmp_path):
    pytest.importorskip("datasets", reason="datasets is an optional extra (hf)")
    ds = example("huggingface_dataset").main([str(videos), str(tmp_path), "--size", "none"])
    assert ds.classes == sorted(p.name for p in videos.iterdir())
    assert len(ds) == 9 and tuple(ds[0].frames.shape)[:2] == (4, 3)
    assert (tmp_path / "hf_saved" / "dataset_info.json").exists()


def test_s3_store(videos, s3_url, tmp_path):
    pytest.importorskip("s3fs", reason="s3fs is an optional extra (s3)")
    shapes = example("s3_store").main(
        [
            str(videos),
            s3_url,
            "--cache-dir",
            str(tmp_path / "cache"),
            "--cache-limit",
            "64000000",
            "--size",
            "none",
        ]
    )
    assert shapes == [(2, 4, 3, 32, 32)] * 2
    assert any((tmp_path / "cache").rglob("*"))  # read through the node cache


def _predicted(checkpoint: Path, video: Path, out: Path) -> list[dict]:
    assert (
        hyperframes(["predict", str(checkpoint), str(video), "--stride", "4", "--out", str(out)])
        == 0
    )
    return json.loads((out / "timeline.json").read_text())["windows"]


def test_onnx_predict_follows_the_recipe_to_predicts_probabilities(checkpoint, videos, tmp_path):
    pytest.importorskip("onnxruntime", reason="onnxruntime is an optional extra (export)")
    pytest.importorskip("onnxscript", reason="onnxscript is an optional extra (export)")
    video = sorted(videos.rglob("*.mp4"))[0]
    onnx = tmp_path / "m.onnx"
    got = example("onnx_predict").main([str(checkpoint), str(video), "--onnx", str(onnx)])
    want = _predicted(checkpoint, video, tmp_path / "pred")
    assert [g["source_frames"] for g in got] == [w["source_frames"] for w in want]
    for g, w in zip(got, want):
        assert max(abs(g["probs"][c] - w["probs"][c]) for c in w["probs"]) < 1e-3


def test_live_stream_gives_predicts_windows(checkpoint, videos, tmp_path, capsys):
    video = sorted(videos.rglob("*.mp4"))[0]
    got = example("live_stream").main([str(checkpoint), str(video), "--stride", "4"])
    want = _predicted(checkpoint, video, tmp_path / "pred")
    assert [list(g.source_frames) for g in got] == [w["source_frames"] for w in want]
    for g, w in zip(got, want):
        assert max(abs(g.probs[k] - w["probs"][c]) for k, c in enumerate(g.classes)) < 1e-2
    assert capsys.readouterr().out.count(" s: ") == len(want)
