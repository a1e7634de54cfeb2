"""The public names are part of the contract: this test pins them."""

import ast
import importlib
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import hyperframes


def test_top_level_names():
    assert sorted(hyperframes.__all__) == [
        "BuildOptions",
        "ConfigError",
        "DataError",
        "DecodeError",
        "Hyperframe",
        "HyperframeBatch",
        "HyperframeDataset",
        "HyperframesError",
        "InputError",
        "StoreError",
        "__version__",
        "build_store",
        "loader",
        "open_store",
        "verify_store",
    ]
    for name in hyperframes.__all__:
        assert getattr(hyperframes, name) is not None


def test_error_tree():
    for cls in ("ConfigError", "DataError", "DecodeError", "InputError", "StoreError"):
        assert issubclass(getattr(hyperframes, cls), hyperframes.HyperframesError)


def test_import_is_light():
    code = "import sys, hyperframes; print('torch' in sys.modules, 'av' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


def test_sub_packages_load_on_first_use_after_import_hyperframes_alone():
    code = (
        "import sys, hyperframes\n"
        "assert 'hyperframes.models' not in sys.modules\n"
        "model = hyperframes.models.create('r2plus1d_tiny', num_classes=3, frames=4)\n"
        "print(type(model).__name__, hyperframes.infer.__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[1] == "hyperframes.infer"


# -- the whole public face: every public module's ``__all__`` ---------------------------------

_PACKAGE = Path(hyperframes.__file__).parent

#: module -> its ``__all__`` (read from the source, so modules with optional dependencies count)
PUBLIC = {
    "hyperframes": "BuildOptions ConfigError DataError DecodeError Hyperframe HyperframeBatch "
    "HyperframeDataset HyperframesError InputError StoreError __version__ build_store loader "
    "open_store verify_store",
    "hyperframes.bench": "format_bench format_plan plan_store run_bench",
    "hyperframes.checkpoint": "load_checkpoint rebuild_model resolve_contract save_checkpoint",
    "hyperframes.build": "BuildOptions BuildReport build_store convert_codec convert_to_hdf5",
    "hyperframes.cli": "main",
    "hyperframes.data": "BalancedSampler DatasetOptions DeliveryOptions EpochSampler Hyperframe "
    "HyperframeBatch HyperframeDataset HyperframeLoader InMemoryStore LogMelOptions OrderOptions "
    "OutputOptions PrefetchLoader ReadOptions SamplingOptions TargetStage TrackOptions "
    "collate_hyperframes "
    "list_layouts loader to_layout transforms",
    "hyperframes.data.transforms": "CenterCrop ColorJitter Compose DropFrame DuplicateFrame "
    "GaussianNoise Normalize PerSample RandomAffine RandomCrop RandomHorizontalFlip "
    "RandomResizedCrop Resize Reverse Shuffle ToFloat Transform Window create_transform "
    "list_transforms register_transform",
    "hyperframes.decode": "DecodeReport DecodedAudio DecodedFrame Decoder VideoInfo "
    "create_decoder decode_audio list_decoders register_decoder",
    "hyperframes.demo": "make_detection_dataset make_motion_dataset make_segmentation_dataset "
    "run_demo run_detection_demo",
    "hyperframes.infer": "ExportError ExportReport InferenceModel InputContract MultiStream "
    "PredictReport Prediction Predictor export_onnx iter_predictions load_inference_model "
    "predict_video resolve_contract",
    "hyperframes.inputs": "Source list_input_formats scan_inputs",
    "hyperframes.integrations.lightning": "HyperframeDataModule",
    "hyperframes.integrations.mmaction": "HyperframeDecode HyperframeInit HyperframeSampleFrames",
    "hyperframes.integrations.torchdata": "stateful_loader",
    "hyperframes.models": "AudioVisual ModelInfo ModelSpec TSM TSN UNet VideoModel create "
    "describe get_spec list_models load_pretrained register_model",
    "hyperframes.remote": "CacheWarning",
    "hyperframes.sampling": "Plan Sampler VideoMeta create_sampler list_samplers register_sampler",
    "hyperframes.store": "Annotations Codec H5Store Manifest Store StoreReader VideoRecord "
    "codec_parameters create_codec describe_store list_codecs open_store read_boxes verify_store",
    "hyperframes.train": "AugmentConfig Config DataConfig DetectionDataset EvalConfig "
    "LeakageReport ModelConfig RecalibrateReport SegmentationDataset Task TrainConfig "
    "TrainingInterrupted apply_overrides check_leakage coco_map config_from_dict create_task "
    "estimate evaluate flicker_rate list_tasks load_checkpoint load_config recalibrate "
    "register_task run_training save_checkpoint save_config",
    "hyperframes.viz": "pca_image write_report",
}


def _public_all() -> dict[str, list[str]]:
    """Every non-underscore module's ``__all__``, read with ``ast`` (nothing imported)."""
    found = {}
    for path in sorted(_PACKAGE.rglob("*.py")):
        parts = path.relative_to(_PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        if any(p.startswith("_") for p in parts):
            continue
        for node in ast.parse(path.read_text()).body:
            target = node.targets[0] if isinstance(node, ast.Assign) else None
            if isinstance(node, ast.AnnAssign):
                target = node.target
            if isinstance(target, ast.Name) and target.id == "__all__" and node.value:
                names = ast.literal_eval(node.value)
                if names:
                    found[".".join(parts)] = sorted(names)
    return found


def test_public_face_is_at_most_160_names_and_pinned():
    found = _public_all()
    assert found == {module: sorted(names.split()) for module, names in PUBLIC.items()}
    distinct = {name for names in found.values() for name in names}
    assert len(distinct) <= 160, len(distinct)
    for module, names in PUBLIC.items():
        if module == "hyperframes.integrations.mmaction":  # needs mmaction2 (tested there)
            continue
        loaded = importlib.import_module(module)
        for name in names.split():
            assert getattr(loaded, name) is not None, f"{module}.{name}"


@pytest.mark.parametrize(
    ("module", "name", "where"),
    [
        ("hyperframes.train", "psnr", "hyperframes.models._outputs"),
        ("hyperframes.sampling", "UniformSampler", "hyperframes.sampling._windows"),
        ("hyperframes.models", "R2Plus1DTiny", "hyperframes.models._cnn3d"),
        ("hyperframes.store", "dequantise", "hyperframes.store._tracks"),
    ],
)
def test_a_name_that_left_all_still_imports_and_says_where_it_lives(module, name, where):
    loaded = importlib.import_module(module)
    with pytest.warns(DeprecationWarning, match=f"{module}.{name} is no longer public.*{where}"):
        value = getattr(loaded, name)
    assert value is getattr(importlib.import_module(where), name)
    assert name not in loaded.__all__
    with pytest.raises(AttributeError):
        loaded.no_such_name  # noqa: B018


def test_every_moved_name_resolves():
    from hyperframes._core._moved import MOVED

    for module, places in MOVED.items():
        assert module in PUBLIC, module
        for where, names in places.items():
            for name in names.split():
                assert name not in PUBLIC[module].split(), f"{module}.{name} is public"
                assert hasattr(importlib.import_module(where), name), f"{module}.{name} -> {where}"


@pytest.mark.parametrize(
    ("module", "function", "parameter", "modes"),
    [
        ("hyperframes.sampling", "Sampler.__init__", "short", ("error", "drop", "pad")),
        ("hyperframes.infer._options", "ReadingOptions", "short", ("error", "pad")),
        ("hyperframes.infer", "Predictor.__init__", "short", ("error", "pad")),
        ("hyperframes.build", "build_store", "engine", ("local", "ray")),
        ("hyperframes.build", "convert_to_hdf5", "compression", ("lzf", "blosc", "gzip", "none")),
        ("hyperframes.models", "TSN.__init__", "consensus", ("avg", "attention")),
        ("hyperframes.decode", "register_decoder", "reads", ("video", "frames")),
        ("hyperframes.data", "to_layout", "name", ("temporal", "channel", "conv3d", "keyframe")),
    ],
)
def test_string_modes_are_literals(module, function, parameter, modes):
    obj = importlib.import_module(module)
    for part in function.split("."):
        obj = getattr(obj, part)
    hint = typing.get_type_hints(obj, globalns=sys.modules[obj.__module__].__dict__)[parameter]
    assert typing.get_args(hint) == modes
