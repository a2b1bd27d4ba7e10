"""MNIST-style normalisation of a single drawing: the preprocessing LeCun et al. applied to MNIST.

The ink's bounding box is scaled to fit a 20x20 box (aspect ratio kept, anti-aliased), then placed
in a 28x28 frame so that its centre of mass sits at the frame's centre. Scaling and placement
are one resampling step with sub-pixel placement (MNIST shifted by whole pixels), so a shifted
or rescaled drawing gives nearly the same 28x28 image. Used for the rendered font letters,
Omniglot, and the Draw page's canvas drawings and uploads.
"""

from __future__ import annotations

import math

import numpy as np
from PIL import Image

FRAME = 28
BOX = 20
CENTRE = 14.0  # MNIST's mean centre of mass, in pixel-index coordinates
INK = 0.1  # a pixel is ink above this fraction of the brightest pixel
BLANK = 0.05  # an image whose brightest pixel is below this is blank
WORKING_SIZE = 160  # larger drawings are max-pooled down to about this size first
MIN_STROKE = 1.5  # strokes thinner than this (in 28x28 pixels) are thickened ...
TARGET_STROKE = 2.0  # ... to about this width, so they stay visible after downscaling


def _bbox(mask: np.ndarray) -> tuple[slice, slice]:
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    return slice(rows[0], rows[-1] + 1), slice(cols[0], cols[-1] + 1)


def _max_pool(image: np.ndarray, factor: int) -> np.ndarray:
    h, w = image.shape
    padded = np.pad(image, ((0, -h % factor), (0, -w % factor)))
    return padded.reshape(padded.shape[0] // factor, factor, -1, factor).max(axis=(1, 3))


def _stroke_width(mask: np.ndarray) -> float:
    """Mean stroke width in pixels: ink area over half the ink's perimeter (in pixel edges)."""
    padded = np.pad(mask, 1)
    edges = np.count_nonzero(padded[1:] != padded[:-1])
    edges += np.count_nonzero(padded[:, 1:] != padded[:, :-1])
    return 2.0 * np.count_nonzero(mask) / max(edges, 1)


def _dilate(image: np.ndarray, radius: int) -> np.ndarray:
    """Grey-level dilation by a (2r+1)-square; the image grows by r on every side."""
    h, w = image.shape
    rows = np.zeros((h + 2 * radius, w), dtype=image.dtype)
    for shift in range(2 * radius + 1):
        np.maximum(rows[shift : shift + h], image, out=rows[shift : shift + h])
    out = np.zeros((h + 2 * radius, w + 2 * radius), dtype=image.dtype)
    for shift in range(2 * radius + 1):
        np.maximum(out[:, shift : shift + w], rows, out=out[:, shift : shift + w])
    return out


def mnist_style(image: np.ndarray) -> np.ndarray:
    """Normalise a drawing the way MNIST digits were.

    Contrast is stretched so the brightest pixel is 1; thin strokes of large drawings are
    thickened so they survive downscaling.

    Args:
        image: 2-D array of any size, white ink on black, values in [0, 1] (clipped).

    Returns:
        float32 ``(28, 28)`` in [0, 1].

    Raises:
        ValueError: If ``image`` is not 2-D, or is blank (message ``"blank ..."``: no ink,
            brightest pixel below 0.05).
    """
    img = np.clip(np.asarray(image, dtype=np.float32), 0.0, 1.0)
    if img.ndim != 2:
        raise ValueError(f"expected a 2-D image, got shape {img.shape}")
    peak = float(img.max()) if img.size else 0.0
    if peak < BLANK:
        raise ValueError("blank image: no ink to centre")
    img = img[_bbox(img > INK * peak)] / peak
    factor = math.ceil(max(img.shape) / WORKING_SIZE)
    if factor > 1:
        img = _max_pool(img, factor)
    scale = BOX / max(img.shape)
    width = _stroke_width(img > INK)
    if width * scale < MIN_STROKE:
        img = _dilate(img, math.ceil((TARGET_STROKE / scale - width) / 2))
        scale = BOX / max(img.shape)
    mass = img.sum()
    centre_y = img.sum(axis=1) @ np.arange(img.shape[0]) / mass
    centre_x = img.sum(axis=0) @ np.arange(img.shape[1]) / mass
    span = FRAME / scale  # the frame's side in source pixels
    # Map source -> frame so the centre of mass lands on CENTRE (pixel centres at +0.5), kept
    # where the whole glyph stays inside the frame; sub-pixel, so small shifts change little.
    top = min(max(centre_y + 0.5 - (CENTRE + 0.5) / scale, img.shape[0] - span), 0.0)
    left = min(max(centre_x + 0.5 - (CENTRE + 0.5) / scale, img.shape[1] - span), 0.0)
    pad = math.ceil(span)
    padded = np.zeros((img.shape[0] + 2 * pad, img.shape[1] + 2 * pad), dtype=np.float32)
    padded[pad:-pad, pad:-pad] = img
    box = (left + pad, top + pad, left + pad + span, top + pad + span)
    source = Image.fromarray(padded)
    out = np.asarray(source.resize((FRAME, FRAME), Image.Resampling.LANCZOS, box=box))
    out = np.clip(out, 0.0, None)
    return (out / out.max()).astype(np.float32)
