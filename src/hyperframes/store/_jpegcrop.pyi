"""Types of the C extension ``_jpegcrop.c`` (partial JPEG decoding, libjpeg-turbo)."""

from collections.abc import Sequence

import numpy as np

def decode_window(
    datas: Sequence[bytes | memoryview | np.ndarray],
    out: np.ndarray,
    top: int,
    left: int,
    height: int,
    width: int,
    denom: int,
    /,
) -> tuple[int, int, int, int, int, int]: ...
