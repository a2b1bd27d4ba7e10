"""The rotated-digit experiment (Gal 2016, thesis fig. 5.x; the lecture seed's figure).

A digit is turned step by step through a range of angles and every sampled network's softmax is
recorded at each step, with the predictive entropy and mutual information: a "1" turned towards
the horizontal is read as 5 or 7 at some angles, yet the sampled networks disagree there — the
model's uncertainty is large even where its mean prediction looks decided.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from core.engine.interface import LabModel
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.shift import rotate_by
from core.evaluation.uncertainty import summarize


@dataclass(frozen=True)
class RotationSweep:
    """One model's predictions along a rotation of one image.

    Attributes:
        angles: ``(T,)`` degrees.
        images: ``(T, 28, 28)`` the rotated images.
        probs: ``(T, n_samples, C)`` each sampled network's softmax at each angle.
        mean: ``(T, C)`` the predictive mean.
        entropy: ``(T,)`` predictive entropy, nats.
        mutual_information: ``(T,)`` nats.
    """

    angles: torch.Tensor
    images: torch.Tensor
    probs: torch.Tensor
    mean: torch.Tensor
    entropy: torch.Tensor
    mutual_information: torch.Tensor

    def top_classes(self, count: int = 3) -> list[int]:
        """The classes with the highest predictive mean at any angle, most probable first.

        Args:
            count: How many classes.

        Returns:
            Class indices.
        """
        return self.mean.max(0).values.argsort(descending=True)[:count].tolist()


def rotation_angles(max_degrees: float = 180.0, steps: int = 12) -> torch.Tensor:
    """``steps`` evenly spaced angles from 0 to ``max_degrees``.

    Args:
        max_degrees: The last angle (degrees).
        steps: Number of angles, at least 2.

    Returns:
        ``(steps,)`` float32 degrees.

    Raises:
        ValueError: If ``steps < 2``.
    """
    if steps < 2:
        raise ValueError(f"a sweep needs at least 2 steps, got {steps}")
    return torch.linspace(0.0, max_degrees, steps)


@torch.no_grad()
def rotation_sweep(
    model: LabModel, image: torch.Tensor, angles: torch.Tensor, n_samples: int, seed: int = 0
) -> RotationSweep:
    """Turn ``image`` through ``angles`` and record ``n_samples`` passes at each.

    The Monte-Carlo noise is seeded (the caller's random state is left as it was), so the same
    input always shows the same sweep.

    Args:
        model: The network (not modified).
        image: ``(28, 28)`` in [0, 1], white ink on black.
        angles: ``(T,)`` degrees.
        n_samples: Monte-Carlo passes per angle.
        seed: Seed of the passes' noise.

    Returns:
        The sweep (CPU tensors).
    """
    images = rotate_by(image.expand(len(angles), 1, *image.shape[-2:]).clone(), angles)
    with seeded(seed):
        probs = predictive_samples(model, images, n_samples)  # (n_samples, T, C)
    summary = summarize(probs)
    return RotationSweep(
        angles=angles.cpu(),
        images=images[:, 0].cpu(),
        probs=probs.transpose(0, 1).cpu(),
        mean=summary.mean,
        entropy=summary.entropy,
        mutual_information=summary.mutual_information,
    )
