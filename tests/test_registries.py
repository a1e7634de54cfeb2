"""Every registry of hyperframes, tested from its own entries (issue 36 item 5): each registered
name is built by its ``create_*`` (a cheap real check where building needs data), listed by its
``list_*``, and an unknown name is a ConfigError naming the known ones. Registering an entry is
enough to have it tested here.

Also pinned: no code branches on a task's name (issue 36 item 3); what a task is comes from its
registered traits."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
import torch

from hyperframes import models
from hyperframes._core._errors import ConfigError
from hyperframes._core._registry import Registry
from hyperframes._core._tasks import TASK_TRAITS, TaskTraits, task_traits
from hyperframes.data.transforms import Transform, create_transform, list_transforms
from hyperframes.decode import create_decoder, list_decoders
from hyperframes.inputs._formats import get_input_format, list_input_formats
from hyperframes.inputs._formats._registry import Probe
from hyperframes.sampling import Sampler, create_sampler, list_samplers
from hyperframes.store._codecs import create_codec, list_codecs
from hyperframes.train import create_task, list_tasks, register_task
from hyperframes.train._tasks._base import _TASKS, ClassificationTask, get_task

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "hyperframes"

#: the arguments an entry needs to be built (an entry not here is built with none)
SAMPLER_OPTIONS = {"duration": {"seconds": 1.0}, "motion": {"min_motion": 0.1}}
TRANSFORM_ARGS = {
    "resize": (8,),
    "center_crop": (8,),
    "random_crop": (8,),
    "random_resized_crop": (8,),
    "normalize": ([0.5] * 3, [0.25] * 3),
}


def _model(name: str) -> None:
    spec = models.get_spec(name)
    try:
        with torch.device("meta"):  # shapes only: no memory, no weights
            net = models.create(name, num_classes=3)
    except ConfigError as e:  # an optional package not installed here: the message says which
        assert spec.requires and "pip install" in str(e), e
        return
    assert net.registry_name == name and net.layout == spec.layout


def _task(name: str) -> None:
    task = create_task(name, ["a", "b", "c"])
    assert task.name == name and isinstance(task, get_task(name))
    assert type(task).traits is task_traits(name) and task_traits(name).name == name


def _sampler(name: str) -> None:
    sampler = create_sampler(name, frames=4, **SAMPLER_OPTIONS.get(name, {}))
    assert isinstance(sampler, Sampler) and sampler.name == name and sampler.frames == 4


def _codec(name: str) -> None:
    codec = create_codec(name)
    assert codec.name == name
    frames = np.random.default_rng(0).integers(0, 256, (1, 3, 16, 16), dtype=np.uint8)
    out = np.zeros_like(frames)
    codec.decode_into(codec.encode(frames), out)  # a real round trip of one frame
    if codec.lossless:
        np.testing.assert_array_equal(out, frames)
    else:
        assert np.abs(out.astype(int) - frames).mean() < 64


def _decoder(name: str) -> None:
    try:
        decoder = create_decoder(name)
    except ConfigError as e:  # its library is not installed here: the message says how to
        assert "install it with" in str(e), e
        return
    assert decoder.name == name


def _input_format(name: str, tmp: Path) -> None:
    fmt = get_input_format(name)
    assert fmt.name == name and fmt.summary
    assert fmt.detect(Probe(tmp)) in (0, 1, 2)  # an empty folder: no error, a score


def _transform(name: str) -> None:
    transform = create_transform(name, *TRANSFORM_ARGS.get(name, ()))
    assert isinstance(transform, Transform)


#: kind -> (list_*, a check that create_* builds the entry, how an unknown name is asked for)
REGISTRIES = {
    "model": (models.list_models, _model, models.create),
    "task": (list_tasks, _task, get_task),
    "sampler": (list_samplers, _sampler, lambda n: create_sampler(n, frames=4)),
    "codec": (list_codecs, _codec, create_codec),
    "decoder": (list_decoders, _decoder, create_decoder),
    "input format": (list_input_formats, _input_format, get_input_format),
    "transform": (list_transforms, _transform, create_transform),
}
ENTRIES = [(kind, name) for kind, (names, _, _) in REGISTRIES.items() for name in names()]


@pytest.mark.parametrize(("kind", "name"), ENTRIES, ids=[f"{k}:{n}" for k, n in ENTRIES])
def test_every_registered_entry_is_built(kind, name, tmp_path):
    names, check, _ = REGISTRIES[kind]
    assert name in names()
    if kind == "input format":
        check(name, tmp_path)
    else:
        check(name)


@pytest.mark.parametrize("kind", list(REGISTRIES))
def test_an_unknown_name_lists_the_known_ones(kind):
    names, _, create = REGISTRIES[kind]
    known = names()
    assert len(known) >= 2 and len(set(known)) == len(known)
    with pytest.raises(ConfigError, match=rf"unknown {kind} 'no_such_thing'; known: ") as e:
        create("no_such_thing")
    assert all(n in str(e.value) for n in known)
    typo = known[0][:-1] + "x"  # one letter off: the closest names are suggested
    with pytest.raises(ConfigError, match=rf"did you mean .*{known[0]}"):
        create(typo)


def test_registry_refuses_a_name_twice_and_looks_up_lazily():
    loaded = []
    reg: Registry[int] = Registry("widget", hint="add one", load=lambda: loaded.append(1))
    reg.register("one", 1)
    assert reg.register("two")(2) == 2 and not loaded
    with pytest.raises(ConfigError, match=r"widget 'one' is already registered \(int\)"):
        reg.register("one", 3)
    assert reg.names() == ["one", "two"] and loaded == [1]
    assert reg.get("three", None) is None and reg.get("one") == 1
    with pytest.raises(ConfigError, match=r"unknown widget 'onr'; known: one, two \(add one\)"):
        reg.get("onr")
    with pytest.raises(ConfigError, match="a widget name must be a non-empty string"):
        reg.register("", 0)
    free: Registry[int] = Registry("widget", replace=True)
    free.register("one", 1)
    assert free.register("one", 2) == 2 and free.get("one") == 2


def test_a_users_task_brings_its_traits_to_every_part():
    class Boxes(ClassificationTask):
        name = "test_only_boxes"
        traits = TaskTraits("test_only_boxes", boxes=True)

    class Plain(ClassificationTask):
        name = "test_only_plain"

    try:
        register_task(Boxes)
        register_task(Plain)
        assert task_traits("test_only_boxes").spatial  # what infer sees, without train
        # a task without traits of its own: class scores, not its parent's
        assert task_traits("test_only_plain") == TaskTraits("test_only_plain")
        assert Plain.traits == TaskTraits("test_only_plain")
    finally:
        for name in ("test_only_boxes", "test_only_plain"):
            _TASKS.pop(name, None)
            TASK_TRAITS.pop(name, None)

    class Wrong(ClassificationTask):
        name = "test_only_wrong"
        traits = TaskTraits("other")

    with pytest.raises(ConfigError, match="traits of the class's own name"):
        register_task(Wrong)
    assert "test_only_wrong" not in list_tasks()
    # a task registered nowhere in this process (a checkpoint's): class scores
    assert task_traits("test_only_unknown") == TaskTraits("test_only_unknown")


def _compares_a_task_name(node: ast.Compare) -> bool:
    """``task == "x"``, ``self.task != "x"``, ``x.get("task") in ("a", "b")``, ..."""

    def is_task(n: ast.AST) -> bool:
        if isinstance(n, ast.Name | ast.Attribute):
            return (n.id if isinstance(n, ast.Name) else n.attr) == "task"
        if isinstance(n, ast.Call) and n.args and isinstance(n.args[0], ast.Constant):
            return n.args[0].value == "task"  # r.get("task")
        return False

    def is_text(n: ast.AST) -> bool:
        if isinstance(n, ast.Tuple | ast.List | ast.Set):
            return any(is_text(e) for e in n.elts)
        return isinstance(n, ast.Constant) and isinstance(n.value, str)

    sides = [node.left, *node.comparators]
    return any(is_task(s) for s in sides) and any(is_text(s) for s in sides)


def test_no_code_branches_on_a_task_name():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cli" in path.relative_to(PACKAGE).parts:  # the CLI's choices are its own
            continue
        text = path.read_text()
        if "task" not in text:
            continue
        for node in ast.walk(ast.parse(text, str(path))):
            if isinstance(node, ast.Compare) and _compares_a_task_name(node):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not found, "ask the task's traits or its Task class instead:\n" + "\n".join(found)
