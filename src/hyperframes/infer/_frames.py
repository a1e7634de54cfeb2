"""Predict with a frame-task model (interpolation, super-resolution): frames written as PNG.

``hyperframes predict RUN/best.pt VIDEO`` takes this path when the checkpoint's contract has a
``frame_task`` (:func:`predict_frames`). Frames are decoded once, streaming, at the store's
size (what ``hyperframes build`` did; the store's ``fps`` is not resampled to: windows run over
the decoded frames, and a note says so when the rates differ). Two modes:

* default, new frames: **interpolation** writes a frame between each pair of consecutive frames
  ``i, i + 1`` (``between_<i>_<i+1>.png``): the window is the T - 1 frames around the gap with
  the new frame's place in the middle; **super-resolution** takes the decoded frames as the
  low-resolution input and writes each window's key frame ``factor`` times larger
  (``upscaled_<i>.png``).
* ``reconstruct=True``, what training measured: interpolation predicts each window's middle
  frame from the others, super-resolution first downscales the window with the contract's
  filter and factor; each output (``<kind>_<i>.png``) is scored against the real frame, PSNR
  and SSIM of the model and of the baseline, in ``frames.json``.

``frames.json`` lists every written frame (file, source frames, scores in reconstruct mode).
Windows start every ``stride`` frames. PNGs are written atomically (no partial file).
"""

from __future__ import annotations

import io
import os
import time
from collections import deque
from pathlib import Path

import numpy as np
import torch

from .._core._atomic import write_atomic, write_json_atomic
from .._core._errors import InputError
from ..decode import create_decoder
from ..models import bicubic_upscale, downscale, neighbour_blend, psnr, ssim
from ._load import InferenceModel
from ._report import PredictReport

__all__ = ["predict_frames"]


def _png(path: Path, chw: torch.Tensor) -> Path:
    """Write a (3, H, W) frame in [0, 1] (float) or uint8 as an RGB PNG, atomically."""
    from PIL import Image  # matplotlib's dependency, installed with hyperframes

    if chw.is_floating_point():
        chw = (chw.clamp(0, 1) * 255).round().to(torch.uint8)
    img = Image.fromarray(np.ascontiguousarray(chw.permute(1, 2, 0).cpu().numpy()))
    buf = io.BytesIO()
    img.save(buf, format="PNG")
    return write_atomic(path, lambda f: f.write(buf.getvalue()))


class _Windows:
    """What one mode takes from the frame stream: the window ending at the newest frame."""

    def __init__(self, kind: str, frames: int, reconstruct: bool, factor: int, filt: str):
        self.kind, self.t, self.reconstruct = kind, frames, reconstruct
        self.factor, self.filter = factor, filt
        # interpolation of new frames needs T - 1 real frames; every other mode T
        self.span = frames - 1 if kind == "interpolation" and not reconstruct else frames

    def make(self, held: list[torch.Tensor], first: int):
        """``(model window (T, 3, h, w) uint8, name, source frames, real frame or None)``."""
        k = self.t // 2
        if self.kind == "interpolation":
            if self.reconstruct:
                real = held[k]
                window = torch.stack(held).clone()
                window[k] = 0
                return window, f"interpolation_{first + k:06d}.png", [first + k], real
            blank = torch.zeros_like(held[0])
            window = torch.stack([*held[:k], blank, *held[k:]])
            pair = [first + k - 1, first + k]
            return window, f"between_{pair[0]:06d}_{pair[1]:06d}.png", pair, None
        window = torch.stack(held)
        if self.reconstruct:
            low = downscale(window, self.factor, self.filter)
            return low, f"super_resolution_{first + k:06d}.png", [first + k], held[k]
        return window, f"upscaled_{first + k:06d}.png", [first + k], None


def _baseline(kind: str, window: torch.Tensor, factor: int) -> torch.Tensor:
    x = window.to(torch.float32) / 255
    if kind == "interpolation":
        return neighbour_blend(x)
    return bicubic_upscale(x[:, x.shape[1] // 2], factor).clamp(0, 1)


def _held_windows(dec, video: Path, contract, span: int):
    """For each decoded frame of ``video``: (the first frame of the window of the last ``span``
    frames, those frames as (3, h, w) uint8 at the store's size), the first None until
    ``span`` frames are held."""
    held: deque[torch.Tensor] = deque(maxlen=span)
    native = None
    for i, frame in enumerate(dec.frames(os.fspath(video))):
        if contract.size is None:
            rgb = frame.to_rgb()
        else:
            native = native or frame.to_rgb().shape[:2]
            rgb = frame.to_rgb(size=contract.store_size(*native))
        held.append(torch.from_numpy(np.array(rgb)).permute(2, 0, 1).contiguous())
        yield (i - span + 1 if len(held) == span else None), list(held)


class _FrameWriter:
    """Runs the model over the windows gathered in ``pending`` and writes each output frame as
    PNG into ``out``, with its row of ``frames.json`` (scores when the real frame is known)."""

    def __init__(self, loaded: InferenceModel, out: Path, kind: str) -> None:
        self.loaded, self.out, self.kind = loaded, out, kind
        self.pending: list[tuple] = []
        self.rows: list[dict] = []

    def run(self) -> None:
        if not self.pending:
            return
        contract, model = self.loaded.contract, self.loaded.model
        x = torch.stack([p[0] for p in self.pending])
        model_in = contract.prepare(x, device=next(model.parameters()).device)
        with torch.inference_mode():
            y = model(model_in).float().cpu()
        for (window, name, sources, real), frame in zip(self.pending, y):
            row: dict = {"file": name, "source_frames": sources}
            if real is not None:
                row.update(_scores(self.kind, window, frame, real, contract.downscale))
            _png(self.out / name, frame)
            self.rows.append(row)
        self.pending.clear()


def _scores(kind: str, window: torch.Tensor, frame: torch.Tensor, real: torch.Tensor, factor: int):
    """PSNR and SSIM of the model's ``frame`` and of the baseline against the ``real`` one."""
    truth = real[None].to(torch.float32) / 255
    base = _baseline(kind, window[None], factor)
    return {
        "psnr": float(psnr(frame[None], truth)[0]),
        "ssim": float(ssim(frame[None], truth)[0]),
        "baseline_psnr": float(psnr(base, truth)[0]),
        "baseline_ssim": float(ssim(base, truth)[0]),
    }


def predict_frames(
    loaded: InferenceModel,
    video: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    stride: int = 1,
    batch_size: int = 8,
    decoder: str = "pyav",
    reconstruct: bool = False,
) -> PredictReport:
    """Run a frame-task model over ``video`` and write its frames as PNG into ``out`` (default
    ``<video stem>_predict``); see the module doc."""

    contract, video = loaded.contract, Path(video)
    ft = contract.frame_task
    if ft is None:
        raise InputError(f"{loaded.path}: not an interpolation or super-resolution model")
    dec = create_decoder(decoder)
    info = dec.probe(os.fspath(video))
    out = Path(out) if out is not None else Path(f"{video.stem}_predict")
    out.mkdir(parents=True, exist_ok=True)
    filt = str(ft.get("filter", "bicubic"))
    wins = _Windows(ft["kind"], contract.frames, reconstruct, contract.downscale, filt)
    notes = list(loaded.notes)
    if contract.fps is not None and info.fps and abs(float(info.fps) - contract.fps) > 1e-3:
        notes.append(
            f"the model was trained at {contract.fps:g} fps, the video is at {info.fps:g}: "
            "windows run over the decoded frames as they are"
        )
    t0 = time.perf_counter()
    writer = _FrameWriter(loaded, out, ft["kind"])
    decoded = 0
    for first, held in _held_windows(dec, video, contract, wins.span):
        decoded += 1
        if first is not None and first % stride == 0:
            writer.pending.append(wins.make(held, first))
            if len(writer.pending) >= batch_size:
                writer.run()
    writer.run()
    rows = writer.rows
    if not rows:
        raise InputError(
            f"{video}: {decoded} frames decoded, fewer than the {wins.span} a window needs; "
            "nothing written"
        )
    summary: dict = {"video": str(video), "checkpoint": loaded.path, "task": loaded.task}
    summary.update(reconstruct=reconstruct, contract=contract.to_dict(), frames=rows)
    scored = [r for r in rows if "psnr" in r]
    for key in ("psnr", "ssim", "baseline_psnr", "baseline_ssim") if scored else ():
        summary[f"mean_{key}"] = float(np.mean([r[key] for r in scored]))
    listing = write_json_atomic(out / "frames.json", summary)
    if scored:
        notes.append(
            f"PSNR {summary['mean_psnr']:.2f} dB against the real frames (baseline "
            f"{summary['mean_baseline_psnr']:.2f} dB)"
        )
    return PredictReport(
        video=str(video),
        checkpoint=loaded.path,
        windows=len(rows),
        frames=decoded,
        decoded=decoded,
        seconds=time.perf_counter() - t0,
        reuse=False,
        outputs=[listing, out],
        notes=notes,
    )
