"""A default install (no extras) trains, evaluates and predicts; a missing extra is named.

How the default install is made, offline, in about half a minute of CPU: the project's wheel is
built (``pip wheel --no-deps``) and its ``Requires-Dist`` without extras is the whole contract
with a user's ``pip install``. A fresh virtualenv (no system site-packages, no pip) gets exactly
the closure of those requirements, followed through each installed distribution's own
``Requires-Dist`` in this test's environment (the lock's wheels, already installed: linked,
not copied, since torch alone is gigabytes); then ``pip install --no-index --find-links`` of
the wheel into it, with dependency resolution on, so pip itself checks that every declared
requirement is present there. Nothing outside the closure is importable in that virtualenv: a
module the default paths import without declaring it (OpenCV was in an extra) fails there as
it fails for a user. The README's "Serving hyperframes" example, ``train``, ``eval`` and
``predict`` then run in it, and ``export``, whose packages are an extra, says in one line which
extra to install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from importlib import metadata
from pathlib import Path

import pytest
import yaml
from packaging.markers import default_environment
from packaging.requirements import Requirement

from _stores import tiny_train_config

ROOT = Path(__file__).resolve().parents[1]


def _wheel(tmp: Path) -> Path:
    """The project's wheel, built from a copy of the sources (the tree stays clean)."""
    src = tmp / "src_copy"
    src.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__"))
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    opts = ["--no-deps", "--no-build-isolation", "--no-index", "-w", str(tmp / "wheels")]
    subprocess.run([*pip, "wheel", *opts, str(src)], check=True, timeout=300)
    (wheel,) = (tmp / "wheels").glob("hyperframes_video-*.whl")
    return wheel


def _core_requirements(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        text = z.read(name).decode()
    reqs = [
        Requirement(line.split(":", 1)[1])
        for line in text.splitlines()
        if line.startswith("Requires-Dist:")
    ]
    return [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]


def _closure(reqs: list[Requirement]) -> dict[str, metadata.Distribution]:
    """Every installed distribution the requirements need, followed through their own."""
    env = default_environment()
    found: dict[str, metadata.Distribution] = {}
    todo = [(r, "") for r in reqs]
    while todo:
        req, extra = todo.pop()
        if req.marker is not None and not req.marker.evaluate({**env, "extra": extra}):
            continue
        try:
            dist = metadata.distribution(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req} is declared but not installed from requirements.lock")
        key = (dist.metadata["Name"] or req.name).lower().replace("_", "-")
        if key in found and not req.extras:
            continue
        found[key] = dist
        for sub in dist.requires or []:
            r = Requirement(sub)
            for e in req.extras or {""}:
                todo.append((r, e))
    return found


def _default_install(tmp: Path) -> Path:
    """A fresh virtualenv holding the wheel and its declared closure only; its bin folder."""
    wheel = _wheel(tmp)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    purelib = sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)})
    site = Path(purelib)
    for dist in _closure(_core_requirements(wheel)).values():
        tops = {Path(f).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        for top in tops - {"__pycache__"}:
            target = Path(str(dist.locate_file(top)))
            if target.exists() and not (site / top).exists():
                (site / top).symlink_to(target)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [
            *pip,
            "--python",
            str(venv / "bin" / "python"),
            "install",
            "--no-index",
            "--no-compile",
            "--find-links",
            str(wheel.parent),
            "hyperframes-video",
        ],
        check=True,
        timeout=300,
    )
    return venv / "bin"


# the README's "Serving hyperframes" example (crop 24 on the tiny store), then train, eval and
# predict through the command line's own entry point, in one process (one torch import)
IN_THE_INSTALL = """
import sys
import hyperframes
from hyperframes.cli import main
from hyperframes.data import transforms as T

store, video = sys.argv[1:]
aug = T.Compose([T.RandomResizedCrop(24), T.RandomHorizontalFlip()])
ds = hyperframes.HyperframeDataset(store, sampler="random", frames=4, seed=0,
                                   layout="temporal", transform=aug,
                                   sampler_options={"stride": 2, "short": "pad"})
batch = next(iter(hyperframes.loader(ds, batch_size=2)))
assert tuple(batch.frames.shape) == (2, 4, 3, 24, 24), batch.frames.shape
for argv in (
    ["train", "c.yaml", "--out", "run", "--quiet"],
    ["eval", "run/best.pt", "--clips", "1", "--crops", "1"],
    ["predict", "run/best.pt", video, "--out", "pred"],
):
    assert main(argv) == 0, argv
assert main(["export", "run/best.pt", "--onnx", "m.onnx"]) == 1  # no [export] extra here
print("ok", hyperframes.__file__)
"""


@pytest.mark.slow
def test_a_default_install_trains_evaluates_and_predicts(tiny_motion_store, tmp_path):
    bin_ = _default_install(tmp_path)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    config = tiny_train_config(tiny_motion_store, epochs=1)
    config["data"]["augmentation"] = {"size": 24}
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(config))
    video = sorted((tiny_motion_store.parent / "videos").rglob("*.mp4"))[0]

    def run(*cmd: str) -> subprocess.CompletedProcess:
        done = subprocess.run(
            cmd, capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600
        )
        assert done.returncode == 0, f"{cmd}: {done.stderr[-3000:]}"
        return done

    assert run(str(bin_ / "hyperframes"), "--version").stdout.startswith("hyperframes ")
    done = run(str(bin_ / "python"), "-c", IN_THE_INSTALL, str(tiny_motion_store), str(video))
    assert str(tmp_path / "venv") in done.stdout.splitlines()[-1]  # the installed copy ran
    (said,) = [line for line in done.stderr.splitlines() if "hyperframes export" in line]
    assert "not installed here: onnx, onnxscript, onnxruntime." in said
    assert said.endswith("pip install 'hyperframes-video[export]'")
    assert (tmp_path / "pred").is_dir() and (tmp_path / "run" / "eval").is_dir()


@pytest.mark.slow
def test_python_m_build_makes_a_wheel_and_an_sdist_that_twine_accepts(tmp_path):
    """``python -m build`` (no isolation: offline, the lock's setuptools) makes both
    distributions under the free name ``hyperframes-video``; ``twine check`` renders the README
    as their long description and accepts them; the wheel still installs the ``hyperframes``
    package and command."""
    pytest.importorskip("build", reason="build is in the dev extra and the lock")
    pytest.importorskip("twine", reason="twine is in the dev extra and the lock")
    src = tmp_path / "src_copy"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "src", src / "src", ignore=shutil.ignore_patterns("__pycache__"))
    dist = tmp_path / "dist"
    cmd = [sys.executable, "-m", "build", "--no-isolation", "--sdist", "--wheel"]
    subprocess.run(
        [*cmd, "--outdir", str(dist), str(src)], check=True, capture_output=True, timeout=300
    )
    (wheel,) = dist.glob("hyperframes_video-*-py3-none-any.whl")
    (sdist,) = dist.glob("hyperframes_video-*.tar.gz")
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2, done.stdout
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (meta,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        text = z.read(meta).decode()
        (entry,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        assert "hyperframes = hyperframes.cli:main" in z.read(entry).decode()
    assert "Name: hyperframes-video\n" in text
    assert "hyperframes/__init__.py" in names and "Description-Content-Type: text/markdown" in text
    extras = {
        line.split(": ", 1)[1] for line in text.splitlines() if line.startswith("Provides-Extra")
    }
    wanted = {"export", "s3", "ray", "lightning", "hf", "mlflow", "torchcodec", "decord", "all"}
    assert wanted <= extras, wanted - extras
    assert "opencv-python-headless" in text.split("Provides-Extra")[0]  # a core dependency


# each optional extra hidden in a fresh interpreter, then the call that needs it: its error
# names the extra by the distribution's name (one line each)
EXTRA_ERRORS = """
import sys
for m in ("fsspec", "ray", "datasets", "mlflow", "lightning", "torchdata", "timm", "onnx"):
    sys.modules[m] = None
from pathlib import Path
from hyperframes import ConfigError, InputError
from hyperframes.build._ray_cluster import import_ray
from hyperframes.inputs._formats._hf_disk import read_hf_disk
from hyperframes.models import create
from hyperframes.remote import filesystem
from hyperframes.train._loop._mlflow import _import_mlflow

calls = {
    "s3": lambda: filesystem("s3://bucket/store"),
    "ray": import_ray,
    "hf": lambda: read_hf_disk(Path(sys.argv[1]), None),
    "mlflow": _import_mlflow,
    "lightning": lambda: __import__("hyperframes.integrations.lightning"),
    "torchdata": lambda: __import__("hyperframes.integrations.torchdata").integrations.torchdata.stateful_loader(None),
    "timm": lambda: create("channel_timm", num_classes=2, frames=2),
    "export": lambda: __import__("hyperframes.infer").infer.export_onnx(None, "m.onnx"),
}
for extra, call in calls.items():
    try:
        call()
    except (ConfigError, InputError) as e:
        said = str(e)
        assert f"pip install 'hyperframes-video[{extra}]'" in said and "\\n" not in said, said
    else:
        raise AssertionError(extra)
print("ok", len(calls))
"""


def test_each_missing_extra_is_named_in_its_error(tmp_path):
    saved = tmp_path / "saved"  # what detection takes for a save_to_disk folder
    saved.mkdir()
    (saved / "dataset_info.json").write_text("{}")
    (saved / "state.json").write_text("{}")
    done = subprocess.run(
        [sys.executable, "-c", EXTRA_ERRORS, str(saved)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok 8", done.stderr[-3000:]
