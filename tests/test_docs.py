"""The docs site (issue 37): ``make docs`` builds it strictly (a broken link or reference fails)
into site/; headless Chromium opens the built site, follows every navigation link without a
console error or a missing file, and the search finds "RandomResizedCrop". The CLI reference is
the parser's, and the performance page shows the codec frontier when its picture exists and
the latency table when `latency.json` does.

The build takes seconds; it is skipped when site/ was built from the same inputs (docs, the
package's sources, the benchmark results), so the suite pays for it only after a change."""

from __future__ import annotations

import hashlib
import http.server
import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from _chromium import CHROMIUM, SKIP_REASON, Browser

ROOT = Path(__file__).resolve().parents[1]
SITE = ROOT / "site"
STAMP = SITE / ".built-from"


def _inputs_digest() -> str:
    files = [ROOT / "mkdocs.yml", ROOT / "benchmarks" / "readme_table.py"]
    for folder, pattern in (
        (ROOT / "docs", "*"),
        (ROOT / "src" / "hyperframes", "*.py"),
        (ROOT / "benchmarks" / "results", "*"),
    ):
        files += sorted(folder.rglob(pattern))
    h = hashlib.sha256()
    for f in files:
        if f.is_file() and "__pycache__" not in f.parts:
            h.update(str(f.relative_to(ROOT)).encode() + b"\0" + f.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def site() -> Path:
    """site/, built as ``make docs`` builds it unless it was built from these very inputs."""
    digest = _inputs_digest()
    if STAMP.exists() and STAMP.read_text() == digest:
        return SITE
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", str(SITE)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    STAMP.write_text(digest)
    return SITE


def test_the_makefile_builds_the_docs_strictly():
    makefile = (ROOT / "Makefile").read_text()
    assert "\ndocs: setup\n" in makefile and "mkdocs build --strict" in makefile
    assert "strict: true" in (ROOT / "mkdocs.yml").read_text()


def test_the_cli_reference_is_every_command_of_the_parser(site):
    from hyperframes.cli._parser import build_parser

    (sub,) = [a for a in build_parser()._actions if a.__class__.__name__ == "_SubParsersAction"]
    page = (site / "reference" / "cli.html").read_text()
    for name in sub.choices:
        assert f'id="{name}"' in page, name
        assert f"usage: hyperframes {name}" in page, name
    assert "--chunk-frames" in page and "--budget" in page  # build's and plan's own options


def test_every_readme_section_has_a_page(site):
    for page in (
        "getting-started",
        "concepts/store",
        "concepts/windows",
        "concepts/pipeline",
        "concepts/tracks",
        "concepts/input-contract",
        "guides/datasets",
        "guides/training",
        "guides/self-supervised",
        "guides/dense",
        "guides/inference",
        "guides/scaling",
        "guides/integrations",
        "guides/practical",
        "reference/api",
        "reference/format",
        "performance",
        "reliability",
        "development",
    ):
        assert (site / f"{page}.html").exists(), page
    api = (site / "reference" / "api.html").read_text()
    assert "HyperframeDataset" in api and "Predictor" in api and "open_store" in api
    assert "manifest.json" in (site / "reference" / "format.html").read_text()


def _table():
    """benchmarks/readme_table.py as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("rt", ROOT / "benchmarks" / "readme_table.py")
    assert spec is not None and spec.loader is not None
    table = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(table)
    return table


def _frontier(tmp: Path, picture: bool):
    table = _table()
    res = tmp / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", res)
    for name in ("codecs.png", "codecs.json"):
        (res / name).unlink(missing_ok=True)
    if picture:
        from PIL import Image

        Image.new("RGB", (8, 8)).save(res / "codecs.png")
        rows = [{"reader": "hyperframes lz4", "bytes": 1.5e6, "windows_per_s": 5181.0}]
        (res / "codecs.json").write_text(json.dumps({"rows": rows}))
    readme = tmp / "README.md"
    readme.write_text(f"intro\n{table.README_START}\nold\n{table.README_END}\nrest\n")
    table.refresh_readme(res, readme)
    return table.performance_page(res, image="codecs.png"), readme.read_text()


def test_the_frontier_picture_is_shown_when_present_and_absent_without_failing(tmp_path):
    page, readme = _frontier(tmp_path / "with", picture=True)
    assert "![bytes stored against windows/s" in page and "(codecs.png)" in page
    assert "| hyperframes lz4 | 1.5e+06 | 5.18e+03 |" in page
    assert "(benchmarks/results/codecs.png)" in readme and "old" not in readme
    page, readme = _frontier(tmp_path / "without", picture=False)
    assert "codecs.png" not in page and "## The measurements" in page
    assert "codecs.png" not in readme and readme.endswith("-->\nrest\n")


def test_the_latency_table_is_on_the_performance_page_when_measured(tmp_path):
    table, res = _table(), tmp_path / "results"
    shutil.copytree(ROOT / "benchmarks" / "results", res)
    latency = json.loads((res / "latency.json").read_text())
    page = table.performance_page(res)
    assert "## Latency per output frame: keyframe model vs 3D CNNs" in page
    row = latency["devices"]["cpu"]["112"]["r3d_18"]
    assert f"| cpu | 112 | `r3d_18` | 33.17M | {row['gflops_per_output_frame']:.2f} |" in page
    (res / "latency.json").unlink()
    page = table.performance_page(res)
    assert "Latency per output frame" not in page and "## The measurements" in page


class _Quiet(http.server.SimpleHTTPRequestHandler):
    missing: ClassVar[list[str]] = []

    def log_message(self, *args) -> None:
        pass

    def send_error(self, code, *args, **kwargs):
        self.missing.append(f"{code} {self.path}")
        super().send_error(code, *args, **kwargs)


@pytest.fixture(scope="module")
def served(site):
    """The built site on http://127.0.0.1:PORT/ (the search's worker needs http, not file:)."""
    handler = type("Handler", (_Quiet,), {"missing": []})
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a: handler(*a, directory=str(site))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", handler.missing
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def browser(served, tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip(SKIP_REASON)
    with Browser(tmp_path_factory.mktemp("chromium")) as b:
        yield b


NAV_LINKS = """Array.from(document.querySelectorAll('nav.md-nav--primary a.md-nav__link[href]'))
  .map(a => a.href.split('#')[0])"""


def test_chromium_follows_every_navigation_link_without_an_error(served, browser):
    base, missing = served
    browser.open(base + "index.html")
    links = sorted({u for u in browser.evaluate(NAV_LINKS) if u.startswith(base)})
    assert len(links) >= 25, links
    titles = {}
    for url in links:
        browser.open(url, settle=0.1)
        titles[url] = browser.evaluate("document.querySelector('article h1')?.textContent")
    assert browser.errors == [] and missing == []
    assert all(titles.values()), [u for u, t in titles.items() if not t]


SEARCH = """(async () => {
  const input = document.querySelector('input.md-search__input');
  input.focus();
  input.value = 'RandomResizedCrop';
  for (const kind of ['focus', 'input', 'keyup', 'change'])
    input.dispatchEvent(new Event(kind, {bubbles: true}));
  for (let i = 0; i < 200; i++) {
    const hits = document.querySelectorAll('.md-search-result__item a');
    if (hits.length) return Array.from(hits).map(a => a.href);
    await new Promise(r => setTimeout(r, 50));
  }
  return [];
})()"""


def test_the_search_finds_random_resized_crop(served, browser):
    base, missing = served
    browser.open(base + "index.html", settle=1.0)
    hits = browser.evaluate(SEARCH)
    assert hits, "no search result for RandomResizedCrop"
    assert any("concepts/pipeline.html" in h or "concepts/windows.html" in h for h in hits), hits
    assert browser.errors == [] and missing == []
