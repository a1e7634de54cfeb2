"""Upper bounds on what a config, a checkpoint or a store's manifest may ask for.

Every size that drives an allocation is bounded, so untrusted input (a checkpoint, a config, a
manifest) asks for finite work. The training config (``hyperframes.train``) and the input
contract read the same bounds from here.
"""

from __future__ import annotations

__all__ = ["MAX_CLASSES", "MAX_FPS", "MAX_FRAMES", "MAX_SIDE"]

MAX_FRAMES = 4096  # frames in a window (data.frames)
MAX_SIDE = 8192  # pixels, any crop / resize side
MAX_CLASSES = 100_000  # classes of a model (model.num_classes)
MAX_FPS = 1000.0  # frame rates a checkpoint or store asks inference to resample to
