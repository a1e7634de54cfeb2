"""The public names are part of the contract: this test pins them."""

import subprocess
import sys

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
