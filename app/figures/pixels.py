"""Images shown larger than they are, without blurring: each pixel becomes a square."""

from __future__ import annotations

import numpy as np

SCALE = 3
"""Screen pixels per image pixel where a page shows 28×28 images side by side."""


def enlarge(images: np.ndarray, scale: int = SCALE) -> np.ndarray:
    """Repeat every pixel ``scale`` times along both image axes.

    Args:
        images: One image ``(H, W)`` or a stack ``(..., H, W)``, float in [0, 1] or uint8.
        scale: Screen pixels per image pixel along each axis.

    Returns:
        float32 ``(..., H · scale, W · scale)`` in [0, 1] (uint8 divided by 255).
    """
    x = np.asarray(images)
    x = x.astype(np.float32) / 255.0 if x.dtype == np.uint8 else x.astype(np.float32)
    return np.repeat(np.repeat(x, scale, axis=-2), scale, axis=-1)
