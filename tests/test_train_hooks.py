"""The epoch loop calls its hooks by name, at the points and in the order
:mod:`hyperframes.train._loop._hooks` lists: a newcomer adding one knows where it runs."""

from __future__ import annotations

from _stores import tiny_train_config
from hyperframes.train import run_training
from hyperframes.train._loop._hooks import CheckpointHook, EvaluationHook, LoggingHook, SignalHook

POINTS = {
    "logging": (
        LoggingHook,
        ("on_epoch_start", "on_micro_step", "on_step", "on_epoch_stop", "on_epoch_end"),
    ),
    "checkpoints": (CheckpointHook, ("on_step", "on_epoch_end")),
    "signals": (SignalHook, ("on_epoch_start", "on_step")),
    "evaluation": (EvaluationHook, ("on_epoch_end", "video_level")),
}


def test_the_hooks_run_at_their_points_in_order(tiny_motion_store, tmp_path, monkeypatch):
    calls: list[str] = []
    for concern, (cls, names) in POINTS.items():
        for name in (*names, "after_checkpoint") if cls is LoggingHook else names:
            real = getattr(cls, name)

            def recording(*args, _real=real, _said=f"{concern}.{name}", **kwargs):
                calls.append(_said)
                return _real(*args, **kwargs)

            monkeypatch.setattr(cls, name, recording)
    # 6 training videos in batches of 2: 3 micro-batches, in optimizer steps of 2 and 1
    cfg = tiny_train_config(tiny_motion_store, epochs=1, accumulate=2)
    summary = run_training(cfg, tmp_path / "run", progress=False)
    assert summary["steps"] == 2
    step = ["logging.on_step", "checkpoints.on_step", "signals.on_step"]
    micro = ["logging.on_micro_step"]
    assert calls == [
        "signals.on_epoch_start",
        "logging.on_epoch_start",
        *micro,
        *micro,
        *step,
        *micro,
        *step,
        "logging.on_epoch_stop",
        "evaluation.on_epoch_end",
        "logging.on_epoch_end",
        "checkpoints.on_epoch_end",
        "logging.after_checkpoint",
    ]
