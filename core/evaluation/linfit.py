"""Least-squares straight line ``y = a + b·x`` with its coefficient of determination R²."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class LinearFit:
    """A fitted line ``y ≈ intercept + slope·x``.

    Units are those of the data (here seconds per epoch and per sample).

    Attributes:
        intercept: Value of the line at x = 0.
        slope: Change of y per unit of x.
        r2: Coefficient of determination 1 − SS_res / SS_tot (1 when y is constant and fitted
            exactly).
    """

    intercept: float
    slope: float
    r2: float

    def to_dict(self) -> dict:
        """JSON-serialisable form.

        Returns:
            ``{"intercept", "slope", "r2"}``.
        """
        return asdict(self)


def fit_line(xs: Sequence[float], ys: Sequence[float]) -> LinearFit:
    """Ordinary least squares through the points ``(xs[i], ys[i])``.

    Args:
        xs: x values, at least two distinct.
        ys: y values, as many as ``xs``.

    Returns:
        The fitted line and its R².

    Raises:
        ValueError: If ``xs`` and ``ys`` differ in length or ``xs`` has fewer than two distinct
            values.
    """
    if len(xs) != len(ys):
        raise ValueError(f"{len(xs)} x values but {len(ys)} y values")
    n = len(xs)
    mean_x, mean_y = sum(xs) / max(n, 1), sum(ys) / max(n, 1)
    sxx = sum((x - mean_x) ** 2 for x in xs)
    if n < 2 or sxx == 0:
        raise ValueError("a line fit needs at least two distinct x values")
    sxy = sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True))
    slope = sxy / sxx
    intercept = mean_y - slope * mean_x
    ss_res = sum((y - intercept - slope * x) ** 2 for x, y in zip(xs, ys, strict=True))
    ss_tot = sum((y - mean_y) ** 2 for y in ys)
    r2 = 1.0 - ss_res / ss_tot if ss_tot > 0 else 1.0
    return LinearFit(intercept=intercept, slope=slope, r2=r2)
