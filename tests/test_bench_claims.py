"""The claims table (benchmarks/bench_claims.py): its verdict rule, the committed results file
(every row names its seed article and a verdict of the rule's words) and its section of the
docs' performance page. The measurements themselves take minutes: ``make bench`` territory,
not a test."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
VERDICTS = ("holds", "does not hold", "inconclusive", "AMP: not measurable here")
KEYS = ("claim", "seed_article", "setup", "measured", "verdict")


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def claims():
    return _module("bench_claims")


def test_the_verdict_rule(claims):
    verdict = claims.verdict
    assert verdict([0.10, 0.12, 0.14]) == "holds"  # B above A by more than the spread
    assert verdict([0.10, 0.12, 0.14], sign=-1) == "does not hold"
    assert verdict([0.2, -0.1, 0.05]).startswith("inconclusive (spread larger")
    assert verdict([0.0, 0.001, -0.001], bound=0.003) == "holds"  # a cost within the bound
    assert verdict([0.05, 0.06, 0.04], bound=0.003) == "does not hold"
    assert verdict([0.002, 0.004, 0.0], bound=0.003).startswith("inconclusive")
    assert verdict([0.3]).startswith("inconclusive (one seed")


def test_the_committed_table_measures_every_claim_and_names_its_seed(claims):
    data = json.loads((RESULTS / "claims.json").read_text())
    rows = data["rows"]
    assert data["sizes"]["seeds"] >= 3
    if not data["partial"]:
        assert len(rows) >= len(claims.CLAIMS)
    for row in rows:
        assert set(KEYS) <= set(row), row
        assert re.fullmatch(r"00[0-4] §\d(\.\d)?", row["seed_article"]), row["seed_article"]
        if "values" in row:  # measured here (bench_latency.py's row keeps its own words)
            assert row["verdict"].startswith(VERDICTS), row["verdict"]
        assert row["setup"] and row["measured"]


def test_the_performance_page_shows_the_claims_and_skips_them_when_absent(tmp_path):
    table = _module("readme_table")
    res = tmp_path / "results"
    shutil.copytree(RESULTS, res)
    page = table.performance_page(res)
    rows = json.loads((res / "claims.json").read_text())["rows"]
    assert "## The seeds' claims, measured" in page
    assert "| claim | seed | setup | measured | verdict |" in page
    for row in rows:
        assert f"| {row['claim']} | {row['seed_article']} |" in page
    (res / "claims.json").unlink()
    assert "seeds' claims" not in table.performance_page(res)
