"""Dataset shift: MNIST-style images transformed at a chosen severity (pure, no disk).

Each :class:`Shift` of :data:`SHIFTS` maps images ``(N, 1, H, W)`` in [0, 1] and a severity to
transformed images of the same shape, still in [0, 1]; severity 0 returns the images unchanged
(a copy), so a shift's first level is the unshifted data. The grids of severities follow
Ovadia et al. 2019 (rotated MNIST, 0–180°) and MNIST-C-style corruptions:

* ``rotation``: every image turned by the same angle (degrees, counter-clockwise as shown);
* ``noise``: additive Gaussian pixel noise of a given standard deviation (pixel units), the
  same seeded noise pattern at every level, clipped to [0, 1];
* ``blur``: Gaussian blur of a given standard deviation (pixels);
* ``contrast``: contrast reduced towards each image's mean grey, by a fraction.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F


def rotate_by(images: torch.Tensor, degrees: float | torch.Tensor) -> torch.Tensor:
    """Turn images about their centres (bilinear, zero outside).

    Args:
        images: float ``(N, 1, H, W)`` in [0, 1].
        degrees: One angle for every image, or ``(N,)`` angles, one per image; positive turns
            counter-clockwise as the image is shown (rows going down), e.g. 90 equals
            ``torch.rot90(images, 1, (2, 3))``.

    Returns:
        The turned images, same shape, clipped to [0, 1]; a single angle of 0 returns a copy.
    """
    if isinstance(degrees, torch.Tensor):
        theta = torch.deg2rad(degrees.to(images.dtype)).to(images.device)
    elif degrees == 0:
        return images.clone()
    else:
        theta = torch.full((len(images),), math.radians(degrees), dtype=images.dtype)
        theta = theta.to(images.device)
    cos, sin = torch.cos(theta), torch.sin(theta)
    zero = torch.zeros_like(theta)
    affine = torch.stack([torch.stack([cos, -sin, zero], 1), torch.stack([sin, cos, zero], 1)], 1)
    grid = F.affine_grid(affine, list(images.shape), align_corners=False)
    return F.grid_sample(images, grid, align_corners=False).clamp_(0.0, 1.0)


def add_noise(images: torch.Tensor, std: float, seed: int = 0) -> torch.Tensor:
    """Add seeded Gaussian noise to every pixel.

    Args:
        images: float ``(N, 1, H, W)`` in [0, 1].
        std: Standard deviation of the noise, in pixel units (0 = unchanged).
        seed: Seed of the noise; the same seed gives the same pattern at every ``std``.

    Returns:
        ``images + std · ε`` with ε ~ N(0, 1) per pixel, clipped to [0, 1].
    """
    if std == 0:
        return images.clone()
    generator = torch.Generator().manual_seed(seed)
    noise = torch.randn(images.shape, generator=generator, dtype=images.dtype)
    return (images + std * noise.to(images.device)).clamp_(0.0, 1.0)


def gaussian_kernel(sigma: float) -> torch.Tensor:
    """The normalised 1-D Gaussian kernel of standard deviation ``sigma`` pixels.

    Args:
        sigma: Standard deviation in pixels (> 0).

    Returns:
        float32 ``(2r + 1,)`` summing to 1, with radius ``r = ceil(3 σ)``.
    """
    radius = max(1, math.ceil(3 * sigma))
    x = torch.arange(-radius, radius + 1, dtype=torch.float64)
    kernel = torch.exp(-0.5 * (x / sigma) ** 2)
    return (kernel / kernel.sum()).float()


def blur(images: torch.Tensor, sigma: float) -> torch.Tensor:
    """Blur every image with a separable Gaussian kernel (zero padding, i.e. black borders).

    Args:
        images: float ``(N, 1, H, W)`` in [0, 1].
        sigma: Standard deviation of the kernel in pixels (0 = unchanged).

    Returns:
        The blurred images, same shape, in [0, 1].
    """
    if sigma == 0:
        return images.clone()
    kernel = gaussian_kernel(sigma).to(images.device, images.dtype)
    radius = len(kernel) // 2
    rows = F.conv2d(images, kernel.view(1, 1, -1, 1), padding=(radius, 0))
    return F.conv2d(rows, kernel.view(1, 1, 1, -1), padding=(0, radius)).clamp_(0.0, 1.0)


def reduce_contrast(images: torch.Tensor, fraction: float) -> torch.Tensor:
    """Pull every pixel towards its image's mean grey.

    Args:
        images: float ``(N, 1, H, W)`` in [0, 1].
        fraction: How much contrast is removed, in [0, 1]: 0 = unchanged, 1 = flat grey.

    Returns:
        ``m + (1 − fraction)(x − m)`` with ``m`` each image's mean, same shape, in [0, 1].
    """
    if fraction == 0:
        return images.clone()
    mean = images.mean(dim=(1, 2, 3), keepdim=True)
    return mean + (1.0 - fraction) * (images - mean)


@dataclass(frozen=True)
class Shift:
    """One kind of dataset shift and its grid of severities.

    Attributes:
        name: Stable key (cache keys, CLI).
        title: Name shown in the app.
        severity: What the severity measures, e.g. ``"angle (degrees)"``.
        severities: The grid, ascending, starting at 0 (no shift).
        description: One sentence on the transformation.
        apply: ``apply(images, severity, seed)`` → transformed images.
    """

    name: str
    title: str
    severity: str
    severities: tuple[float, ...]
    description: str
    apply: Callable[[torch.Tensor, float, int], torch.Tensor]


SHIFTS: dict[str, Shift] = {
    shift.name: shift
    for shift in (
        Shift(
            "rotation",
            "Rotation",
            "angle (degrees)",
            tuple(float(a) for a in range(0, 181, 15)),
            "Every test digit turned by the same angle (rotated MNIST, Ovadia et al. 2019).",
            lambda x, severity, seed: rotate_by(x, severity),
        ),
        Shift(
            "noise",
            "Gaussian noise",
            "noise standard deviation (pixel units)",
            tuple(round(0.1 * i, 1) for i in range(11)),
            "Independent Gaussian noise added to every pixel, clipped to [0, 1].",
            add_noise,
        ),
        Shift(
            "blur",
            "Blur",
            "blur standard deviation (pixels)",
            tuple(0.5 * i for i in range(7)),
            "A Gaussian blur: strokes get wider and fainter.",
            lambda x, severity, seed: blur(x, severity),
        ),
        Shift(
            "contrast",
            "Low contrast",
            "contrast removed (fraction)",
            tuple(round(0.1 * i, 1) for i in range(10)),
            "Ink and background pulled towards the image's mean grey.",
            lambda x, severity, seed: reduce_contrast(x, severity),
        ),
    )
}
"""The shifts of the Calibration page and the ``calibration`` command, by name."""


def shift_images(images: torch.Tensor, shift: str, severity: float, seed: int = 0) -> torch.Tensor:
    """Apply one shift of :data:`SHIFTS` at one severity.

    Args:
        images: float ``(N, 1, H, W)`` in [0, 1]; not modified.
        shift: A :data:`SHIFTS` name.
        severity: The severity (any value, not only the grid's).
        seed: Seed of random shifts (noise).

    Returns:
        The shifted images, same shape, in [0, 1].

    Raises:
        ValueError: If ``shift`` is unknown or ``severity`` is negative.
    """
    if shift not in SHIFTS:
        raise ValueError(f"shift must be one of {sorted(SHIFTS)}, got {shift!r}")
    if severity < 0:
        raise ValueError(f"severity must be ≥ 0, got {severity}")
    return SHIFTS[shift].apply(images, float(severity), seed)
