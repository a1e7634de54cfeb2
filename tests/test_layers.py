"""Imports show the layers (STYLE.md, "The house we mean to build").

Read from the source with ``ast`` (every import, at module level or deferred inside a function):

1. no module imports another package's ``_private`` module: what several packages share lives
   in ``hyperframes._core``; everything else goes through a package's public ``__init__``;
2. data flows one way: each package imports only the packages below it in the table.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1] / "src"
PACKAGE = ROOT / "hyperframes"

#: top-level private modules: the shared core, and the version (pyproject reads it there)
TOP_LEVEL_PRIVATE = {"_core", "_version"}

#: every package (and the top-level private modules)
_ALL = (
    "_core",
    "_version",
    "inputs",
    "remote",
    "decode",
    "store",
    "build",
    "sampling",
    "data",
    "models",
    "checkpoint",
    "train",
    "infer",
    "integrations",
    "viz",
    "bench",
    "demo",
    "cli",
)
#: package -> packages it never imports (directly or deferred); "cli" is imported by no one
NEVER = {
    "_core": set(_ALL) - {"_core"},
    "inputs": set(_ALL) - {"_core", "inputs"},
    "remote": set(_ALL) - {"_core", "remote"},
    "decode": {
        "inputs",
        "remote",
        "store",
        "build",
        "sampling",
        "data",
        "models",
        "checkpoint",
        "train",
        "infer",
        "cli",
        "demo",
        "bench",
    },
    "store": {
        "decode",
        "inputs",
        "build",
        "sampling",
        "data",
        "models",
        "checkpoint",
        "train",
        "infer",
        "cli",
        "demo",
        "bench",
        "viz",
    },
    "build": {
        "sampling",
        "data",
        "models",
        "checkpoint",
        "train",
        "infer",
        "cli",
        "demo",
        "bench",
        "viz",
        "integrations",
    },
    "sampling": {
        "decode",
        "inputs",
        "remote",
        "store",
        "build",
        "data",
        "models",
        "checkpoint",
        "train",
        "infer",
        "cli",
        "demo",
        "bench",
    },
    "data": {
        "inputs",
        "build",
        "models",
        "checkpoint",
        "train",
        "infer",
        "cli",
        "demo",
        "bench",
        "viz",
    },
    "models": {
        "decode",
        "inputs",
        "remote",
        "sampling",
        "data",
        "store",
        "build",
        "checkpoint",
        "train",
        "infer",
        "cli",
        "demo",
        "bench",
    },
    # pictures come from viz through the CLI or infer, not from train (issue 36)
    "train": {"infer", "viz", "cli", "demo", "bench"},
    # the checkpoint -> model + contract bundle (timm's PretrainedCfg role) lives below both
    # train and infer: it reads checkpoints, checks their config, rebuilds model and contract
    "checkpoint": {
        "inputs",
        "build",
        "train",
        "infer",
        "integrations",
        "viz",
        "cli",
        "demo",
        "bench",
    },
    # what serving a model needs from a run (metrics, pictures of an output, the checkpoint
    # bundle) lives below both (hyperframes.models, hyperframes.checkpoint)
    "infer": {"train", "cli", "demo", "bench"},
    "bench": {"models", "checkpoint", "train", "infer", "cli", "demo"},
    "viz": {"build", "checkpoint", "train", "infer", "cli", "demo", "bench"},
    "demo": {"cli"},
}
#: the only third-party library sampling may import ("nothing heavier than numpy")
SAMPLING_THIRD_PARTY = {"numpy"}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    p = ROOT.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, at module level) for every import in ``path``; ``from X import
    y`` names X.y when y is a module."""
    name = _module_name(path)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    tree = ast.parse(path.read_text(), str(path))
    top = {id(n) for n in tree.body}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            targets = {
                f"{module}.{a.name}"
                if module.startswith("hyperframes") and _is_module(f"{module}.{a.name}")
                else module
                for a in node.names
            }
            found += [(t, node.lineno, id(node) in top) for t in sorted(targets)]
    return found


def _all_imports() -> list[tuple[str, str, int, bool]]:
    return [
        (_module_name(p), target, line, top)
        for p in sorted(PACKAGE.rglob("*.py"))
        for target, line, top in _imports(p)
    ]


IMPORTS = _all_imports()


def _package(module: str) -> str:
    """``hyperframes.build._build`` -> ``store``; ``hyperframes._core._sizes`` -> ``_core``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private_owner(module: str) -> str | None:
    """The package whose private module ``module`` is (``hyperframes.data.transforms`` for
    ``hyperframes.data.transforms._base``), or None when ``module`` is public."""
    parts = module.split(".")
    for i, part in enumerate(parts[1:], 1):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:i])
    return None


def test_the_measurement_sees_imports():
    # the scan finds deferred imports, relative ones and `from . import _module`
    pairs = {(m, t) for m, t, _, _ in IMPORTS}
    assert ("hyperframes.cli._commands", "hyperframes.store") in pairs  # deferred, relative
    assert ("hyperframes.decode", "hyperframes.decode._pyav") in pairs  # from . import _pyav
    assert len(IMPORTS) > 300


def test_top_level_private_modules_are_the_core_and_the_version():
    private = {p.stem for p in PACKAGE.glob("_*.py") if not p.stem.startswith("__")}
    private |= {p.name for p in PACKAGE.glob("_*") if (p / "__init__.py").is_file()}
    assert private == TOP_LEVEL_PRIVATE


def test_no_module_imports_another_packages_private_module():
    bad = []
    for module, target, line, _ in IMPORTS:
        if not target.startswith("hyperframes."):
            continue
        owner = _private_owner(target)
        if owner is None:  # a public module
            continue
        if owner == "hyperframes":  # a top-level private module: the core or the version only
            if target.split(".")[1] not in TOP_LEVEL_PRIVATE:
                bad.append(f"{module}:{line} imports {target}")
            continue
        if module != owner and not module.startswith(owner + "."):
            bad.append(f"{module}:{line} imports {target}")
    assert not bad, "import these through the package's __init__ or _core:\n" + "\n".join(bad)


@pytest.mark.parametrize("package", sorted(NEVER))
def test_layers_import_downwards(package):
    bad = [
        f"{module}:{line} imports {target}"
        for module, target, line, _ in IMPORTS
        if _package(module) == package
        and target.startswith("hyperframes.")
        and _package(target) in NEVER[package]
    ]
    assert not bad, f"{package} never imports {sorted(NEVER[package])}:\n" + "\n".join(bad)


def test_nothing_imports_the_cli():
    bad = [
        f"{module}:{line} imports {target}"
        for module, target, line, _ in IMPORTS
        if _package(target) == "cli"
        and _package(module) != "cli"
        and module != "hyperframes.__main__"
    ]
    assert not bad, "\n".join(bad)


def test_the_core_depends_on_nothing_above_it():
    # not at module level, not deferred inside a function: resolving a contract from a config,
    # a checkpoint or a store lives in hyperframes.checkpoint (checkpoint/_contract.py)
    bad = [
        f"{module}:{line} imports {target}"
        for module, target, line, _ in IMPORTS
        if _package(module) == "_core"
        and target.startswith("hyperframes.")
        and _package(target) not in TOP_LEVEL_PRIVATE
    ]
    assert not bad, "\n".join(bad)


def test_no_import_circle_between_packages():
    edges: dict[str, set[str]] = {}
    for module, target, _, _ in IMPORTS:
        a, b = _package(module), _package(target)
        if target.startswith("hyperframes.") and a and b and a != b:
            edges.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt == goal:
                    return True
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return False

    circles = sorted(f"{a} -> {b} -> ... -> {a}" for a in edges for b in edges[a] if reaches(b, a))
    assert not circles, "\n".join(circles)


def test_sampling_imports_nothing_heavier_than_numpy():
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    third = {
        target.split(".")[0]
        for module, target, _, _ in IMPORTS
        if _package(module) == "sampling" and not target.startswith("hyperframes")
    } - stdlib
    assert third <= SAMPLING_THIRD_PARTY, third


def test_the_core_lists_its_modules():
    import hyperframes._core as core

    modules = sorted(p.stem for p in (PACKAGE / "_core").glob("_*.py") if p.stem != "__init__")
    missing = [m for m in modules if f"    {m} " not in (core.__doc__ or "")]
    assert not missing, f"hyperframes/_core/__init__.py does not describe {missing}"


def _deferred_without_reason(path: Path) -> list[str]:
    """Imports inside a function that say nowhere why they wait: no comment on their line or
    the line above, and not inside a ``try`` that catches ImportError (that says it)."""
    lines = path.read_text().splitlines()
    tree = ast.parse("\n".join(lines), str(path))
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(
            h.type is None or "Error" in ast.unparse(h.type) or "Exception" in ast.unparse(h.type)
            for h in node.handlers
        ):
            guarded |= {id(n) for stmt in node.body for n in ast.walk(stmt)}
    bad = []
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            if not isinstance(node, ast.Import | ast.ImportFrom) or id(node) in guarded:
                continue
            here, above = lines[node.lineno - 1], lines[node.lineno - 2].strip()
            end = lines[(node.end_lineno or node.lineno) - 1]
            if "#" not in here and "#" not in end and not above.startswith("#"):
                bad.append(f"{_module_name(path)}:{node.lineno} {here.strip()}")
    return sorted(set(bad))


def test_every_deferred_import_says_why():
    # an import inside a function waits for a reason (a heavy or optional dependency, the
    # CLI's lazy commands, a circle inside one package); the reason stands beside it
    bad = [b for p in sorted(PACKAGE.rglob("*.py")) for b in _deferred_without_reason(p)]
    assert not bad, "say why these imports are deferred (a comment):\n" + "\n".join(bad)


#: the names infer takes from train: none (the checkpoint -> model + contract bundle lives in
#: hyperframes.checkpoint; the metrics and pictures of a model's output in hyperframes.models)
INFER_FROM_TRAIN: set[str] = set()


def _names_imported_from(package: str, source: str) -> set[str]:
    """The names modules of ``package`` import (``from X import name``) from ``source``."""
    names = set()
    for path in sorted((PACKAGE / package).rglob("*.py")):
        here = _module_name(path)
        base = here if path.name == "__init__.py" else here.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                parts = base.split(".")[: len(base.split(".")) - node.level + 1]
                module = ".".join(parts + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            if _package(module) == source:
                names |= {a.name for a in node.names}
    return names


def test_infer_takes_nothing_from_train():
    extra = _names_imported_from("infer", "train") - INFER_FROM_TRAIN
    assert not extra, f"infer imports {sorted(extra)} from train; put them below both"


def test_serving_a_model_does_not_import_train():
    # the checkpoint bundle lives in hyperframes.checkpoint: infer (and reading a checkpoint)
    # load without the training package
    code = (
        "import sys, hyperframes.infer, hyperframes.checkpoint\n"
        "print(sorted(m for m in sys.modules if m.startswith('hyperframes.train')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


#: train's rooms, bottom up: each imports only rooms before it (issue 36)
TRAIN_ROOMS = ("_dist", "_tasks", "_config", "_eval", "_loop")


def _train_room(module: str) -> str | None:
    """``hyperframes.train._eval._predict`` -> ``_eval``; None outside a room of train."""
    parts = module.split(".")
    if parts[:2] != ["hyperframes", "train"] or len(parts) < 3:
        return None
    return parts[2]


def test_train_is_rooms():
    # train/ holds its public __init__ and its rooms only: no module left on the floor
    here = sorted(
        p.stem if p.is_file() else p.name
        for p in (PACKAGE / "train").iterdir()
        if p.name != "__init__.py" and (p.suffix == ".py" or (p / "__init__.py").is_file())
    )
    assert here == sorted(TRAIN_ROOMS)


def test_train_rooms_import_downwards_only():
    # every import between rooms (at module level, deferred or for type checking) goes down
    # the list: the rooms' import graph has no circle
    rank = {room: i for i, room in enumerate(TRAIN_ROOMS)}
    bad = []
    for module, target, line, _ in IMPORTS:
        a, b = _train_room(module), _train_room(target)
        if a and b and a != b and rank[b] > rank[a]:
            bad.append(f"{module}:{line} imports {target} ({a} is below {b})")
    assert not bad, "train's rooms import downwards only:\n" + "\n".join(bad)


#: the most imports of the package's own modules inside functions, outside the CLI (whose
#: commands load their code when they run): each waits for a reason it states (issue 36)
MAX_DEFERRED_OWN_IMPORTS = 12


def _deferred_own_imports(path: Path) -> list[str]:
    """``module:line`` of each import statement inside a function of ``path`` that imports
    one of the package's own modules (relative, or ``hyperframes...``)."""
    tree = ast.parse(path.read_text(), str(path))
    found = set()
    for func in ast.walk(tree):
        if not isinstance(func, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(func):
            own = (
                isinstance(node, ast.ImportFrom)
                and (node.level > 0 or (node.module or "").startswith("hyperframes"))
            ) or (
                isinstance(node, ast.Import)
                and any(a.name.startswith("hyperframes") for a in node.names)
            )
            if own:
                found.add(f"{_module_name(path)}:{node.lineno}")
    return sorted(found)


def test_the_deferred_count_sees_deferred_imports():
    # the measure below finds a relative import inside a function (the CLI's lazy commands)
    assert _deferred_own_imports(PACKAGE / "cli" / "_commands.py")


def test_few_deferred_imports_of_own_modules_outside_the_cli():
    found = [
        hit
        for p in sorted(PACKAGE.rglob("*.py"))
        if _package(_module_name(p)) != "cli"
        for hit in _deferred_own_imports(p)
    ]
    assert len(found) <= MAX_DEFERRED_OWN_IMPORTS, (
        f"{len(found)} imports of hyperframes' own modules inside functions (at most "
        f"{MAX_DEFERRED_OWN_IMPORTS}); import at module level where the layers allow:\n"
        + "\n".join(found)
    )
