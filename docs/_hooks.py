"""mkdocs hooks: the pages generated at build time, from the code and the result files.

- ``reference/cli.md``: every command's ``--help``, from the parser the command line uses
  (``hyperframes.cli._parser.build_parser``), so the reference cannot drift from the program;
- ``performance.md``: the measurements in ``benchmarks/results`` (``benchmarks/readme_table.py``),
  with the frontier picture ``codecs.png`` copied beside it when that file exists.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from pathlib import Path

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def cli_page() -> str:
    """Markdown of ``hyperframes --help`` and of each command's ``--help``."""
    sys.path.insert(0, str(ROOT / "src"))
    from hyperframes.cli._parser import build_parser

    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps help to the terminal's width
    try:
        parser = build_parser()
        parts = [
            "# Command line",
            "",
            "Generated from the parser of the `hyperframes` command at every docs build: what",
            "`hyperframes COMMAND --help` prints, command by command. Every command is also a",
            "function of the Python API (see [the API reference](api.md)).",
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
        ]
        for name, sub in _subcommands(parser).items():
            parts += ["", f"## {name}", "", "```text", sub.format_help().rstrip(), "```"]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(parts) + "\n"


def _readme_table():
    spec = importlib.util.spec_from_file_location(
        "readme_table", ROOT / "benchmarks" / "readme_table.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "reference/cli.md", content=cli_page()))
    table = _readme_table()
    picture = RESULTS / f"{table.FRONTIER}.png"
    if picture.exists():
        files.append(File.generated(config, f"{table.FRONTIER}.png", content=picture.read_bytes()))
    page = table.performance_page(RESULTS, image=f"{table.FRONTIER}.png")
    files.append(File.generated(config, "performance.md", content=page))
    return files
