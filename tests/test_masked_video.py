"""Masked video pretraining (issue 24): tube masks, the loss on masked patches only, a run from
the example config (logs, curves, checkpoints, resume, eval, reconstructions, ONNX export of
the encoder), fine-tuning a classifier from it, and ``data.repeats`` across worker counts. A
tiny store of the demo's motion videos and a tiny ViT (one block, dim 32)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from hyperframes import ConfigError, DataError
from hyperframes.build import BuildOptions, build_store
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.cli import main
from hyperframes.data import loader
from hyperframes.data._repeats import RepeatedWindows
from hyperframes.demo import make_motion_dataset
from hyperframes.infer import Predictor, predict_video
from hyperframes.models import create
from hyperframes.models._mae import patchify, tube_mask, unpatchify
from hyperframes.store import open_store
from hyperframes.train import (
    evaluate,
    load_checkpoint,
    load_config,
    run_training,
    write_reconstructions,
)
from hyperframes.train._config._data import build_data
from hyperframes.train._tasks._masked import MaskedVideoTask

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "masked_video.yaml"
TINY = {"image_size": 32, "patch_size": 8, "dim": 32, "depth": 1, "heads": 2}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("masked")
    make_motion_dataset(
        root / "data", classes=("left", "right"), videos_per_class=3, frames=12, size=32, seed=1
    )
    build_store(root / "data", root / "store", BuildOptions(size="none"), progress=False)
    return root / "store"


@pytest.fixture(scope="module")
def trained(store, tmp_path_factory) -> tuple[Path, dict]:
    """The folder and summary of a two-epoch masked-video run on ``store``: the run the
    trainer's test checks, whose best.pt predict, fine-tuning and the export read."""
    out = tmp_path_factory.mktemp("masked") / "whole"
    return out, run_training(CONFIG, out, overrides=_overrides(store), progress=False)


@pytest.fixture(scope="module")
def pretrained(trained) -> Path:
    return trained[0] / "best.pt"


def _overrides(store: Path, *more: str) -> list[str]:
    """The example config made tiny: this store, T=4, 32x32 frames, a one-block ViT."""
    return [
        f"data.store={store}",
        "data.frames=4",
        "data.batch_size=4",
        "data.repeats=2",
        "data.workers=0",
        "data.augmentation.size=null",
        f"model.options={json.dumps({**TINY, 'mask_ratio': 0.75})}",
        "train.epochs=2",
        "train.warmup_epochs=0",
        *more,
    ]


def test_tube_masks_have_the_ratio_span_every_frame_and_are_seeded():
    m = tube_mask(5, 16, 0.9, generator=torch.Generator().manual_seed(3))
    assert m.shape == (5, 16) and m.sum(1).tolist() == [14] * 5  # round(0.9 * 16)
    again = tube_mask(5, 16, 0.9, generator=torch.Generator().manual_seed(3))
    other = tube_mask(5, 16, 0.9, generator=torch.Generator().manual_seed(4))
    assert torch.equal(m, again) and not torch.equal(m, other)
    assert tube_mask(2, 4, 0.99).sum(1).tolist() == [3, 3]  # one place always stays visible
    torch.manual_seed(0)
    model = create("video_mae", num_classes=1, frames=4, mask_ratio=0.75, **TINY)
    x = torch.randn(3, 4, 3, 32, 32)
    out = model(x)  # training: torch's generator, which the trainer reseeds per micro-batch
    assert out.shape == (3, 4 * 16, 8 * 8 * 3 + 1)
    flag = out[..., -1].reshape(3, 4, 16)
    assert (flag == flag[:, :1]).all()  # a tube: the same places masked in every frame
    assert flag[:, 0].sum(1).tolist() == [12.0] * 3
    assert len({tuple(f.tolist()) for f in flag[:, 0]}) == 3  # each window its own mask
    torch.manual_seed(7)
    a = model(x)
    torch.manual_seed(7)
    assert torch.equal(a, model(x))
    model.eval()  # eval: seeded by mask_seed, the same at every call
    assert torch.equal(model(x), model(x))


@pytest.mark.parametrize("tubelet", [1, 2])
def test_random_masking_draws_places_per_token_frame_and_the_encoder_sees_only_them(tubelet):
    torch.manual_seed(0)
    opts = {**TINY, "mask_ratio": 0.75, "masking": "random", "tubelet": tubelet}
    model = create("video_mae", num_classes=1, frames=4, **opts).eval()  # seeded masks
    frames = torch.randint(0, 256, (3, 4, 3, 32, 32), dtype=torch.uint8)
    out = model(frames.float() / 255)
    flag = out[..., -1].reshape(3, 4, 16)
    assert (flag.sum(-1) == 12).all()  # the ratio in every frame
    assert (flag[:, ::tubelet] == flag[:, tubelet - 1 :: tubelet]).all()  # a tubelet's frames
    assert (flag[:, ::tubelet] != flag[:, :1]).any(-1)[:, 1:].all()  # other places per frame
    # the masked pixels of the input change nothing: the encoder sees the visible ones only
    tokens = patchify(frames.float(), 8)
    masked = flag.reshape(3, 64).bool()
    tokens[masked] = 255 - tokens[masked]
    assert torch.equal(model(unpatchify(tokens, 4, (32, 32)) / 255), out)
    tokens[~masked] = 255 - tokens[~masked]
    assert not torch.equal(model(unpatchify(tokens, 4, (32, 32)) / 255), out)
    with pytest.raises(ConfigError, match="masking 'sideways'"):
        create("video_mae", num_classes=1, frames=4, **{**opts, "masking": "sideways"})
    with pytest.raises(ConfigError, match="joint attention"):
        create("video_mae", num_classes=1, frames=4, divided=True, **opts)


@pytest.mark.parametrize("masking", ["tube", "random"])
def test_one_batch_is_overfitted_and_the_prediction_needs_the_encoder(masking):
    """Issue 38: the pretraining's sanity checks. On one fixed batch with the same masks each
    step the masked-patch loss falls below half a zero prediction's (1.0) in 100 steps;
    replacing the encoder's outputs by zeros then brings it back up: the prediction uses
    what the encoder saw, not the positions alone. (``tube`` is main's masking: a guard.)"""
    from hyperframes.demo._synthetic import make_motion_frames

    torch.manual_seed(0)
    clips = [
        make_motion_frames(label, frames=4, size=32, rng=np.random.default_rng(i))
        for i, label in enumerate(("left", "right", "up", "down"))
    ]
    frames = torch.from_numpy(np.stack(clips)).permute(0, 1, 4, 2, 3).contiguous()
    options = {**TINY, "mask_ratio": 0.75} | ({"masking": masking} if masking != "tube" else {})
    model = create("video_mae", num_classes=1, frames=4, **options)
    task = MaskedVideoTask(["pixels"])
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x = frames.float() / 255

    def loss() -> torch.Tensor:
        torch.manual_seed(1)  # the same masks at every step
        return task.loss(model(x), frames)

    for _ in range(100):
        opt.zero_grad()
        step = loss()
        step.backward()
        opt.step()
    fitted = loss().item()
    encode = model.encode
    model.encode = lambda *a: torch.zeros_like(encode(*a))  # type: ignore[method-assign]
    assert fitted < 0.5 and loss().item() > 2 * fitted


def test_the_loss_sees_only_masked_patches_and_the_encoder_only_visible_ones():
    torch.manual_seed(0)
    model = create("video_mae", num_classes=1, frames=4, mask_ratio=0.75, **TINY).eval()
    frames = torch.randint(0, 256, (2, 4, 3, 32, 32), dtype=torch.uint8)
    x = frames.float() / 255
    out = model(x)
    masked = out[..., -1].bool()
    task = MaskedVideoTask(["pixels"])
    loss = task.loss(out, frames)
    # the loss by hand: per-patch normalised targets, squared error, masked tokens only
    t = patchify(frames.float() / 255, 8)
    norm = (t - t.mean(-1, keepdim=True)) / (t.var(-1, keepdim=True, unbiased=False) + 1e-6).sqrt()
    by_hand = ((out[..., :-1] - norm) ** 2).mean(-1)[masked].mean()
    assert torch.allclose(loss, by_hand, atol=1e-6)

    def changed(where: torch.Tensor) -> torch.Tensor:
        """``frames`` with the pixels of the tokens ``where`` (B, L) inverted."""
        p = patchify(frames.float(), 8)
        p[where] = 255 - p[where]
        b, t_, c = frames.shape[:3]
        back = p.reshape(b, t_, 4, 4, 8, 8, c).permute(0, 1, 6, 2, 4, 3, 5)
        return back.reshape(frames.shape).to(torch.uint8)

    assert torch.equal(task.loss(out, changed(~masked)), loss)  # visible patches: no effect
    assert not torch.equal(task.loss(out, changed(masked)), loss)
    # the encoder runs on visible tokens only: masked pixels of the input change nothing
    other = changed(masked).float() / 255
    assert torch.equal(model(other), out)
    assert not torch.equal(model(changed(~masked).float() / 255), out)


def test_a_masked_video_run_trains_resumes_evaluates_and_reconstructs(
    store, trained, tmp_path, capsys
):
    over = _overrides(store)
    run, whole = trained
    assert whole["task"] == "masked_video" and whole["best"]["metric"] == "val_loss"
    for name in ("best.pt", "last.pt", "curves.png", "epochs.csv", "log.jsonl", "summary.json"):
        assert (run / name).is_file(), name
    rows = [json.loads(line) for line in (run / "log.jsonl").read_text().splitlines()]
    epochs = [r for r in rows if r["kind"] == "epoch"]
    assert len(epochs) == 2 and all(
        np.isfinite(r["val_psnr"]) and r["val_loss"] > 0 for r in epochs
    )
    assert epochs[-1]["train_loss"] < 1.5  # per-patch normalised targets: 1 at a zero guess
    # stopped after one step and resumed: the same weights as the run never stopped
    part = tmp_path / "part"
    run_training(CONFIG, part, overrides=over, progress=False, stop_after_steps=1)
    run_training(CONFIG, part, overrides=over, progress=False, resume=True)
    a, b = load_checkpoint(run / "last.pt")["model"], load_checkpoint(part / "last.pt")["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)

    result = evaluate(run, clips=2, crops=1, workers=0)
    assert result["task"] == "masked_video" and result["windows"] == 2 * result["videos"]
    assert 5 < result["psnr"] < 60 and result["masked_loss"] > 0
    assert "masked-patch PSNR" in capsys.readouterr().out
    again = evaluate(run, clips=2, crops=1, workers=0, verbose=False)
    assert again["psnr"] == result["psnr"]  # eval masks are seeded
    with pytest.raises(ConfigError, match="whole frames"):
        evaluate(run, clips=1, crops=3, verbose=False)
    # the command line: eval writes reconstructions beside the metrics; the class predictor
    # refuses (no classes) and points to predict's reconstructions
    assert main(["eval", str(run), "--clips", "1", "--crops", "1", "--reconstructions", "1"]) == 0
    assert "reconstructions: 1 PNG" in capsys.readouterr().out
    assert (
        run / "eval" / "store" / "val" / "best_1clips_1crops" / "reconstructions" / "recon_0.png"
    ).is_file()
    with pytest.raises(ConfigError, match="writes its reconstructions"):
        Predictor.from_checkpoint(run / "best.pt")
    paths = write_reconstructions(run / "best.pt", tmp_path / "recon", windows=2)
    assert [p.name for p in paths] == ["recon_0.png", "recon_1.png"]
    img = np.asarray(Image.open(paths[0]))
    assert img.shape == (3 * 32 + 4, 4 * 32 + 3, 3)  # 3 rows (frames, visible, recon) x T=4
    assert (img[:32] == img[-32:]).mean() > 0.2  # visible patches kept as they were


def test_predict_writes_the_reconstructions_of_a_videos_windows(store, pretrained, tmp_path):
    video = store.parent / "data" / "left" / "left_000.mp4"
    out = tmp_path / "pred"
    args = ["predict", str(pretrained), str(video), "--out", str(out), "--stride", "2"]
    assert main([*args, "--reconstructions", "3", "--quiet"]) == 0
    listing = json.loads((out / "reconstructions.json").read_text())
    assert listing["task"] == "masked_video" and listing["decoder"] == "pyav"
    wins = listing["windows"]
    # T=4 frames 2 apart (the config's frame_stride), a window every 2 frames
    assert [w["source_frames"] for w in wins] == [[0, 2, 4, 6], [2, 4, 6, 8], [4, 6, 8, 10]]
    assert [w["file"] for w in wins] == ["recon_000000.png", "recon_000002.png", "recon_000004.png"]
    assert sorted(p.name for p in out.glob("*.png")) == [w["file"] for w in wins]
    # tubes of 12 of the 16 places masked (ratio 0.75) in each of T=4 frames
    assert all(w["masked_patches"] == 48 and w["visible_patches"] == 16 for w in wins)
    assert all(5 < w["psnr"] < 60 for w in wins)
    assert listing["mean_psnr"] == pytest.approx(np.mean([w["psnr"] for w in wins]))
    st = open_store(store)
    vid = next(v.id for v in st.videos if v.path.endswith("left_000.mp4"))
    # what the model was trained on (fps: every frame): the same pixels, (11, H, W, 3)
    stored = st.read_numpy(vid, list(range(11))).transpose(0, 2, 3, 1)
    masks = []
    for w in wins:
        img = np.asarray(Image.open(out / w["file"]))
        assert img.shape == (3 * 32 + 4, 4 * 32 + 3, 3)  # frames, visible, recon x T=4
        for k, f in enumerate(w["source_frames"]):
            tile = [img[r * 34 : r * 34 + 32, k * 33 : k * 33 + 32] for r in range(3)]
            assert np.array_equal(tile[0], stored[f])  # the decoded frame itself
            kept = (tile[1] == tile[0]).all(-1)  # the visible patches' pixels
            same = (tile[2] == tile[0]).all(-1)
            assert same[kept].all() and not same[~kept].all()  # the reconstruction keeps them
            assert (tile[1][~kept] == 128).mean() > 0.9  # masked patches grey
            masks.append(kept.reshape(4, 8, 4, 8).all((1, 3)))  # the visible places (4x4 grid)
    # one window a call: every window and frame has the model's own seeded mask (12 of 16)
    assert all(np.array_equal(m, masks[0]) for m in masks) and masks[0].sum() == 4
    # eval mode: the seeded mask gives the same reconstructions again; by default every window
    report = predict_video(pretrained, video, out=tmp_path / "all")
    again = json.loads((tmp_path / "all" / "reconstructions.json").read_text())
    assert report.windows == 6  # starts 0..5: 12 frames, windows spanning 7
    assert [w["psnr"] for w in again["windows"][::2]] == [w["psnr"] for w in wins]
    with pytest.raises(ConfigError, match="number of windows"):
        predict_video(pretrained, video, out=tmp_path / "none", reconstructions=0)
    assert not (tmp_path / "none").exists()


def test_fine_tuning_maps_the_encoder_and_reports_what_is_new(store, pretrained, tmp_path, capsys):
    best = pretrained
    mae = load_checkpoint(best)["model"]
    # T 4 -> 2 and a 4x4 patch grid -> 2x2: the position embeddings are interpolated
    small = {**TINY, "image_size": 16}
    clf = create("video_vit_tiny", num_classes=2, frames=2, pretrained=best, **small)
    report = clf.pretrained_report
    assert report.initialised == ["head.weight", "head.bias"]
    assert report.loaded == len(clf.state_dict()) - 2
    assert any("decoder tensors left out" in n for n in clf.pretrained_notes)
    for key in ("patch_embed.weight", "blocks.0.attn.qkv.weight", "norm.bias"):
        assert torch.equal(clf.state_dict()[key], mae[f"encoder.{key}"])
    # the embeddings the pretraining model itself adds to windows of T=2 at 16x16 (time:
    # resized with its ends kept), so the fine-tuned encoder is the pretrained one there
    source = create("video_mae", num_classes=1, frames=4, mask_ratio=0.75, **TINY).eval()
    source.load_state_dict(mae)
    ends = mae["encoder.pos_time"][:, [0, -1]]
    torch.testing.assert_close(clf.pos_time, source.encoder._time_embedding(2), rtol=0, atol=0)
    torch.testing.assert_close(clf.pos_time, ends, rtol=0, atol=0)
    torch.testing.assert_close(clf.pos_space, source.encoder._space_embedding(2, 2))
    x = torch.rand(2, 2, 3, 16, 16)
    seen: list[torch.Tensor] = []
    hook = clf.blocks[-1].register_forward_hook(lambda m, i, o: seen.append(o))
    with torch.no_grad():
        clf.eval()(x)
        every = torch.arange(4).expand(2, 4)  # all 2x2 places: nothing masked
        torch.testing.assert_close(clf.norm(seen[0]), source.encode(x, every, None))
    hook.remove()
    with pytest.raises(ConfigError, match="do not fit"):  # another width: refused, named
        create("video_vit_tiny", num_classes=2, frames=4, pretrained=best, **{**TINY, "dim": 64})

    cfg = {
        "data": {"store": str(store), "frames": 4, "batch_size": 4, "workers": 0},
        "model": {"name": "video_vit_tiny", "pretrained": str(best), "options": TINY},
        "train": {"epochs": 1, "optimizer": "adamw", "lr": 0.001},
    }
    capsys.readouterr()
    run_training(cfg, tmp_path / "ft", progress=True)
    said = capsys.readouterr().out
    assert "tensors loaded, 2 new (head.weight, head.bias)" in said
    logged = [json.loads(r) for r in (tmp_path / "ft" / "log.jsonl").read_text().splitlines()]
    record = next(r for r in logged if r["kind"] == "pretrained")
    assert record["new"] == ["head.weight", "head.bias"] and record["loaded"] == report.loaded
    video = store.parent / "data" / "left" / "left_000.mp4"
    with pytest.raises(ConfigError, match="for masked_video models"):  # a classifier: refused
        predict_video(tmp_path / "ft" / "best.pt", video, out=tmp_path / "p", reconstructions=2)
    assert not (tmp_path / "p").exists()


def test_repeats_give_k_seeded_windows_of_one_video_for_any_worker_count(store):
    cfg = load_config(
        CONFIG, _overrides(store, "data.repeats=3", "data.batch_size=6", "data.clips_per_video=2")
    )
    bundle = build_data(cfg, open_store(store))
    ds = bundle.train
    assert isinstance(ds, RepeatedWindows) and ds.repeats == 3
    assert len(ds) == 2 * len(bundle.train_ids)  # clips_per_video items of each video
    seen = {}
    for workers in (0, 2):
        dl = loader(ds, batch_size=2, workers=workers, seed=cfg.train.seed)
        dl.set_epoch(1)
        batches = list(dl)
        seen[workers] = (
            [
                (m["video_id"], m["item"], tuple(m["stored_indices"].tolist()))
                for b in batches
                for m in b.meta
            ],
            torch.cat([b.frames for b in batches]),
        )
    assert seen[0][0] == seen[2][0] and torch.equal(seen[0][1], seen[2][1])
    meta = seen[0][0]
    assert len(meta) == 3 * len(ds)
    groups = [meta[i : i + 3] for i in range(0, len(meta), 3)]
    assert all(len({v for v, _, _ in g}) == 1 for g in groups)  # one video per item
    assert all(
        g[0][1] % 3 == 0 and [i for _, i, _ in g] == list(range(g[0][1], g[0][1] + 3))
        for g in groups
    )
    assert sum(len({w for _, _, w in g}) > 1 for g in groups) > len(groups) // 2  # own draws
    with pytest.raises(ConfigError, match=r"data\.batch_size: 4 windows is not a multiple"):
        load_config(CONFIG, _overrides(store, "data.repeats=3"))
    with pytest.raises(ConfigError, match=r"data\.repeats: .*sliding"):
        load_config(CONFIG, _overrides(store, "data.sampler=sliding"))


@pytest.fixture(scope="module")
def mixed_run(tmp_path_factory) -> Path:
    """best.pt of a one-step masked-video run with ``augmentation.size: 64`` on a store of
    three frame shapes (72x40, 40x56, 48x48; issue 35)."""
    from _media import write_video

    root = tmp_path_factory.mktemp("mixed")
    for name, (w, h) in {"wide": (72, 40), "tall": (40, 56), "square": (48, 48)}.items():
        for i in range(2):
            write_video(root / "src" / name / f"{name}_{i}.mp4", frames=10, width=w, height=h)
    store = root / "store"
    build_store(root / "src", store, BuildOptions(size="none"), progress=False)
    assert len({tuple(v.shape[1:]) for v in open_store(store).videos}) == 3  # shapes differ
    drop = ("data.augmentation.size", "model.options", "data.repeats", "data.batch_size")
    over = [o for o in _overrides(store, "train.epochs=1") if not o.startswith(drop)]
    options = json.dumps({**TINY, "image_size": 64})
    over += ["data.repeats=1", "data.batch_size=2", "data.clips_per_video=1"]
    over += ["data.allow_leakage=true", f"model.options={options}"]  # the clips look alike
    run_training(CONFIG, root / "run", overrides=over, progress=False)
    return root / "run" / "best.pt"


def test_a_run_on_mixed_frame_shapes_keeps_its_crop_for_eval_and_predict(mixed_run, tmp_path):
    """The checkpoint carries the run's 64 x 64 eval crop: eval batches the windows of every
    shape, predict cuts whole patches, and the export's recipe names the crop."""
    from hyperframes.infer import load_inference_model
    from hyperframes.infer._recipe import preprocessing_recipe

    assert load_checkpoint(mixed_run)["contract"]["crop"] == 64
    result = evaluate(mixed_run, clips=1, crops=1, split="all", workers=0, verbose=False)
    assert result["videos"] == 6 and 5 < result["psnr"] < 60
    video = mixed_run.parents[1] / "src" / "wide" / "wide_0.mp4"
    report = predict_video(mixed_run, video, out=tmp_path / "pred", reconstructions=1)
    assert report.windows == 1
    img = np.asarray(Image.open(next((tmp_path / "pred").glob("recon_*.png"))))
    assert img.shape == (3 * 64 + 4, 4 * 64 + 3, 3)  # 64 x 64 crops, T=4
    assert preprocessing_recipe(load_inference_model(mixed_run).contract)["crop"] == 64
    # a checkpoint written before the fix (crop left out of its contract) gets it from its config
    state = torch.load(mixed_run, weights_only=True)
    state["contract"]["crop"] = None
    old = save_checkpoint(tmp_path / "old.pt", state)
    assert load_inference_model(old).contract.crop == 64
    assert evaluate(old, clips=1, split="all", workers=0, verbose=False)["videos"] == 6


@pytest.mark.slow
def test_the_encoder_exports_to_onnx_with_its_contract_and_crop(mixed_run, tmp_path):
    """One export (each costs seconds): the encoder's features, checked against torch by
    onnxruntime, the contract in the metadata, and the run's 64 x 64 crop as its input."""
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from hyperframes.infer import export_onnx

    report = export_onnx(mixed_run, tmp_path / "enc.onnx")
    assert report.output_name == "features" and report.output_shape == ["batch", 4 * 64, 32]
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-4
    meta = {p.key: p.value for p in onnx.load(str(tmp_path / "enc.onnx")).metadata_props}
    assert meta["task"] == "masked_video" and json.loads(meta["frames"]) == 4
    assert json.loads(meta["hyperframes.contract"])["frames"] == 4
    side = json.loads((tmp_path / "enc.onnx.json").read_text())
    assert side["preprocessing"]["crop"] == 64
    assert side["output"] == {"features": ["batch", 4 * 64, 32]}  # T=4 x an 8x8 patch grid


# -- tubelets (issue 38, item 5): tokens that span frames, so the encoder sees motion --------


@pytest.mark.parametrize("name", ["video_vit_tiny", "timesformer_tiny", "video_mae"])
def test_tubelet_1_is_the_frame_patch_model_unchanged(name):
    """``tubelet: 1`` (the default) builds the model as before: the same weights from the same
    seed, a 2D patch embedding, a temporal embedding per frame, the same outputs."""
    x = torch.randn(2, 4, 3, 32, 32, generator=torch.Generator().manual_seed(1))
    built = []
    for extra in ({}, {"tubelet": 1}):
        torch.manual_seed(0)
        model = create(name, num_classes=3, frames=4, **TINY, **extra).eval()
        with torch.no_grad():
            built.append((model.state_dict(), model(x)))
    (a, out_a), (b, out_b) = built
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert torch.equal(out_a, out_b)
    prefix = "encoder." if name == "video_mae" else ""
    assert b[f"{prefix}patch_embed.weight"].shape == (32, 3, 8, 8)
    assert b[f"{prefix}pos_time"].shape == (1, 4, 1, 32)


def test_tubelets_embed_frame_pairs_mask_whole_tubes_and_patchify_round_trips():
    frames = torch.randint(0, 256, (2, 4, 3, 32, 32), dtype=torch.uint8)
    tokens = patchify(frames.float(), 8, tubelet=2)
    assert tokens.shape == (2, 2 * 16, 2 * 8 * 8 * 3)
    assert torch.equal(unpatchify(tokens, 4, (32, 32), tubelet=2), frames.float())
    # a tubelet token holds its frames' patches one after the other
    per_frame = patchify(frames.float(), 8).reshape(2, 2, 2, 16, 192)  # (B, T', k, N, P)
    assert torch.equal(tokens.reshape(2, 2, 16, 2, 192), per_frame.permute(0, 1, 3, 2, 4))
    with pytest.raises(DataError, match="tubelet"):
        patchify(frames[:, :3].float(), 8, tubelet=2)

    torch.manual_seed(0)
    model = create("video_mae", num_classes=1, frames=4, mask_ratio=0.75, tubelet=2, **TINY)
    sd = model.state_dict()
    assert sd["encoder.patch_embed.weight"].shape == (32, 3, 2, 8, 8)  # a Conv3d over 2 frames
    assert sd["encoder.pos_time"].shape == (1, 2, 1, 32)  # T / tubelet token frames
    assert sd["decoder_pos_time"].shape[1] == 2 and sd["decoder_pred.weight"].shape[0] == 384
    model.eval()
    x = frames.float() / 255
    out = model(x)
    assert out.shape == (2, 4 * 16, 8 * 8 * 3 + 1)  # one token per frame patch, as tubelet 1
    flag = out[..., -1].reshape(2, 4, 16)
    assert (flag == flag[:, :1]).all() and flag[:, 0].sum(1).tolist() == [12.0, 12.0]
    keep = (~flag[:, 0].bool()).nonzero()[:, 1].reshape(2, -1)
    assert model.encode(x, keep, None).shape == (2, 2, 4, 32)  # (B, T', visible, D)
    task = MaskedVideoTask(["pixels"])
    assert torch.isfinite(task.loss(out, frames))
    masked = out[..., -1].bool()
    p = patchify(frames.float(), 8)
    p[masked] = 255 - p[masked]
    other = unpatchify(p, 4, (32, 32))
    assert torch.equal(model(other / 255), out)  # the encoder sees visible tubelets only
    # a token spans two frames: the second frame alone changes the first token frame
    enc = model.encoder
    moved = x.clone()
    moved[:, 1] = moved[:, 1].flip(-1)
    a, b = enc.embed_patches(x), enc.embed_patches(moved)
    assert not torch.allclose(a[:, 0], b[:, 0]) and torch.equal(a[:, 1], b[:, 1])
    with pytest.raises(DataError, match=r"T=3 frames is not a multiple of its tubelet \(2\)"):
        model(x[:, :3])


def test_a_tubelet_classifier_ignores_padded_frames_and_a_bad_tubelet_is_refused():
    torch.manual_seed(0)
    clf = create("video_vit_tiny", num_classes=3, frames=4, tubelet=2, **TINY).eval()
    x = torch.randn(2, 4, 3, 32, 32)
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    other = x.clone()
    other[0, 3] = torch.randn(3, 32, 32)  # a padded frame's content
    with torch.no_grad():
        assert torch.equal(clf(x, mask), clf(other, mask))
        assert not torch.equal(clf(x), clf(other))
        assert clf(x[:, :2]).shape == (2, 3)  # another T: the temporal embedding resized
    for name in ("video_vit_tiny", "video_mae"):
        with pytest.raises(ConfigError, match=r"tubelet \(3\) must divide frames \(4\)"):
            create(name, num_classes=1, frames=4, tubelet=3, **TINY)


def test_delta_targets_are_frame_differences_so_a_still_background_costs_nothing():
    torch.manual_seed(0)
    model = create("video_mae", num_classes=1, frames=4, target="delta", tubelet=2, **TINY)
    frames = torch.randint(0, 256, (2, 4, 3, 32, 32), dtype=torch.uint8)
    out = model.eval()(frames.float() / 255)
    masked = out[..., -1] > 0.5
    assert set(out[..., -1].unique().tolist()) == {0.0, 2.0}  # 2.0: a masked difference
    task = MaskedVideoTask(["pixels"])
    f = frames.float() / 255
    d = torch.cat([f[:, 1:2] - f[:, :1], f[:, 1:] - f[:, :-1]], dim=1)  # frame 0: 1 - 0
    t = patchify(d, 8)
    rms = t.square().mean((1, 2), keepdim=True).sqrt()
    by_hand = ((out[..., :-1] - t / rms) ** 2).mean(-1)[masked].mean()
    assert torch.allclose(task.loss(out, frames), by_hand, atol=1e-5)
    # a still window: nothing to predict for differences, a textured patch for pixels
    still = frames[:, :1].expand(2, 4, 3, 32, 32).contiguous()
    zero = torch.zeros_like(out)
    zero[..., -1] = masked * 2.0
    assert task.loss(zero, still) == 0
    zero[..., -1] = masked * 1.0
    assert task.loss(zero, still) > 0.5
    assert task.metrics(task.predictions(out.detach(), frames))["windows"] == 2
    with pytest.raises(ConfigError, match="target 'flow': allowed: pixels, delta"):
        create("video_mae", num_classes=1, frames=4, target="flow", **TINY)


@pytest.fixture(scope="module")
def tubelet_run(store, tmp_path_factory) -> Path:
    """best.pt of a one-epoch masked-video run with tubelets of 2 frames, difference targets."""
    out = tmp_path_factory.mktemp("tubelet") / "run"
    options = json.dumps({**TINY, "mask_ratio": 0.75, "tubelet": 2, "target": "delta"})
    over = [o for o in _overrides(store, "train.epochs=1") if not o.startswith("model.options")]
    run_training(CONFIG, out, overrides=[*over, f"model.options={options}"], progress=False)
    return out / "best.pt"


def test_a_tubelet_checkpoint_fine_tunes_with_every_encoder_weight(tubelet_run, tmp_path):
    result = evaluate(tubelet_run, clips=1, crops=1, workers=0, verbose=False)
    assert np.isfinite(result["psnr"]) and result["masked_loss"] > 0  # of the differences
    pictures = write_reconstructions(tubelet_run, tmp_path / "recon", windows=1)
    assert np.asarray(Image.open(pictures[0])).shape == (3 * 32 + 4, 4 * 32 + 3, 3)
    mae = load_checkpoint(tubelet_run)["model"]
    clf = create(
        "video_vit_tiny", num_classes=2, frames=4, pretrained=tubelet_run, tubelet=2, **TINY
    )
    assert clf.pretrained_report.initialised == ["head.weight", "head.bias"]
    assert clf.pretrained_report.loaded == len(clf.state_dict()) - 2
    own = clf.state_dict()
    assert all(torch.equal(own[k], mae[f"encoder.{k}"]) for k in own if not k.startswith("head."))
    with pytest.raises(ConfigError, match="patch_embed"):  # frame patches: do not fit, named
        create("video_vit_tiny", num_classes=2, frames=4, pretrained=tubelet_run, **TINY)


@pytest.mark.slow
def test_a_tubelet_encoder_exports_to_onnx(tubelet_run, tmp_path):
    pytest.importorskip("onnxruntime")
    from hyperframes.infer import export_onnx

    report = export_onnx(tubelet_run, tmp_path / "enc.onnx", size=32)
    assert report.output_name == "features" and report.output_shape == [
        "batch",
        2 * 16,
        32,
    ]  # T/2 x 4x4
    assert report.max_abs_diff is not None and report.max_abs_diff < 1e-4


def test_the_pretraining_encoder_sees_the_classifiers_time_embedding_at_a_shorter_t():
    """A window shorter than ``frames``: pretraining's encoder adds the temporal embedding the
    classifier adds (resized to T, first and last entries kept), not its first T entries, so
    a fine-tuned model meets the embeddings its encoder was pretrained with."""
    torch.manual_seed(0)
    model = create("video_mae", num_classes=1, frames=8, mask_ratio=0.75, **TINY).eval()
    enc = model.encoder
    with torch.no_grad():
        enc.pos_time.copy_(torch.randn_like(enc.pos_time))  # entries that differ visibly
        x = torch.rand(2, 4, 3, 32, 32)
        seen: list[torch.Tensor] = []
        hook = enc.blocks[-1].register_forward_hook(lambda m, i, o: seen.append(o))
        enc(x)  # the classifier's path: its tokens after the last block
        hook.remove()
        keep = torch.arange(16).expand(2, 16)
        torch.testing.assert_close(model.encode(x, keep, None), enc.norm(seen[0]))
