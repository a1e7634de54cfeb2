"""A small video transformer: patch tokens with spatial and temporal position embeddings.

Layout ``temporal`` (B, T, C, H, W). Each frame is cut into ``patch_size`` patches; every
token gets a learned *spatial* embedding (its place in the frame, shared by all frames) and
a learned *temporal* embedding (its frame index, shared by all places). Attention is joint
over all T*N tokens, or -- with ``divided=True`` (TimeSformer) -- divided: first over time
for each place, then over space within each frame. ``mask`` (B, T) marks the real frames:
padded frames are never attended to and are left out of the final average, so their content
cannot change the output (every clip needs at least one valid frame).

``tubelet`` (default 1: one frame per token) embeds *tubelets* instead, as VideoMAE does: a
Conv3d over ``tubelet`` consecutive frames x ``patch_size`` x ``patch_size``, so each token
carries the change between its frames; a window of T frames gives T / tubelet token frames,
and the temporal embedding is learned for ``frames / tubelet`` of them. With a ``mask``, a
tubelet is real when any of its frames is, and padded frames are zeroed before the embedding.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from typing_extensions import Unpack

from .._core._errors import ConfigError, DataError
from ._base import ModelArgs, VideoModel, _check_int, check_mask, masked_mean, preset
from ._registry import register_model

__all__ = ["VideoTransformer"]


class _Attention(nn.Module):
    def __init__(self, dim: int, heads: int, dropout: float) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.dropout = dropout

    def forward(self, x: Tensor, key_mask: Tensor | None) -> Tensor:
        """``x`` (N, L, D); ``key_mask`` (N, L) bool, True = may be attended to."""
        n, length, d = x.shape
        qkv = self.qkv(x).reshape(n, length, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)
        attn_mask = None if key_mask is None else key_mask[:, None, None, :]
        p = self.dropout if self.training else 0.0
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=attn_mask, dropout_p=p)
        return self.proj(y.transpose(1, 2).reshape(n, length, d))


class _Mlp(nn.Sequential):
    def __init__(self, dim: int, ratio: float, dropout: float) -> None:
        hidden = int(dim * ratio)
        super().__init__(
            nn.Linear(dim, hidden), nn.GELU(), nn.Dropout(dropout), nn.Linear(hidden, dim)
        )


class _Block(nn.Module):
    def __init__(self, dim: int, heads: int, mlp_ratio: float, dropout: float, divided: bool):
        super().__init__()
        self.divided = divided
        if divided:
            self.norm_t = nn.LayerNorm(dim)
            self.attn_t = _Attention(dim, heads, dropout)
        self.norm1 = nn.LayerNorm(dim)
        self.attn = _Attention(dim, heads, dropout)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = _Mlp(dim, mlp_ratio, dropout)

    def forward(self, x: Tensor, mask: Tensor | None) -> Tensor:
        """``x`` (B, T, N, D); ``mask`` (B, T) bool or None."""
        b, t, n, d = x.shape
        if self.divided:
            xt = x.permute(0, 2, 1, 3).reshape(b * n, t, d)  # each place, over time
            mt = None if mask is None else mask[:, None, :].expand(b, n, t).reshape(b * n, t)
            xt = xt + self.attn_t(self.norm_t(xt), mt)
            x = xt.reshape(b, n, t, d).permute(0, 2, 1, 3)
            xs = x.reshape(b * t, n, d)  # each frame, over space
            xs = xs + self.attn(self.norm1(xs), None)
        else:
            xs = x.reshape(b, t * n, d)
            m = None if mask is None else mask[:, :, None].expand(b, t, n).reshape(b, t * n)
            xs = xs + self.attn(self.norm1(xs), m)
        xs = xs + self.mlp(self.norm2(xs))
        return xs.reshape(b, t, n, d)


class VideoTransformer(VideoModel):
    """Patch embedding, spatial + temporal position embeddings, joint or divided attention.

    ``frames`` is the T the temporal embedding is learned for; clips of another T use it
    resized along time (linear, its first and last entries kept: the window's start and end).
    The spatial embedding is learned for ``image_size`` and resized (bilinear)
    for other frame sizes.
    """

    layout = "temporal"
    uses_mask = True

    def __init__(
        self,
        image_size: int = 64,
        patch_size: int = 8,
        dim: int = 64,
        depth: int = 2,
        heads: int = 4,
        mlp_ratio: float = 2.0,
        divided: bool = False,
        dropout: float = 0.0,
        tubelet: int = 1,
        **base: Unpack[ModelArgs],
    ) -> None:
        super().__init__(**base)
        for name, value in (
            ("image_size", image_size),
            ("patch_size", patch_size),
            ("dim", dim),
            ("depth", depth),
            ("heads", heads),
            ("tubelet", tubelet),
        ):
            _check_int(name, value)
        if self.frames % tubelet:
            raise ConfigError(
                f"tubelet ({tubelet}) must divide frames ({self.frames}): each token embeds "
                f"{tubelet} consecutive frames; allowed: a divisor of {self.frames}, e.g. 1"
            )
        if dim % heads:
            raise ConfigError(f"dim ({dim}) must be a multiple of heads ({heads})")
        if image_size % patch_size:
            raise ConfigError(f"image_size ({image_size}) must be a multiple of patch_size")
        self.patch_size = patch_size
        self.grid = image_size // patch_size
        self.divided = divided
        self.tubelet = tubelet
        self.patch_embed: nn.Conv2d | nn.Conv3d
        if tubelet == 1:
            self.patch_embed = nn.Conv2d(3, dim, patch_size, stride=patch_size)
        else:
            size = (tubelet, patch_size, patch_size)
            self.patch_embed = nn.Conv3d(3, dim, size, stride=size)
        self.pos_space = nn.Parameter(torch.zeros(1, 1, self.grid * self.grid, dim))
        self.pos_time = nn.Parameter(torch.zeros(1, self.frames // tubelet, 1, dim))
        nn.init.trunc_normal_(self.pos_space, std=0.02)
        nn.init.trunc_normal_(self.pos_time, std=0.02)
        self.blocks = nn.ModuleList(
            _Block(dim, heads, mlp_ratio, dropout, divided) for _ in range(depth)
        )
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, self.num_classes)
        self.pretrained_optional = ("head.",)

    def map_pretrained(self, state_dict):
        """A ``video_mae`` checkpoint (keys under ``encoder.``): its encoder, position
        embeddings interpolated to this model (:func:`encoder_weights`;
        what was done is kept in ``pretrained_notes``); any other: the default mapping."""
        if not any(k.startswith("encoder.") for k in state_dict):
            return super().map_pretrained(state_dict)
        out, self.pretrained_notes = encoder_weights(dict(state_dict), self.state_dict())
        return out

    def _space_embedding(self, gh: int, gw: int) -> Tensor:
        """The spatial embedding for a gh x gw patch grid (:func:`resize_grid`)."""
        return resize_grid(self.pos_space, self.grid, gh, gw)

    def _time_embedding(self, t: int) -> Tensor:
        """The temporal embedding for ``t`` token frames (T / tubelet): :func:`resize_time`."""
        return resize_time(self.pos_time, t)

    def embed_patches(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x`` (B, T, C, H, W) -> its patch (or tubelet) tokens (B, T / tubelet, gh*gw, D),
        no position embeddings; frames where ``mask`` (B, T) is False are zeroed first when a
        tubelet spans several frames (a padded frame's content never reaches a token)."""
        b, t, c, h, w = x.shape
        p, k = self.patch_size, self.tubelet
        if h % p or w % p:
            raise DataError(f"{self._who()}: frame size {h}x{w} is not a multiple of patch {p}")
        if t % k:
            raise DataError(
                f"{self._who()}: T={t} frames is not a multiple of its tubelet ({k}); give "
                f"windows of a multiple of {k} frames"
            )
        if k == 1:
            tokens = self.patch_embed(x.reshape(b * t, c, h, w))  # (B*T, D, gh, gw)
        else:
            if mask is not None:
                x = x.masked_fill(~mask[:, :, None, None, None], 0.0)
            tokens = self.patch_embed(x.transpose(1, 2))  # (B, D, T/k, gh, gw)
            tokens = tokens.transpose(1, 2).reshape(b * (t // k), -1, h // p, w // p)
        gh, gw = tokens.shape[-2:]
        return tokens.flatten(2).transpose(1, 2).reshape(b, t // k, gh * gw, -1)

    def token_mask(self, mask: Tensor | None) -> Tensor | None:
        """The (B, T) frame mask as a (B, T / tubelet) token-frame mask: a tubelet is real
        when any of its frames is."""
        if mask is None or self.tubelet == 1:
            return mask
        return mask.reshape(mask.shape[0], -1, self.tubelet).any(-1)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x``: (B, T, C, H, W), any T (a multiple of ``tubelet``); ``mask``: (B, T) bool,
        True = real frame."""
        x = self._temporal(x)
        b, t = x.shape[:2]
        mask = check_mask(self, mask, b, t)
        tokens = self.embed_patches(x, mask)  # (B, T', N, D)
        mask = self.token_mask(mask)
        gh, gw = (side // self.patch_size for side in x.shape[-2:])
        tokens = tokens + self._space_embedding(gh, gw) + self._time_embedding(tokens.shape[1])
        for block in self.blocks:
            tokens = self._ckpt(block, tokens, mask)
        pooled = masked_mean(tokens.mean(2), mask, dim=1)  # places, then valid frames
        return self.head(self.norm(pooled))


@register_model("video_vit_tiny", layout="temporal", family="transformer")
@preset(VideoTransformer)
def video_vit_tiny() -> None:
    """Video transformer, joint space-time attention (ViViT-style), tiny by default."""


@register_model("timesformer_tiny", layout="temporal", family="transformer")
@preset(VideoTransformer, divided=True)
def timesformer_tiny() -> None:
    """Video transformer, divided attention: time, then space (TimeSformer), tiny."""


def resize_time(pos: Tensor, t: int) -> Tensor:
    """(1, T0, 1, D) temporal embeddings resized (linear) to ``t`` token frames, the first
    and last entries kept (a window's start and end); one learned entry is repeated. The one
    rule for a model's own windows of another T and for a checkpoint mapped into a model
    built for another T (:func:`encoder_weights`), so both see the same embeddings."""
    learned = pos.shape[1]
    if t == learned:
        return pos
    if learned == 1:
        return pos.expand(1, t, 1, pos.shape[-1])
    line = F.interpolate(pos[:, :, 0].transpose(1, 2), size=t, mode="linear", align_corners=True)
    return line.transpose(1, 2).unsqueeze(2)


def resize_grid(pos: Tensor, grid: int, gh: int, gw: int) -> Tensor:
    """(1, 1, grid*grid, D) position embeddings resized (bilinear) to a gh x gw grid."""
    if (gh, gw) == (grid, grid):
        return pos
    d = pos.shape[-1]
    g = pos.reshape(1, grid, grid, d).permute(0, 3, 1, 2)
    g = F.interpolate(g, size=(gh, gw), mode="bilinear", align_corners=False)
    return g.permute(0, 2, 3, 1).reshape(1, 1, gh * gw, d)


def encoder_weights(
    state_dict: dict[str, Tensor], own: dict[str, Tensor]
) -> tuple[dict[str, Tensor], list[str]]:
    """The encoder of a ``video_mae`` state dict as a video transformer's weights (keys
    without ``encoder.``), and notes on what was done: the decoder left out, the position
    embeddings resized to ``own``'s token frames (:func:`resize_time`) and patch grid
    (:func:`resize_grid`): the rules the pretraining model applies itself to windows of that
    size, so the encoder a fine-tune starts from is the one pretrained there."""
    out = {k[len("encoder.") :]: v for k, v in state_dict.items() if k.startswith("encoder.")}
    dropped = len(state_dict) - len(out)
    notes = [f"{len(out)} encoder tensors mapped, {dropped} decoder tensors left out"]
    src, mine = out.get("pos_time"), own.get("pos_time")
    if (
        src is not None
        and mine is not None
        and src.shape != mine.shape
        and src.shape[-1] == mine.shape[-1]
        and src.dim() == mine.dim() == 4
    ):
        t = mine.shape[1]
        out["pos_time"] = resize_time(src, t).contiguous()
        notes.append(f"pos_time interpolated from {src.shape[1]} to {t} frames")
    src, mine = out.get("pos_space"), own.get("pos_space")
    if src is not None and mine is not None and src.shape != mine.shape:
        g0, g1 = math.isqrt(src.shape[2]), math.isqrt(mine.shape[2])
        if src.shape[-1] == mine.shape[-1] and g0 * g0 == src.shape[2] and g1 * g1 == mine.shape[2]:
            out["pos_space"] = resize_grid(src, g0, g1, g1).contiguous()
            notes.append(f"pos_space interpolated from a {g0}x{g0} to a {g1}x{g1} patch grid")
    return out, notes
