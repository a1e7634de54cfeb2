"""Upper bounds on what a config, a checkpoint or a store's manifest may ask for.

Every size that drives an allocation is bounded, so untrusted input (a checkpoint, a config, a
manifest) asks for finite work. The training config (``hyperframes.train``) and the input
contract read the same bounds from here.
"""

from __future__ import annotations

from ._errors import ConfigError

__all__ = [
    "MAX_CHECKPOINT_INFLATION",
    "MAX_CHECKPOINT_REPEATED_BYTES",
    "MAX_CLASSES",
    "MAX_FPS",
    "MAX_FRAMES",
    "MAX_INFER_VALUES",
    "MAX_MANIFEST_BYTES",
    "MAX_MODEL_PARAMS",
    "MAX_MODEL_WIDTH",
    "MAX_SIDE",
    "check_infer_values",
]

MAX_FRAMES = 4096  # frames in a window (data.frames)
MAX_SIDE = 8192  # pixels, any crop / resize side
MAX_CLASSES = 100_000  # classes of a model (model.num_classes)
MAX_FPS = 1000.0  # frame rates a checkpoint or store asks inference to resample to
MAX_INFER_VALUES = 1 << 30  # values in one batch inference or export hands a model (4 GiB fp32)
MAX_MODEL_WIDTH = 1 << 16  # any integer size option of a registered model (widths, depths, heads)
MAX_MODEL_PARAMS = 1 << 31  # parameters of a model a config or checkpoint builds (8 GiB fp32)
MAX_MANIFEST_BYTES = 64 << 20  # a store's manifest.json; real ones are kilobytes to a few MiB
#: bytes a checkpoint's tensors may show beyond the storage they view (an expanded, stride-0
#: tensor repeats its storage): hashing such a tensor reads every repeat
MAX_CHECKPOINT_REPEATED_BYTES = 256 << 20
#: a checkpoint's entries may inflate to at most this many times the file's size (torch.save
#: stores them uncompressed; a zip bomb declares gigabytes in a few compressed megabytes)
MAX_CHECKPOINT_INFLATION = 4


def check_infer_values(
    batch: int, frames: int, channels: int, height: int, width: int, where: str
) -> None:
    """One batch of model input, ``batch x frames x channels x height x width`` values, must
    stay within :data:`MAX_INFER_VALUES`; :class:`ConfigError` saying where the sizes came
    from (``where``) and what to lower."""
    values = batch * frames * channels * height * width
    if values > MAX_INFER_VALUES:
        raise ConfigError(
            f"{where}: batch x frames x channels x H x W = {batch} x {frames} x {channels} x "
            f"{height} x {width} = {values:,} values per model call ({values * 4 / 2**30:.1f} "
            f"GiB as float32); allowed: at most {MAX_INFER_VALUES:,} (lower the batch, the "
            "frames or the frame size)"
        )
