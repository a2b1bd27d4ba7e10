"""Out-of-distribution sets generated in code, deterministic by seed (same seed, same tensor)."""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
import torch
import torch.nn.functional as F
from PIL import Image, ImageDraw, ImageFont, features

from core.data.preprocess import mnist_style
from core.evaluation.shift import rotate_by

MNIST_MEAN = 0.1307  # MNIST pixel mean and standard deviation: the Gaussian noise matches them
MNIST_STD = 0.3081
ROTATION_DEG = (60.0, 120.0)  # rotated MNIST: angle magnitude range, either direction
LETTERS = tuple(chr(ord("A") + i) for i in range(26))
FONT_SIZES = tuple(range(28, 41, 2))  # glyph size jitter, in points of the default font
STROKES = (0, 1)  # extra stroke width jitter, in pixels at that size
TILT_DEG = 8.0  # small random slant either way
CANVAS_TILT_DEG = 25.0  # canvas digits: tilt up to this either way
CANVAS_SHIFT = 4  # canvas digits: shift up to this many pixels each way


def gaussian_noise(n: int, seed: int) -> torch.Tensor:
    """Generate Gaussian-noise images with MNIST's pixel mean and standard deviation.

    Args:
        n: Number of images.
        seed: Generator seed; same seed, same tensor.

    Returns:
        float32 ``(n, 1, 28, 28)``: N(MNIST mean, MNIST std) per pixel, clipped to [0, 1].
    """
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, 1, 28, 28, generator=g) * MNIST_STD + MNIST_MEAN).clamp_(0.0, 1.0)


def uniform_noise(n: int, seed: int) -> torch.Tensor:
    """Generate uniform-noise images.

    Args:
        n: Number of images.
        seed: Generator seed; same seed, same tensor.

    Returns:
        float32 ``(n, 1, 28, 28)``, independent U[0, 1] pixels.
    """
    return torch.rand(n, 1, 28, 28, generator=torch.Generator().manual_seed(seed))


def rotate(images: torch.Tensor, seed: int) -> torch.Tensor:
    """Turn each image by a seeded random angle of 60-120 degrees, either way.

    Args:
        images: float32 ``(N, 1, H, W)`` in [0, 1].
        seed: Generator seed of the angles.

    Returns:
        The rotated images, same shape, clipped to [0, 1].
    """
    g = torch.Generator().manual_seed(seed)
    low, high = ROTATION_DEG
    magnitude = torch.rand(len(images), generator=g) * (high - low) + low
    sign = torch.randint(0, 2, (len(images),), generator=g) * 2 - 1
    return rotate_by(images, magnitude * sign)


def canvas_digits(images: torch.Tensor, seed: int) -> torch.Tensor:
    """Redraw digits the way a class draws on a canvas: thicker, off-centre and tilted.

    Each image's strokes are thickened by a 3 × 3 maximum, the digit is turned by a seeded
    angle of up to ±25° and moved by up to 4 pixels each way (a finger's digit rarely sits in
    MNIST's centre of mass).

    Args:
        images: float32 ``(N, 1, 28, 28)`` in [0, 1].
        seed: Generator seed of the angles and shifts; same seed, same tensor.

    Returns:
        The redrawn images, same shape, in [0, 1].
    """
    g = torch.Generator().manual_seed(seed)
    n = len(images)
    thick = F.max_pool2d(images, 3, stride=1, padding=1)
    degrees = (torch.rand(n, generator=g) * 2 - 1) * CANVAS_TILT_DEG
    shifts = torch.randint(-CANVAS_SHIFT, CANVAS_SHIFT + 1, (n, 2), generator=g)
    turned = rotate_by(thick, degrees)
    moved = [
        torch.roll(img, (int(dy), int(dx)), dims=(1, 2))
        for img, (dy, dx) in zip(turned, shifts, strict=True)
    ]
    return torch.stack(moved) if moved else turned


def font_available() -> tuple[bool, str]:
    """Check whether Pillow can render its scalable default font (needs FreeType).

    Returns:
        (available, reason).
    """
    if features.check("freetype2"):
        return True, "rendered in code from Pillow's built-in font"
    return False, "Pillow was built without FreeType, so its scalable default font is missing"


@cache
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _render(letter: str, size: int, stroke: int, tilt: float) -> np.ndarray:
    font = _font(size)
    canvas = Image.new("L", (2 * size, 2 * size))
    ImageDraw.Draw(canvas).text(
        (size, size), letter, fill=255, font=font, anchor="mm", stroke_width=stroke, stroke_fill=255
    )
    canvas = canvas.rotate(tilt, resample=Image.Resampling.BICUBIC)
    return mnist_style(np.asarray(canvas, dtype=np.float32) / 255.0)


@lru_cache(maxsize=8)
def font_letters(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Render ``n`` random capitals A-Z with size/stroke/slant jitter, MNIST-style.

    Args:
        n: Number of letters.
        seed: Seed of the letters and their jitter.

    Returns:
        uint8 ``(n, 28, 28)`` images and int64 ``(n,)`` labels (letter index, A=0).
    """
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(LETTERS), n)
    sizes = rng.choice(FONT_SIZES, n)
    strokes = rng.choice(STROKES, n)
    tilts = rng.uniform(-TILT_DEG, TILT_DEG, n)
    images = np.empty((n, 28, 28), dtype=np.uint8)
    for i in range(n):
        glyph = _render(LETTERS[labels[i]], int(sizes[i]), int(strokes[i]), float(tilts[i]))
        images[i] = np.rint(glyph * 255.0)
    return torch.from_numpy(images), torch.from_numpy(labels)
