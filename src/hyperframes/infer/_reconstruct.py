"""Predict with a masked-video model (``masked_video``): reconstructions written as PNG.

``hyperframes predict RUN/best.pt VIDEO`` takes this path for a ``masked_video`` checkpoint
(:func:`predict_reconstructions`): such a model predicts no classes, it reconstructs the
masked tubes of a window. The video is decoded once, streaming, with the decoder of
:func:`~hyperframes.infer._video.choose_decoder`, each frame resampled to the contract's
``fps`` and resized to the store's size (what ``hyperframes build`` did), then to the model's
crop (:meth:`InputContract.resize_crop`). Windows of the model's T frames, ``frame_stride``
apart, start every ``stride`` frames of that grid, as in the class predictor. Each window is
prepared by the contract and run alone in eval mode, so every window gets the same mask, the
model's own (drawn from ``mask_seed``): the pictures of a window do not depend on the stride
or on the other windows, and the same video gives the same pictures again.

For each of the first ``windows`` windows (decoding stops there), ``recon_<first source
frame>.png``: rows of the window's frames, the visible patches (masked ones grey) and the
reconstruction (the picture of ``hyperframes eval --reconstructions``). ``reconstructions.json``
lists them with their source frames, masked/visible patch counts and the masked-patch PSNR in
dB (as ``eval`` computes it, per window), and their mean. PNGs are written atomically; a video
shorter than one window writes nothing.
"""

from __future__ import annotations

import os
import time
from collections import deque
from pathlib import Path

import numpy as np
import torch

from .._core._atomic import write_bytes_atomic, write_json_atomic
from .._core._errors import ConfigError, InputError
from ..decode import FpsResampler, create_decoder
from ..models import masked_patch_errors, picture_png, reconstruction_rows
from ..models import masked_psnr as psnr
from ._load import InferenceModel
from ._report import PredictReport, choose_decoder

__all__ = ["DEFAULT_WINDOWS", "predict_reconstructions"]

#: windows written when ``windows`` is not given: enough to look at, not one per frame
DEFAULT_WINDOWS = 16


def _grid(loaded: InferenceModel, video: Path, decoder: str, counter: list[int]):
    """Yield ``(source frame, (3, H, W) uint8 model-size frame)`` of the model's frame grid;
    ``counter[0]`` counts the frames decoded."""

    contract = loaded.contract
    resampler = FpsResampler(contract.fps) if contract.fps else None
    native = None

    def model_size(frame) -> torch.Tensor:
        nonlocal native
        if contract.size is None:
            rgb = frame.to_rgb()
        else:
            native = native or frame.to_rgb().shape[:2]
            rgb = frame.to_rgb(size=contract.store_size(*native))
        chw = torch.from_numpy(np.array(rgb)).permute(2, 0, 1)
        return contract.resize_crop(chw).contiguous()

    for frame in create_decoder(decoder).frames(os.fspath(video)):
        counter[0] += 1
        if resampler is None:
            yield counter[0] - 1, model_size(frame)
            continue
        for kept in resampler.push(frame):
            yield kept.source_index, model_size(kept.frame)
    if resampler is not None and counter[0]:
        for kept in resampler.finish():
            yield kept.source_index, model_size(kept.frame)


def _windows(loaded: InferenceModel, video: Path, decoder: str, stride: int, counter: list[int]):
    """Yield ``(source frames, (T, 3, H, W) uint8 window)`` every ``stride`` grid frames."""
    contract = loaded.contract
    span, step = contract.window_span(), contract.frame_stride
    held: deque[tuple[int, torch.Tensor]] = deque(maxlen=span)
    for i, item in enumerate(_grid(loaded, video, decoder, counter)):
        held.append(item)
        start = i - span + 1
        if start >= 0 and start % stride == 0:
            picked = list(held)[::step]
            yield [s for s, _ in picked], torch.stack([f for _, f in picked])


def _write(loaded: InferenceModel, pending: list, out: Path) -> list[dict]:
    """Run the ``pending`` windows ``(source frames, uint8 window)`` one a call (each gets the
    model's seeded mask), write their pictures into ``out``; their rows; ``pending`` emptied."""
    model, contract = loaded.model.eval(), loaded.contract
    frames = torch.stack([w for _, w in pending])
    with torch.inference_mode():
        x = contract.prepare(frames, device=next(model.parameters()).device)
        y = torch.cat([model(x[b : b + 1]) for b in range(len(x))]).float()
    _, mse, count = masked_patch_errors(y, frames)
    pictures = reconstruction_rows(y, frames)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for b, (sources, _) in enumerate(pending):
        name = f"recon_{sources[0]:06d}.png"
        write_bytes_atomic(out / name, picture_png(pictures, b))
        masked = int(count[b])
        rows.append(
            {
                "file": name,
                "source_frames": sources,
                "masked_patches": masked,
                "visible_patches": int(y.shape[1]) - masked,
                "psnr": psnr(float(mse[b])),
            }
        )
    pending.clear()
    return rows


def predict_reconstructions(
    loaded: InferenceModel,
    video: str | os.PathLike,
    *,
    out: str | os.PathLike | None = None,
    stride: int = 1,
    decoder: str | None = None,
    windows: int | None = None,
) -> PredictReport:
    """Write a masked-video model's reconstructions of ``video``'s windows as PNG into ``out``
    (default ``<video stem>_predict``): at most ``windows`` (None: :data:`DEFAULT_WINDOWS`),
    decoded by ``decoder`` (None: the contract's, see :func:`choose_decoder`); see the module
    doc."""

    if not loaded.traits.reconstructs:
        raise InputError(f"{loaded.path}: a {loaded.task} model, not a masked_video one")
    limit = DEFAULT_WINDOWS if windows is None else windows
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"reconstructions: a number of windows >= 1, got {windows!r}")
    video = Path(video)
    decoder, notes = choose_decoder(loaded.contract.decoder, decoder)
    create_decoder(decoder).probe(os.fspath(video))  # unreadable video: fail early
    out = Path(out) if out is not None else Path(f"{video.stem}_predict")
    model, contract = loaded.model, loaded.contract
    rows: list[dict] = []
    pending: list[tuple[list[int], torch.Tensor]] = []
    counter, t0 = [0], time.perf_counter()

    stream = _windows(loaded, video, decoder, stride, counter)
    try:
        for window in stream:
            pending.append(window)
            if len(rows) + len(pending) >= limit:
                break  # decoding stops here
            if len(pending) >= 8:  # bounded memory: 8 windows at a time
                rows += _write(loaded, pending, out)
    finally:
        stream.close()
    if pending:
        rows += _write(loaded, pending, out)
    if not rows:
        raise InputError(
            f"{video}: {counter[0]} frames decoded, fewer than the {contract.window_span()} a "
            "window needs; nothing written"
        )
    summary: dict = {"video": str(video), "checkpoint": loaded.path, "task": loaded.task}
    summary.update(decoder=decoder, stride=stride, contract=contract.to_dict())
    summary.update(mask_ratio=getattr(model, "mask_ratio", None))
    summary.update(mask_seed=getattr(model, "mask_seed", None))
    summary.update(mean_psnr=float(np.mean([r["psnr"] for r in rows])), windows=rows)
    listing = write_json_atomic(out / "reconstructions.json", summary)
    notes = [*loaded.notes, *notes]
    notes.append(f"masked-patch PSNR {summary['mean_psnr']:.2f} dB (mean over the windows)")
    return PredictReport(
        video=str(video),
        checkpoint=loaded.path,
        windows=len(rows),
        frames=len({s for r in rows for s in r["source_frames"]}),
        decoded=counter[0],
        seconds=time.perf_counter() - t0,
        reuse=False,
        outputs=[listing, out],
        notes=notes,
    )
