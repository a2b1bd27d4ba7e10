"""Dropout whose masks come from 16 random bits per unit, for the many passes of MC dropout.

``F.dropout`` draws every unit's mask with its own call to the generator. The passes of MC
dropout through a CNN's dense head need hundreds of millions of masks per acquisition round
(100 passes × 2,000 images × 3,872 features in Gal et al.'s network), and on one CPU thread
those draws took more time than the matrix products they feed. :func:`bit_dropout` cuts one
64-bit draw into four 16-bit integers, one unit each.
"""

from __future__ import annotations

import torch

LEVELS = 1 << 16
"""Values of a unit's random integer: a drop probability is rounded to a multiple of 1 / LEVELS."""


def quantised(p: float) -> float:
    """The drop probability :func:`bit_dropout` applies for ``p``: round(p · 2¹⁶) / 2¹⁶.

    Args:
        p: Requested drop probability in [0, 1).

    Returns:
        The probability applied; equal to ``p`` for every multiple of 2⁻¹⁶ (0.25, 0.5, …).
    """
    return round(p * LEVELS) / LEVELS


def bit_dropout(h: torch.Tensor, p: float) -> torch.Tensor:
    """Inverted dropout: each unit dropped with probability :func:`quantised` ``(p)``.

    Every unit gets a uniform 16-bit integer of its own (four from each 64-bit draw of torch's
    generator on ``h``'s device, so ``torch.manual_seed`` fixes them); it is kept when the
    integer is at or above the drop threshold, and kept units are scaled by 1 / (1 − that
    probability) so that the expectation of every unit stays ``h``.

    Args:
        h: Activations, any shape.
        p: Drop probability in [0, 1).

    Returns:
        A new tensor of ``h``'s shape.

    Raises:
        ValueError: If ``p`` is outside [0, 1).
    """
    if not 0.0 <= p < 1.0:
        raise ValueError(f"a drop probability must be in [0, 1), not {p}")
    drop = quantised(p)
    n = h.numel()
    words = torch.empty((n + 3) // 4, dtype=torch.int64, device=h.device)
    words.random_(-(1 << 63), (1 << 63) - 1)
    units = words.view(torch.int16)[:n].view(h.shape)  # uniform in [−2¹⁵, 2¹⁵)
    # 1 / (1 − p) where the integer is at or above the threshold, else 0, built in float32:
    # comparing int16s into a bool mask and multiplying by it took twice as long. A kept unit
    # is h · (1 · scale) = h · scale, as if scaled after masking.
    keep = units.float().ge_(round(drop * LEVELS) - LEVELS // 2).mul_(1.0 / (1.0 - drop))
    return h.mul(keep)
