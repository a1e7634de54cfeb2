"""What a model's output shows, below both ``train`` and ``infer``: the frame metrics (PSNR,
SSIM), the frame tasks' downscaling, the masked patches' errors and reconstruction pictures of
a ``video_mae``, the hidden picture of a keyframe model. Training computes them on validation
windows, prediction on a video's windows; neither imports the other for them.

* **PSNR** of one frame (:func:`psnr`): ``10 log10(1 / MSE)`` over its pixels and channels,
  values clipped to [0, 1] first; an identical frame counts as 100 dB.
* **SSIM** of one frame (:func:`ssim`): the mean over channels and positions of Wang et al.'s
  index with an 11 x 11 Gaussian window (sigma 1.5; smaller frames: a window of their short
  side), valid positions only, ``C1 = 0.01**2``, ``C2 = 0.03**2`` on the [0, 1] scale.
* **Masked patches** (:func:`masked_patch_errors`): a ``video_mae`` output (B, T*N, P + 1)
  against its window's uint8 frames; the loss normalises each true patch by its own mean and
  standard deviation, the pixel error de-normalises the prediction with them. An output whose
  mask column holds 2.0 (``target: delta``) predicts **frame differences** instead: the
  target of frame t is frame t minus frame t-1 (frame 0: frame 1 minus frame 0), divided by
  the root mean square of the window's differences; the pixel error is that of the
  differences.
* **Hidden picture** (:func:`hidden_picture`): a keyframe model's K_t beside the first three
  principal components of its H_t (:func:`~hyperframes._core._pictures.pca_rgb`).
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn

from .._core._contract import DOWNSCALE_FILTERS
from .._core._errors import ConfigError, DataError
from .._core._pictures import pca_rgb
from ._base import as_keyframes
from ._mae import patchify, unpatchify

__all__ = [
    "downscale",
    "hidden_picture",
    "masked_patch_errors",
    "masked_psnr",
    "patch_errors",
    "picture_png",
    "psnr",
    "reconstruction_rows",
    "ssim",
    "takes_recipe",
]

MAX_PSNR = 100.0  # dB given to a frame reproduced exactly
EPS = 1e-6


def psnr(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-frame PSNR (B,) in dB of (B, C, H, W) frames in [0, 1] (module doc)."""
    mse = (pred.clamp(0, 1) - target.clamp(0, 1)).square().flatten(1).mean(1)
    return torch.where(mse > 0, -10 * torch.log10(mse.clamp_min(1e-30)), MAX_PSNR)


def _gaussian(side: int, sigma: float = 1.5) -> torch.Tensor:
    x = torch.arange(side, dtype=torch.float64) - (side - 1) / 2
    g = torch.exp(-(x**2) / (2 * sigma**2))
    g = g / g.sum()
    return g[:, None] * g[None, :]


def ssim(pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """Per-frame SSIM (B,) of (B, C, H, W) frames in [0, 1] (module doc)."""
    # float64: the variances are differences of close numbers, small beside C2
    x, y = pred.clamp(0, 1).double(), target.clamp(0, 1).double()
    c = x.shape[1]
    side = min(11, x.shape[-2], x.shape[-1])
    w = _gaussian(side).to(x.device, torch.float64).expand(c, 1, side, side)

    def blur(z):
        return F.conv2d(z, w, groups=c)

    mx, my = blur(x), blur(y)
    vx, vy = blur(x * x) - mx * mx, blur(y * y) - my * my
    cov = blur(x * y) - mx * my
    c1, c2 = 0.01**2, 0.03**2
    s = ((2 * mx * my + c1) * (2 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2))
    return s.flatten(1).mean(1).to(torch.float32)


def downscale(frames: torch.Tensor, factor: int, filter: str = "bicubic") -> torch.Tensor:
    """uint8 frames (..., C, H, W) made ``factor`` times smaller, uint8 (..., C, H/f, W/f):
    ``"bicubic"`` (PyTorch's antialiased bicubic, rounded) or ``"area"`` (the mean of each
    f x f block, rounded). H and W must be multiples of ``factor``."""
    if filter not in DOWNSCALE_FILTERS:
        raise ConfigError(f"filter {filter!r}: allowed: {', '.join(DOWNSCALE_FILTERS)}")
    h, w = frames.shape[-2:]
    if h % factor or w % factor:
        raise DataError(
            f"frames of {h} x {w} pixels cannot be downscaled {factor} times exactly; build "
            f"the store at a size whose sides are multiples of {factor} (--size {h - h % factor}x"
            f"{w - w % factor})"
        )
    lead = frames.shape[:-3]
    x = frames.reshape(-1, *frames.shape[-3:]).to(torch.float32)
    if filter == "area":
        y = F.avg_pool2d(x, factor)
    else:
        size = (h // factor, w // factor)
        y = F.interpolate(x, size=size, mode="bicubic", align_corners=False, antialias=True)
    y = y.round_().clamp_(0, 255).to(torch.uint8)
    return y.reshape(*lead, *y.shape[-3:])


#: the mask column of a ``video_mae`` output at a masked token: what its prediction is of
MASKED_PIXELS, MASKED_DELTA = 1.0, 2.0
#: floor of the windows' frame-difference RMS (a still window is not scaled up from noise)
DELTA_FLOOR = 0.01


def frame_differences(frames: torch.Tensor) -> torch.Tensor:
    """(B, T, C, H, W) -> each frame minus the one before (frame 0: frame 1 minus frame 0)."""
    if frames.shape[1] < 2:
        raise DataError(
            f"frame differences need windows of 2 or more frames, got T={frames.shape[1]}"
        )
    d = frames[:, 1:] - frames[:, :-1]
    return torch.cat([d[:, :1], d], dim=1)


def _split(out: torch.Tensor, frames: torch.Tensor):
    """``(pred, target patches, masked, delta)`` of a model output and its uint8 frames:
    the target is the frames in [0, 1], or their differences when ``delta`` (module doc)."""
    if out.dim() != 3 or frames.dim() != 5:
        raise DataError(
            f"the masked_video task takes the output (B, T*N, P+1) of a video_mae model and "
            f"frames (B, T, C, H, W); got {tuple(out.shape)} and {tuple(frames.shape)}"
        )
    c = frames.shape[2]
    patch = math.isqrt((out.shape[-1] - 1) // c)
    flag = out[..., -1]
    delta = bool((flag > (MASKED_PIXELS + MASKED_DELTA) / 2).any())
    values = frames.to(out.device, torch.float32) / 255.0
    target = patchify(frame_differences(values) if delta else values, patch)
    if target.shape != out[..., :-1].shape:
        raise DataError(
            f"masked_video: the model predicts patches {tuple(out[..., :-1].shape)} but the "
            f"frames give {tuple(target.shape)}; the frames must be the window the model saw"
        )
    return out[..., :-1], target, flag > 0.5, delta


def _normaliser(target: torch.Tensor, delta: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """``(mean, std)`` the loss normalises ``target`` (B, L, P) with: each patch's own, or for
    frame differences zero and the window's root mean square (at least ``DELTA_FLOOR``)."""
    if delta:
        rms = target.square().mean((1, 2), keepdim=True).sqrt().clamp_min(DELTA_FLOOR)
        return torch.zeros_like(rms), rms
    mean = target.mean(-1, keepdim=True)
    return mean, (target.var(-1, keepdim=True, unbiased=False) + EPS).sqrt()


def patch_errors(out: torch.Tensor, frames: torch.Tensor):
    """``(loss, pixel error, masked)`` per token (B, L): the squared error of the prediction
    against the normalised true patch, that of the de-normalised prediction (clipped to the
    target's range: [0, 1], differences [-1, 1]) against the true values (means over the
    patch's values), the mask."""
    pred, target, masked, delta = _split(out, frames)
    mean, std = _normaliser(target, delta)
    per_patch = ((pred - (target - mean) / std) ** 2).mean(-1)
    pixels = (pred * std + mean).clamp(-1 if delta else 0, 1)
    return per_patch, ((pixels - target) ** 2).mean(-1), masked


def masked_patch_errors(out: torch.Tensor, frames: torch.Tensor):
    """Per window: ``(loss, pixel MSE, masked patches)``: the normalised-pixel loss and the
    pixel-space squared error (both means over the masked patches' values) and their count."""
    per_patch, pixel_err, masked = patch_errors(out, frames)
    w = masked.to(per_patch.dtype)
    count = w.sum(1)
    return (per_patch * w).sum(1) / count, (pixel_err * w).sum(1) / count, count


def masked_psnr(mse: float) -> float:
    """PSNR in dB of a mean squared error of [0, 1] pixels (the masked patches'; :func:`psnr`
    compares frames)."""
    return 10.0 * math.log10(1.0 / max(mse, 1e-12))


def _picture(frames: np.ndarray, shown: np.ndarray, recon: np.ndarray) -> np.ndarray:
    """One window as rows: the frames, what the encoder saw (masked patches grey), the
    reconstruction (visible patches as they were); (3*H + 4, T*W + T-1, 3) uint8."""
    t, h, w, _ = frames.shape
    canvas = np.full((3 * h + 4, t * w + (t - 1), 3), 255, np.uint8)
    for row, img in enumerate((frames, shown, recon)):
        for k in range(t):
            y, x = row * (h + 2), k * (w + 1)
            canvas[y : y + h, x : x + w] = img[k]
    return canvas


def reconstruction_rows(out: torch.Tensor, frames: torch.Tensor) -> list[np.ndarray]:
    """The rows of :func:`_picture` of a model output and its uint8 frames (B, T, C, H, W),
    the window the model saw: the frames, the visible patches, the reconstruction (frame
    differences: the differences, 0 drawn mid-grey, true ones at the visible patches)."""
    pred, target, masked, delta = _split(out, frames)
    mean, std = _normaliser(target, delta)
    m = masked[..., None]
    recon = torch.where(m, (pred * std + mean).clamp(-1 if delta else 0, 1), target)
    if delta:
        recon = 0.5 + recon / 2
        target = patchify(
            frames.to(out.device, torch.float32) / 255.0,
            math.isqrt(pred.shape[-1] // frames.shape[2]),
        )
    shown = torch.where(m, torch.full_like(target, 0.5), target)
    size, t = (int(frames.shape[-2]), int(frames.shape[-1])), int(frames.shape[1])
    rows = [unpatchify(v, t, size) for v in (target, shown, recon)]
    return [(r.permute(0, 1, 3, 4, 2).cpu().numpy() * 255).round().astype(np.uint8) for r in rows]


def picture_png(rows: Sequence[np.ndarray], b: int) -> bytes:
    """Window ``b`` of :func:`reconstruction_rows`'s rows as the PNG bytes of :func:`_picture`."""
    buf = io.BytesIO()
    Image.fromarray(_picture(*(r[b] for r in rows))).save(buf, format="PNG")
    return buf.getvalue()


def takes_recipe(model) -> bool:
    """Whether ``model`` is a keyframe model (an aggregator G and :meth:`hidden`)."""
    return isinstance(getattr(model, "aggregator", None), nn.Module) and hasattr(model, "hidden")


def _key_rgb(key: torch.Tensor, mean, std) -> np.ndarray:
    """The normalised key frame (C, H, W) back to uint8 RGB (H, W, 3)."""
    m = torch.as_tensor(mean, dtype=torch.float32).view(-1, 1, 1)
    s = torch.as_tensor(std, dtype=torch.float32).view(-1, 1, 1)
    rgb = (key.detach().float().cpu() * s + m).clamp(0, 1) * 255.0
    return rgb.round().to(torch.uint8).permute(1, 2, 0).numpy()


@torch.no_grad()
def hidden_picture(model, x, mask, path, *, mean, std, scale: int = 2) -> Path:
    """Write K_t beside PCA(H_t) of the first window of ``x`` (the model's keyframe input) as
    one PNG at ``path``; returns it."""
    was = model.training
    model.eval()
    try:
        kf = as_keyframes(x)
        h = model.hidden(kf, mask)[0]
    finally:
        model.train(was)
    path = Path(path)
    right = pca_rgb(h, scale=scale)
    key = _key_rgb(kf.key[0], mean, std).repeat(scale, 0).repeat(scale, 1)
    path.parent.mkdir(parents=True, exist_ok=True)
    gap = np.full((key.shape[0], 4 * scale, 3), 255, np.uint8)
    Image.fromarray(np.concatenate([key, gap, right], axis=1)).save(path, format="PNG")
    return path
