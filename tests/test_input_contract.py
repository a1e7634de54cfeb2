"""One input contract: the same window through eval and through predict gives the same logits,
and the contract itself (values, (de)serialisation, derivation, preparation) holds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from hyperframes import ConfigError, DataError, models
from hyperframes._core._contract import (
    IMAGENET_MEAN,
    IMAGENET_STD,
    InputContract,
)
from hyperframes._core._layouts import KeyframeWindow, to_layout
from hyperframes.build import BuildOptions, build_store
from hyperframes.checkpoint._checkpoint import save_checkpoint
from hyperframes.demo import make_motion_dataset, make_segmentation_dataset
from hyperframes.infer import Predictor
from hyperframes.store import open_store
from hyperframes.train import load_config, resolve_contract
from hyperframes.train._config._data import make_dataset

T = 4
STRIDE = 2  # the sampler's frame stride: windows span (T - 1) * 2 + 1 = 7 stored frames


# --------------------------------------------------------------------------- eval == predict


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """A classification store of non-square frames (crops apply) and a segmentation store."""
    root = tmp_path_factory.mktemp("contract")
    make_motion_dataset(
        root / "motion", classes=("left", "up"), videos_per_class=1, frames=16, size=64
    )
    make_segmentation_dataset(root / "seg", videos=1, frames=16, size=64)
    out = {}
    for name, size in (("motion", "40x52"), ("seg", "36x44")):
        out[name] = root / f"{name}_store"
        build_store(root / name, out[name], BuildOptions(size=size), progress=False)
    return out


def _run(store, name: str, folder, **data) -> tuple:
    """A checkpoint as training writes it (contract included) for a fresh model."""
    cfg = load_config(
        {
            "data": {
                "store": str(store),
                "frames": T,
                "sampler_options": {"stride": STRIDE},
                "val_sampler_options": {"clips": 1, "stride": STRIDE},
                "mean": [0.45, 0.5, 0.55],
                "std": [0.2, 0.25, 0.3],
                **data,
            },
            "model": {"name": name},
        }
    )
    st = open_store(store)
    task = models.get_spec(name).task
    classes = list(st.classes) if task == "classification" else ["background", "foreground"]
    contract = resolve_contract(cfg, store=st, classes=tuple(classes))
    torch.manual_seed(0)
    model = models.create(name, num_classes=len(classes), frames=T)
    with torch.no_grad():  # non-trivial BatchNorm statistics, as after training
        for m in model.modules():
            if isinstance(m, torch.nn.modules.batchnorm._BatchNorm):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    path = save_checkpoint(
        folder / "best.pt",
        {
            "model": model.state_dict(),
            "config": cfg.to_dict(),
            "contract": contract.to_dict(),
            "classes": classes,
            "task": task,
            "num_classes": len(classes),
            "frames": T,
        },
    )
    return cfg, st, contract, path


CASES = [
    ("channel_resnet18", "motion", {"augmentation": {"size": 32}}),
    ("cnn_lstm", "motion", {"augmentation": {"size": 32}}),
    ("keyframe_unet", "seg", {}),
]


@pytest.mark.parametrize("name, store, data", CASES, ids=[c[0] for c in CASES])
def test_eval_and_predict_give_the_same_logits(stores, tmp_path, monkeypatch, name, store, data):
    from hyperframes.train import evaluate
    from hyperframes.train._eval import _eval

    cfg, st, contract, ckpt = _run(stores[store], name, tmp_path, **data)
    assert contract.layout == models.get_spec(name).layout
    assert contract.frame_stride == STRIDE
    # the eval path: evaluate() with the model's outputs captured
    outputs = []
    rebuild = _eval.rebuild_model

    def spy(*args, **kwargs):
        model, c = rebuild(*args, **kwargs)
        model.register_forward_hook(lambda m, i, o: outputs.append(o.detach().clone()))
        return model, c

    monkeypatch.setattr(_eval, "rebuild_model", spy)
    evaluate(ckpt, split="all", clips=1, crops=1, device="cpu", verbose=False)
    evaluated = torch.cat(outputs)
    assert evaluated.std() > 1e-3  # logits that tell windows apart: the comparison has teeth
    # the windows eval read: the same datasets, so the same plans
    ids = np.arange(len(st.videos))
    ds = make_dataset(
        cfg,
        st,
        ids,
        train=False,
        sampler="uniform",
        sampler_options={"clips": 1, "stride": STRIDE},
        transform=None,
    )
    assert len(ds) == len(evaluated)
    for item in range(len(ds)):
        sample = ds[item]
        stored = sample.meta["stored_indices"]
        assert list(np.diff(stored)) == [STRIDE] * (T - 1)
        # predict: the stored frames pushed one by one, as a camera would give them
        video = sample.meta["video_id"]
        span = np.arange(stored[0], stored[-1] + 1)
        frames = st.read_numpy(video, span)  # (L, C, H, W) uint8
        p = Predictor.from_checkpoint(ckpt, stride=1, batch_size=1)
        assert p.contract == contract
        preds = []
        for k, f in enumerate(frames):
            preds += p.push(np.ascontiguousarray(f.transpose(1, 2, 0)), k / 10)
        preds += p.flush()
        preds = [q for q in preds if not q.mirrored]  # a dense model's padded ends aside
        assert (preds[0].first_source_frame, preds[0].last_source_frame) == (0, len(span) - 1)
        got = torch.from_numpy(preds[0].logits)
        diff = (got - evaluated[item]).abs().max().item()
        assert diff <= 1e-5, f"{name}: eval and predict differ by {diff:g}"


# --------------------------------------------------------------------------- the contract


def _contract(**kw) -> InputContract:
    base = {"frames": T, "layout": "temporal", "size": "32", "crop": 24}
    return InputContract(**{**base, **kw})


def test_to_dict_round_trips_and_is_plain():
    c = _contract(fps=12.5, frame_stride=3, classes=("x", "y"), mean=(0.1, 0.2, 0.3))
    d = c.to_dict()
    assert d == {
        "version": 1,
        "frames": T,
        "frame_stride": 3,
        "fps": 12.5,
        "size": "32",
        "crop": 24,
        "mean": [0.1, 0.2, 0.3],
        "std": list(IMAGENET_STD),
        "dtype": "uint8",
        "layout": "temporal",
        "classes": ["x", "y"],
    }
    assert InputContract.from_dict(d) == c
    assert InputContract.from_dict({**d, "fps": 0}).fps is None  # 0: every decoded frame


@pytest.mark.parametrize(
    "edit, message",
    [
        (
            {"frames": 10**9},
            r"^contract\.frames: out of range: 1000000000; allowed: an integer >= 1 and <= 4096",
        ),
        (
            {"frame_stride": 0},
            r"^contract\.frame_stride: out of range: 0; allowed: an integer >= 1 and <= 4096",
        ),
        (
            {"crop": 10**9},
            r"^contract\.crop: out of range: 1000000000; allowed: an integer >= 1 and <= 8192, or null",
        ),
        ({"size": "100000x10"}, r"^contract\.size: '100000x10' asks for frames of 100000 x 10"),
        ({"size": 128}, r"^contract\.size: expected a string, got 128; allowed: a string, or null"),
        (
            {"fps": float("nan")},
            r"^contract\.fps: out of range: nan; allowed: a number > 0 and <= 1000\.0, or null",
        ),
        ({"mean": [0.5, 0.5]}, r"^contract\.mean: expected 3 numbers"),
        (
            {"std": [0.2, 0.0, 0.2]},
            r"^contract\.std\[1\]: out of range: 0\.0; allowed: a number > 0",
        ),
        (
            {"layout": "diagonal"},
            r"^contract\.layout: not an allowed value: 'diagonal'; allowed: one of temporal, channel",
        ),
        (
            {"dtype": "int8"},
            r"^contract\.dtype: not an allowed value: 'int8'; allowed: one of uint8, float16",
        ),
        (
            {"classes": "abc"},
            r"^contract\.classes: expected a list, got 'abc'; allowed: a list of strings",
        ),
        ({"colour": "blue"}, r"^contract: unknown keys \['colour'\]; allowed: frames,"),
        ({"version": 7}, r"^contract: version 7 is not readable by this hyperframes"),
    ],
)
def test_from_dict_refuses_bad_values(edit, message):
    with pytest.raises(ConfigError, match=message):
        InputContract.from_dict({**_contract().to_dict(), **edit})


def test_from_dict_needs_frames_and_layout():
    with pytest.raises(ConfigError, match=r"contract: the 'layout' entry is missing"):
        InputContract.from_dict({"frames": 4})
    with pytest.raises(ConfigError, match=r"contract: expected a mapping, got list"):
        InputContract.from_dict([4])


@pytest.mark.parametrize("layout", ["temporal", "channel", "conv3d", "keyframe"])
def test_prepare_is_resize_crop_then_normalise_then_layout(layout):
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, 256, (2, T, 3, 30, 40), generator=g, dtype=torch.uint8)
    c = _contract(layout=layout, crop=None, mean=(0.4, 0.5, 0.6), std=(0.2, 0.3, 0.4))
    mean = torch.tensor(c.mean).reshape(3, 1, 1)
    std = torch.tensor(c.std).reshape(3, 1, 1)
    want = to_layout((x.float() / 255 - mean) / std, layout)
    got = c.prepare(x)
    if layout == "keyframe":
        assert isinstance(got, KeyframeWindow)
        torch.testing.assert_close(got.key, want.key)
        torch.testing.assert_close(got.context, want.context)
    else:
        assert got.shape == want.shape and got.dtype == torch.float32
        torch.testing.assert_close(got, want)


def test_geometry_is_the_crop_of_the_resized_short_side_and_idempotent():
    c = _contract(crop=24)
    x = torch.randint(0, 256, (T, 3, 32, 48), dtype=torch.uint8)
    y = c.resize_crop(x)
    assert y.shape == (T, 3, 24, 24)
    assert c.resize_crop(y) is y  # already the model's size: nothing to do
    assert torch.equal(c.prepare(y[None]), c.prepare(x[None]))
    ends = [c.resize_crop(x, position=p) for p in ("start", "centre", "end")]
    assert torch.equal(ends[1], y) and not torch.equal(ends[0], ends[2])
    whole = _contract(crop=None)
    assert whole.resize_crop(x) is x
    assert whole.resize_crop(x, position="end").shape == (T, 3, 32, 32)  # eval's extra views
    assert (c.input_size(100, 50), whole.input_size(100, 50)) == ((24, 24), (64, 32))
    assert c.store_size(100, 50) == (64, 32)
    with pytest.raises(ConfigError, match=r"position 'left': allowed: start, centre, end"):
        c.resize_crop(x, position="left")


def test_prepare_names_what_is_wrong():
    c = _contract()
    with pytest.raises(DataError, match=r"takes windows of 4 frames, got 3"):
        c.prepare(torch.zeros(1, 3, 3, 24, 24, dtype=torch.uint8))
    with pytest.raises(DataError, match=r"a batch \(B, T, C, H, W\) of frames"):
        c.prepare(torch.zeros(3, 24, 24, dtype=torch.uint8))
    with pytest.raises(DataError, match=r"expected \(\.\.\., 3, H, W\) RGB frames"):
        c.prepare(torch.zeros(1, T, 1, 24, 24, dtype=torch.uint8))


def test_frames_a_store_normalised_are_only_cast():
    x = torch.randn(1, T, 3, 24, 24).to(torch.float16)
    c = _contract(dtype="float16")
    torch.testing.assert_close(c.prepare(x), x.float())
    u = torch.full((1, T, 3, 24, 24), 255, dtype=torch.uint8)  # raw frames: normalised
    torch.testing.assert_close(
        c.prepare(u)[0, 0, :, 0, 0], (1 - torch.tensor(IMAGENET_MEAN)) / torch.tensor(IMAGENET_STD)
    )


def test_a_config_resolves_to_the_contract_of_its_store(stores):
    cfg = load_config(
        {
            "data": {
                "store": str(stores["motion"]),
                "frames": T,
                "sampler_options": {"stride": 3},
                "augmentation": {"size": 32},
            },
            "model": {"name": "channel_resnet18"},
        }
    )
    c = resolve_contract(cfg)  # the store found at data.store
    assert (c.frames, c.frame_stride, c.size, c.fps, c.crop) == (T, 3, "40x52", None, 32)
    assert (c.layout, c.mean, c.std) == ("channel", IMAGENET_MEAN, IMAGENET_STD)
    seg = cfg.model_copy(update={"model": cfg.model.model_copy(update={"name": "keyframe_unet"})})
    assert resolve_contract(seg).crop is None  # segmentation sees whole frames
    # every other task keeps the crop its training evaluated (issue 35: masked_video lost it)
    for task, name in (("multilabel", "channel_resnet18"), ("masked_video", "video_mae")):
        other = cfg.model_copy(
            update={
                "model": cfg.model.model_copy(update={"name": name}),
                "train": cfg.train.model_copy(update={"task": task}),
            }
        )
        assert resolve_contract(other).crop == 32, task
    again = resolve_contract(c, size="none", fps=0, classes=("a",))
    assert (again.size, again.fps, again.classes) == (None, None, ("a",))
    assert again.source.startswith("size argument, fps argument")
    with pytest.raises(ConfigError, match=r"resolve_contract takes an InputContract"):
        resolve_contract(42)


def test_an_old_checkpoint_resolves_from_its_config_and_input_entry():
    state = {
        "format": "hyperframes-checkpoint",
        "config": {
            "data": {
                "frames": 6,
                "mean": [0.5] * 3,
                "std": [0.25] * 3,
                "augmentation": {"size": 28},
                "val_sampler_options": {"clips": 1, "stride": 2},
            },
            "model": {"name": "tsn_resnet18"},
        },
        "input": {"size": "48", "fps": 12.0},
        "classes": ["u", "v"],
    }
    c = resolve_contract(state)
    assert (c.frames, c.frame_stride, c.size, c.fps, c.crop) == (6, 2, "48", 12.0, 28)
    assert (c.layout, c.mean, c.std, c.classes) == ("temporal", (0.5,) * 3, (0.25,) * 3, ("u", "v"))
    assert c.source == "checkpoint input.size, checkpoint input.fps"
    new = resolve_contract({"contract": c.to_dict()})
    assert new == c and new.source == "checkpoint contract"


def test_imagenet_statistics_are_defined_once():
    cfg = load_config({"data": {"store": "s"}, "model": {"name": "cnn_lstm"}})
    assert tuple(cfg.data.mean) == IMAGENET_MEAN and tuple(cfg.data.std) == IMAGENET_STD
    assert _contract().mean == IMAGENET_MEAN


def test_eval_refuses_a_float16_store_for_a_model_of_uint8_frames(stores, tmp_path):
    """A float16 store's frames are normalised at build: a model trained on uint8 frames
    would take them as [0, 1] and normalise them again (chance accuracy, no error). Eval
    refuses, naming the store and both normalisations; a float16 contract of the store's
    own mean/std takes them."""
    from hyperframes.train import evaluate

    motion = stores["motion"]
    half = tmp_path / "half_store"
    build_store(
        motion.parent / "motion", half, BuildOptions(size="40x52", dtype="float16"), progress=False
    )
    *_, ckpt = _run(motion, "channel_resnet18", tmp_path, augmentation={"size": 32})
    with pytest.raises(DataError, match=r"half_store: holds float16 frames normalised at build"):
        evaluate(ckpt, half, split="all", clips=1, crops=1, device="cpu", verbose=False)
    manifest = open_store(half).manifest
    norm = manifest["normalize"]
    fit = _contract(dtype="float16", mean=norm["mean"], std=norm["std"])
    fit.check_store_frames(manifest, half)  # the store's own normalisation: taken
    _contract().check_store_frames(open_store(motion).manifest, motion)  # uint8: any contract
