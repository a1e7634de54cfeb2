"""Start-up: the commands people run all the time (--help, info, verify, show) import neither
torch nor the training code. Checked by what a fresh interpreter has imported, not by timing."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from hyperframes.build import BuildOptions, build_store

HEAVY = ("torch", "torchvision", "hyperframes.train", "hyperframes.models", "ray")

RUN = """
import json, sys
from hyperframes.cli import main
try:
    code = main(sys.argv[2:])
except SystemExit as e:
    code = e.code
heavy = [m for m in json.loads(sys.argv[1]) if m in sys.modules]
sys.stdout.flush()
print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
"""


@pytest.fixture(scope="module")
def store(class_folder, tmp_path_factory):
    out = tmp_path_factory.mktemp("startup") / "s"
    build_store(class_folder, out, BuildOptions(size="16"), progress=False)
    return str(out)


def _imports(argv: list[str]) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    return json.loads(done.stderr.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["--version"],
        ["info", "{store}"],
        ["info", "{store}", "--json"],
        ["verify", "{store}"],
        ["show", "{store}", "--video", "1", "--frames", "4", "--out", "{png}"],
        ["build", "--help"],
        ["show", "--help"],
        ["train", "--help"],
        ["eval", "--help"],
    ],
    ids=lambda a: " ".join(x for x in a if not x.startswith("{")),
)
def test_everyday_commands_import_no_torch(store, tmp_path, argv):
    argv = [a.format(store=store, png=tmp_path / "w.png") for a in argv]
    got = _imports(argv)
    assert got["code"] == 0
    assert got["heavy"] == [], f"hyperframes {' '.join(argv)} imported {got['heavy']}"
