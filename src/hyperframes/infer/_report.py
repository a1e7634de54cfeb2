"""What a prediction over a video reports (:class:`PredictReport`: windows, frames, speed, the
files written, the top classes), and which decoder it decodes with (:func:`choose_decoder`:
the one that built the model's store, unless asked otherwise, with a warning)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path

from .._core._errors import InputError
from ..decode import create_decoder
from ._prediction import Prediction

__all__ = ["PredictReport", "choose_decoder"]


@dataclass
class PredictReport:
    """What :func:`predict_video` did."""

    video: str
    checkpoint: str | None
    windows: int
    frames: int  # frames the model saw (after resampling)
    decoded: int  # frames decoded
    seconds: float
    reuse: bool
    outputs: list[Path] = field(default_factory=list)
    last: Prediction | None = None
    notes: list[str] = field(default_factory=list)
    #: the classes (by name) of highest probability averaged over the windows, best first
    top: list[tuple[str, float]] = field(default_factory=list)

    @property
    def fps(self) -> float:
        """Decoded frames per second of wall time, decoding included."""
        return self.decoded / self.seconds if self.seconds > 0 else 0.0

    def summary(self) -> str:
        lines = [
            f"{self.video}: {self.windows} windows over {self.frames} frames in "
            f"{self.seconds:.1f} s ({self.fps:.1f} frames/s"
            f"{', per-frame features reused' if self.reuse else ''})"
        ]
        if self.top:
            shown = ", ".join(f"{name} {p:.3f}" for name, p in self.top)
            lines.append(f"  mean probability over the windows: {shown}")
        lines += [f"  wrote {p}" for p in self.outputs]
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join(lines)


def choose_decoder(recorded: dict | None, asked: str | None) -> tuple[str, list[str]]:
    """(the decoder predict uses, notes): ``asked`` if given (a warning on stderr when it is
    not the ``recorded`` one, the decoder that built the model's store), else the recorded
    one, else pyav. A version other than the recorded one is said too."""

    notes: list[str] = []
    name = asked or (recorded["name"] if recorded else "pyav")
    if recorded is None:
        if asked is None:
            notes.append("the checkpoint does not record its store's decoder: decoding with pyav")
        return name, notes
    want = f"{recorded['name']} {recorded['version']}"
    if name != recorded["name"]:
        msg = (
            f"decoder {name} differs from the one that built the model's store ({want}); "
            "pixels differ between decoders and accuracy with them (leave --decoder out to "
            "use the recorded one)"
        )
        print(f"hyperframes predict: warning: {msg}", file=sys.stderr, flush=True)
        return name, [msg]
    try:
        version = create_decoder(name).version()
    except Exception as e:  # the recorded decoder is not installed here
        raise InputError(
            f"the model's store was built by {want}, which cannot be used here ({e}); install "
            "it, or choose another with --decoder (pixels differ between decoders)"
        ) from None
    if version != recorded["version"]:
        msg = f"decoder {name} {version} here, {want} built the model's store"
        print(f"hyperframes predict: warning: {msg}", file=sys.stderr, flush=True)
        notes.append(msg)
    return name, notes
