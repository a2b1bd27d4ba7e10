"""Argument types of the command line's numbers: a value out of range is refused in one line.

Each factory gives an ``argparse`` ``type``: the text is parsed and checked, and a bad value
raises :class:`argparse.ArgumentTypeError`, which the parser reports as one ``error:`` line
(exit code 2). Floats must be finite; every whole number has a sane maximum, so that a typo of
twenty digits is refused before any work starts. The shared ranges are named below.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

SHOWN = 24
"""Characters of a refused text that its message repeats."""


def _shown(text: str) -> str:
    return repr(text if len(text) <= SHOWN else text[: SHOWN - 1] + "…")


def whole(low: int, high: int) -> Callable[[str], int]:
    """A type for a whole number from ``low`` to ``high``.

    Args:
        low: The smallest value allowed.
        high: The largest value allowed.

    Returns:
        The parser: text → int, or :class:`argparse.ArgumentTypeError`.
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = None
        if value is None or not low <= value <= high:
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} is not a whole number from {low:,} to {high:,}"
            )
        return value

    return parse


def real(
    low: float, high: float, *, low_open: bool = True, high_open: bool = False
) -> Callable[[str], float]:
    """A type for a finite number between ``low`` and ``high``.

    Args:
        low: The lower bound.
        high: The upper bound.
        low_open: Whether ``low`` itself is refused (the default: e.g. a positive number).
        high_open: Whether ``high`` itself is refused.

    Returns:
        The parser: text → float, or :class:`argparse.ArgumentTypeError` (also for ``inf``
        and ``nan``).
    """
    left, right = "(" if low_open else "[", ")" if high_open else "]"

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        above = value > low if low_open else value >= low
        below = value < high if high_open else value <= high
        if not (math.isfinite(value) and above and below):
            raise argparse.ArgumentTypeError(
                f"{_shown(text)} is not a number in {left}{low:g}, {high:g}{right}"
            )
        return value

    return parse


def wholes(low: int, high: int) -> Callable[[str], tuple[int, ...]]:
    """A type for comma-separated whole numbers, each from ``low`` to ``high``.

    Args:
        low: The smallest value allowed.
        high: The largest value allowed.

    Returns:
        The parser: text → tuple of ints (at least one).
    """
    one = whole(low, high)

    def parse(text: str) -> tuple[int, ...]:
        values = tuple(one(t.strip()) for t in text.split(",") if t.strip())
        if not values:
            raise argparse.ArgumentTypeError(f"{_shown(text)} holds no number")
        return values

    return parse


MAX_SAMPLES = 10_000
MAX_WIDTH = 100_000
SAMPLES = whole(1, MAX_SAMPLES)
"""Stochastic passes per input (Monte-Carlo samples, EOT passes)."""
SAMPLE_COUNTS = wholes(1, MAX_SAMPLES)
"""Comma-separated numbers of samples."""
IMAGES = whole(1, 1_000_000)
"""A number of images or data points."""
EPOCHS = whole(1, 10_000)
"""Training epochs."""
STEPS = whole(1, 100_000_000)
"""Steps of a run (bandit steps, full-batch regression steps, timed steps)."""
REPEATS = whole(1, 100_000)
"""Timing rounds."""
SEEDS = whole(1, 1_000)
"""How many seeds (runs) to average."""
SEED = whole(0, 2**32 - 1)
"""One seed."""
THREADS = whole(0, 4_096)
"""CPU threads; 0 for PyTorch's default."""
WORKERS = whole(1, 256)
"""Processes side by side."""
WIDTH = whole(1, MAX_WIDTH)
"""Units of a hidden layer."""
WIDTHS = wholes(1, MAX_WIDTH)
"""Comma-separated units of the hidden layers."""
