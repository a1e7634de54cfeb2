"""Masked video pretraining (VideoMAE-style): tube masking, an encoder of visible tokens only.

:class:`MaskedVideoAutoencoder` (registered as ``video_mae``) wraps a video transformer of the
registry (``encoder``: ``video_vit_tiny`` or ``timesformer_tiny``, built with the encoder
options given beside it) and adds a light decoder. Each frame is cut into ``patch_size``
patches; a *tube* is one place of the frame grid through all T frames. Per window,
``round(mask_ratio * places)`` places are masked (default 0.9), the same ones in every frame
(:func:`tube_mask`); with ``masking: random`` as many places are drawn for each token frame
on its own, so a place hidden in one frame may be seen in another (a joint-attention encoder
only). The encoder runs on the visible tokens only, (B, T, visible, D), so its cost falls
with the ratio. The decoder gets the encoded tokens back at their places,
a learned mask token at the others, its own position embeddings, a few blocks, and predicts
every patch's pixels.

With ``tubelet: k`` (an encoder option, see
:class:`~hyperframes.models._transformer.VideoTransformer`) each token embeds k consecutive
frames of a place, so the encoder sees motion inside its tokens (VideoMAE's tubelets); the
decoder predicts the k frames of each masked tubelet, given back one token per frame patch
below, so the loss, metrics and reconstructions are the same for any k.

The output is one tensor (B, T*N, P + 1) in (frame, row, column) token order: columns ``:P``
the predicted patch (P = patch_size**2 * 3 values, per-patch normalised: what the loss of
:mod:`hyperframes.train._tasks._masked` compares with the true patch minus its mean, over its std),
column ``P`` 1.0 where the token was masked. :func:`patchify` / :func:`unpatchify` give that
patch order. With ``target: delta`` the decoder predicts each masked patch's **frame
difference** (frame t minus frame t-1, over the window's RMS difference) and column ``P`` is
2.0 where masked, which tells the loss, metrics and pictures
(:mod:`hyperframes.models._outputs`) what the prediction is of: a still background then
costs nothing to predict, and the loss is about what moves.

Masks are drawn from torch's global generator while training (the trainer reseeds it from
``(seed, rank, epoch, batch)`` before every micro-batch, so they do not depend on workers and
``--resume`` draws the same ones) and, in eval mode, from a generator seeded with
``mask_seed`` at each call, so evaluation is repeatable.

The encoder's weights carry the classifier's names under ``encoder.``: a
``model.pretrained`` checkpoint of this model loads into the same transformer as a classifier
(:meth:`~hyperframes.models._transformer.VideoTransformer.map_pretrained`).
"""

from __future__ import annotations

import math

import torch
from torch import Tensor, nn

from .._core._errors import ConfigError, DataError
from ._base import VideoModel, check_mask, preset
from ._registry import create, get_spec, register_model
from ._transformer import VideoTransformer, _Block, resize_grid

__all__ = ["MaskedVideoAutoencoder", "patchify", "tube_mask", "unpatchify"]

#: what the decoder predicts at masked tokens: the frames' pixels, or the frame differences
TARGETS = ("pixels", "delta")
#: which places are masked: the same in every token frame (tubes), or drawn per token frame
MASKINGS = ("tube", "random")


def tube_mask(
    batch: int,
    places: int,
    ratio: float,
    *,
    generator: torch.Generator | None = None,
    device: torch.device | str = "cpu",
) -> Tensor:
    """(batch, places) bool, True = masked: exactly ``round(ratio * places)`` places of each
    row (at least one masked and one visible), uniformly at random."""
    if places < 2:
        raise DataError(f"tube masking needs at least 2 patch places per frame, got {places}")
    count = min(places - 1, max(1, round(ratio * places)))
    noise = torch.rand(batch, places, generator=generator, device=device)
    order = noise.argsort(dim=1)
    masked = torch.zeros(batch, places, dtype=torch.bool, device=device)
    masked.scatter_(1, order[:, :count], True)
    return masked


def patchify(frames: Tensor, patch: int, tubelet: int = 1) -> Tensor:
    """(B, T, C, H, W) -> (B, T/k*gh*gw, k*patch*patch*C) for tubelets of k = ``tubelet``
    frames: tokens in (tubelet, row, column) order, each token's values in (frame, row,
    column, channel) order (k = 1: one token per frame patch)."""
    b, t, c, h, w = frames.shape
    if h % patch or w % patch:
        raise DataError(f"frames of {h}x{w} are not a multiple of the patch size {patch}")
    if t % tubelet:
        raise DataError(f"{t} frames are not a multiple of the tubelet ({tubelet} frames)")
    gh, gw, k = h // patch, w // patch, tubelet
    x = frames.reshape(b, t // k, k, c, gh, patch, gw, patch).permute(0, 1, 4, 6, 2, 5, 7, 3)
    return x.reshape(b, t // k * gh * gw, k * patch * patch * c)


def unpatchify(
    tokens: Tensor, frames: int, size: tuple[int, int], channels: int = 3, tubelet: int = 1
) -> Tensor:
    """The inverse of :func:`patchify`: (B, T/k*gh*gw, k*p*p*C) -> (B, T, C, H, W)."""
    b, _, dim = tokens.shape
    k = tubelet
    patch = math.isqrt(dim // (channels * k))
    h, w = size
    gh, gw = h // patch, w // patch
    x = tokens.reshape(b, frames // k, gh, gw, k, patch, patch, channels)
    x = x.permute(0, 1, 4, 7, 2, 5, 3, 6)
    return x.reshape(b, frames, channels, h, w)


class _EncoderGraph(nn.Module):
    """What ONNX export writes for a masked-video model: its encoder on every token, no mask:
    (B, T, C, H, W) -> ``features`` (B, T/tubelet*N, D), the tokens a fine-tuned head pools."""

    output_name = "features"

    def __init__(self, model: MaskedVideoAutoencoder) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: Tensor) -> Tensor:
        b = x.shape[0]
        places = self.model.places(x)
        keep = torch.arange(places, device=x.device).expand(b, places)
        return self.model.encode(x, keep, None).flatten(1, 2)


class MaskedVideoAutoencoder(VideoModel):
    """Tube-masked autoencoder around a registered video transformer (module doc)."""

    layout = "temporal"
    task = "masked_video"
    uses_mask = True

    def __init__(
        self,
        num_classes: int,
        frames: int,
        encoder: str = "video_vit_tiny",
        mask_ratio: float = 0.9,
        decoder_dim: int = 32,
        decoder_depth: int = 1,
        decoder_heads: int = 2,
        mask_seed: int = 0,
        target: str = "pixels",
        masking: str = "tube",
        **encoder_options,
    ) -> None:
        super().__init__(num_classes, frames, 3, bool(encoder_options.pop("checkpointing", 0)))
        if isinstance(mask_ratio, bool) or not 0.0 < float(mask_ratio) < 1.0:
            raise ConfigError(f"mask_ratio must be a number in (0, 1), got {mask_ratio!r}")
        if target not in TARGETS:
            raise ConfigError(f"target {target!r}: allowed: {', '.join(TARGETS)}")
        if masking not in MASKINGS:
            raise ConfigError(f"masking {masking!r}: allowed: {', '.join(MASKINGS)}")
        if masking == "random" and encoder_options.get("divided"):
            raise ConfigError(
                "masking 'random' (other places in each frame) needs joint attention; a divided "
                "encoder attends over time per place: use masking 'tube' or divided: false"
            )
        if target == "delta" and frames < 2:
            raise ConfigError(f"target 'delta' (frame differences) needs frames >= 2, got {frames}")
        if get_spec(encoder).family != "transformer":
            raise ConfigError(
                f"encoder {encoder!r} is not a video transformer; allowed: video_vit_tiny, "
                "timesformer_tiny (or another registered transformer)"
            )
        enc = create(encoder, num_classes=1, frames=frames, **encoder_options)
        if not isinstance(enc, VideoTransformer):
            raise ConfigError(f"encoder {encoder!r} does not build a VideoTransformer")
        # a classifier's head: not pretrained, not used (torch types the attribute Linear)
        enc.head = nn.Identity()  # type: ignore[assignment]
        self.encoder, self.encoder_name = enc, encoder
        self.mask_ratio, self.mask_seed = float(mask_ratio), int(mask_seed)
        self.target, self.masking = target, masking
        dim = enc.pos_space.shape[-1]
        if decoder_dim % decoder_heads:
            raise ConfigError(f"decoder_dim ({decoder_dim}) must be a multiple of decoder_heads")
        self.decoder_embed = nn.Linear(dim, decoder_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, 1, decoder_dim))
        self.decoder_pos_space = nn.Parameter(torch.zeros(1, 1, enc.grid * enc.grid, decoder_dim))
        self.tubelet = enc.tubelet
        self.decoder_pos_time = nn.Parameter(torch.zeros(1, enc.pos_time.shape[1], 1, decoder_dim))
        for p in (self.mask_token, self.decoder_pos_space, self.decoder_pos_time):
            nn.init.trunc_normal_(p, std=0.02)
        self.decoder_blocks = nn.ModuleList(
            _Block(decoder_dim, decoder_heads, 2.0, 0.0, False) for _ in range(decoder_depth)
        )
        self.decoder_norm = nn.LayerNorm(decoder_dim)
        self.decoder_pred = nn.Linear(decoder_dim, enc.tubelet * enc.patch_size**2 * 3)

    def _set_checkpointing(self, enabled: bool) -> None:
        if hasattr(self, "encoder"):
            self.encoder.checkpointing = enabled

    def places(self, x: Tensor) -> int:
        """Patch places per frame of ``x`` (B, T, C, H, W)."""
        p = self.encoder.patch_size
        h, w = x.shape[-2:]
        if h % p or w % p:
            raise DataError(f"{self._who()}: frame size {h}x{w} is not a multiple of patch {p}")
        return (h // p) * (w // p)

    def encode(self, x: Tensor, keep: Tensor, mask: Tensor | None) -> Tensor:
        """The encoder on the places ``keep`` of every token frame (a frame, or a tubelet of
        ``tubelet`` frames): (B, V) the same in each, or (B, T', V) per token frame; ``mask``
        (B, T) marks the real frames. Returns (B, T', V, D)."""
        e = self.encoder
        b, t, _, h, w = x.shape
        if t > self.frames:
            raise DataError(f"{self._who()} has embeddings for {self.frames} frames, got T={t}")
        tokens = e.embed_patches(x, mask)  # (B, T', N, D)
        p, t = e.patch_size, tokens.shape[1]
        # the classifier's embeddings for t token frames (resized, not cropped, when t differs)
        tokens = tokens + e._space_embedding(h // p, w // p) + e._time_embedding(t)
        d = tokens.shape[-1]
        if keep.dim() == 2:
            keep = keep[:, None, :].expand(b, t, keep.shape[1])
        vis = tokens.gather(2, keep[..., None].expand(b, t, keep.shape[2], d))
        mask = e.token_mask(mask)
        for block in e.blocks:
            vis = e._ckpt(block, vis, mask)
        return e.norm(vis)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> Tensor:
        """``x`` (B, T, C, H, W) -> (B, T*N, P + 1): predicted patches and the mask (module doc)."""
        x = self._temporal(x)
        b, t, _, h, w = x.shape
        mask = check_mask(self, mask, b, t)
        n = self.places(x)
        gen = None
        if not self.training:
            gen = torch.Generator(device=x.device).manual_seed(self.mask_seed)
        tt = t // self.tubelet
        if self.masking == "tube":  # (B, T', N): the same places in every token frame
            masked = tube_mask(b, n, self.mask_ratio, generator=gen, device=x.device)
            masked = masked[:, None, :].expand(b, tt, n)
        else:  # as many places in each token frame, drawn for each
            masked = tube_mask(b * tt, n, self.mask_ratio, generator=gen, device=x.device)
            masked = masked.reshape(b, tt, n)
        keep = (~masked).nonzero()[:, 2].reshape(b, tt, -1)  # visible places, ascending
        vis = self.encode(x, keep, mask)  # (B, T', V, D), T' = T / tubelet
        y = self.decoder_embed(vis)
        full = self.mask_token.expand(b, tt, n, y.shape[-1]).clone()
        full.scatter_(2, keep[..., None].expand_as(y), y.to(full.dtype))
        p = self.encoder.patch_size
        grid = self.encoder.grid
        full = full + resize_grid(self.decoder_pos_space, grid, h // p, w // p)
        full = full + self.decoder_pos_time[:, :tt]
        tmask = self.encoder.token_mask(mask)
        for block in self.decoder_blocks:
            full = block(full, tmask)
        pred = self.decoder_pred(self.decoder_norm(full)).flatten(1, 2)  # (B, T'*N, k*P)
        if self.tubelet > 1:  # each tubelet's k frames as k frame patches: (B, T*N, P)
            pred = patchify(unpatchify(pred, t, (h, w), tubelet=self.tubelet), p)
        flag = masked.repeat_interleave(self.tubelet, dim=1).reshape(b, t * n, 1).to(pred.dtype)
        if self.target == "delta":  # what the masked predictions are of (models._outputs)
            flag = flag * 2.0
        return torch.cat([pred, flag], dim=-1)

    def export_graph(self) -> nn.Module:
        """The module ONNX export writes: the encoder on all tokens (:class:`_EncoderGraph`)."""
        return _EncoderGraph(self).eval()


@register_model("video_mae", layout="temporal", family="transformer", task="masked_video")
@preset(MaskedVideoAutoencoder)
def video_mae() -> None:
    """Masked video autoencoder (tube masking, VideoMAE-style) around a video transformer."""
