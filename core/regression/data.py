"""One-dimensional regression data sets, reproducible from a seed.

Three presets and the student's own points:

* ``"blundell"``: Blundell et al. (2015, §5.2, fig. 5):
  y = x + 0.3·sin(2π(x+ε)) + 0.3·sin(4π(x+ε)) + ε, ε ~ N(0, noise²) (noise 0.02 by default),
  training x uniform in [0, 0.5], plotted on [−0.5, 1.2];
* ``"gap"``: two clusters with a hole between them, y = sin(2x) + 0.2·x + ε, x in
  [−1.5, −0.5] ∪ [0.5, 1.5]: the in-between uncertainty that mean-field VI and MC dropout
  underestimate (Foong et al. 2019);
* ``"heteroscedastic"``: y = sin(3x) + ε with ε ~ N(0, σ(x)²), σ(x) = noise·(0.1 + 0.9·(x+1)/2)
  growing from a tenth of ``noise`` at x = −1 to ``noise`` at x = 1 (aleatoric vs epistemic);
* :func:`user_data`: points the student drew; the training range is their x extent.

Every data set carries held-out *in-range* test points (drawn like the training points from
an independent stream of the same seed) for the numbers, the intervals of x that count as
"inside the training range", a plotting range and a zoomed-out range.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable
from dataclasses import dataclass

import torch

N_TEST = 500
"""Held-out in-range test points of a preset."""
MAX_INPUTS = 2000
"""Most training points a data set may have (preset slider or drawn points)."""
MIN_USER_POINTS = 2
USER_PLOT_RANGE = (0.0, 1.0)
"""x range of the drawing canvas (the y range is :data:`USER_Y_RANGE`)."""
USER_Y_RANGE = (-1.0, 1.0)


@dataclass(frozen=True)
class Preset:
    """A generating process of 1-D data.

    Attributes:
        name: Key in :data:`PRESETS`.
        title: Human name.
        description: One sentence on what it shows.
        intervals: Where training (and held-out test) x are drawn, uniformly over their union.
        plot_range: x range of the main plot.
        wide_range: x range of the zoomed-out view.
        default_n_inputs: Default number of training points.
        default_noise: Default noise level (the standard deviation of ε, or its largest value
            for ``"heteroscedastic"``).
        sample: ``sample(x, noise, generator) -> y``: noisy targets at ``x`` ``(N,)``.
        truth: ``truth(x) -> f(x)``, the noise-free curve.
        noise_std: ``noise_std(x, noise) -> σ(x)``, the true noise standard deviation.
    """

    name: str
    title: str
    description: str
    intervals: tuple[tuple[float, float], ...]
    plot_range: tuple[float, float]
    wide_range: tuple[float, float]
    default_n_inputs: int
    default_noise: float
    sample: Callable[[torch.Tensor, float, torch.Generator], torch.Tensor]
    truth: Callable[[torch.Tensor], torch.Tensor]
    noise_std: Callable[[torch.Tensor, float], torch.Tensor]


def _blundell_truth(x: torch.Tensor) -> torch.Tensor:
    return x + 0.3 * torch.sin(2 * math.pi * x) + 0.3 * torch.sin(4 * math.pi * x)


def _blundell_sample(x: torch.Tensor, noise: float, generator: torch.Generator) -> torch.Tensor:
    eps = noise * torch.randn(x.shape, generator=generator)
    return _blundell_truth(x + eps)  # x + 0.3·sin(2π(x+ε)) + 0.3·sin(4π(x+ε)) + ε


def _gap_truth(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(2 * x) + 0.2 * x


def _hetero_truth(x: torch.Tensor) -> torch.Tensor:
    return torch.sin(3 * x)


def _hetero_std(x: torch.Tensor, noise: float) -> torch.Tensor:
    return noise * (0.1 + 0.9 * (x.clamp(-1, 1) + 1) / 2)


def _constant_std(x: torch.Tensor, noise: float) -> torch.Tensor:
    return torch.full_like(x, noise)


def _additive(truth, std):
    def sample(x: torch.Tensor, noise: float, generator: torch.Generator) -> torch.Tensor:
        return truth(x) + std(x, noise) * torch.randn(x.shape, generator=generator)

    return sample


PRESETS: dict[str, Preset] = {
    "blundell": Preset(
        "blundell",
        "Blundell's curve",
        "Blundell et al. (2015), fig. 5: a wiggly curve seen on [0, 0.5] only.",
        ((0.0, 0.5),),
        (-0.5, 1.2),
        (-1.5, 2.2),
        100,
        0.02,
        _blundell_sample,
        _blundell_truth,
        _constant_std,
    ),
    "gap": Preset(
        "gap",
        "Two clusters with a gap",
        "Data on both sides of a hole: is the model unsure in between (Foong et al. 2019)?",
        ((-1.5, -0.5), (0.5, 1.5)),
        (-2.5, 2.5),
        (-5.0, 5.0),
        100,
        0.1,
        _additive(_gap_truth, _constant_std),
        _gap_truth,
        _constant_std,
    ),
    "heteroscedastic": Preset(
        "heteroscedastic",
        "Noise growing with x",
        "The noise grows tenfold from left to right: aleatoric, not epistemic, uncertainty.",
        ((-1.0, 1.0),),
        (-1.5, 1.5),
        (-4.0, 4.0),
        200,
        0.4,
        _additive(_hetero_truth, _hetero_std),
        _hetero_truth,
        _hetero_std,
    ),
}
"""The preset data sets by name."""


@dataclass(frozen=True)
class RegressionData:
    """A 1-D training set with held-out in-range test points and the ranges to plot.

    Tensors are float32 on the CPU; treat them as read-only.

    Attributes:
        name: Preset name, or ``"user"`` for drawn points.
        title: Human name.
        x_train: Training inputs ``(N,)``.
        y_train: Training targets ``(N,)``.
        x_test: Held-out in-range test inputs ``(T,)`` (the training points for user data).
        y_test: Held-out test targets ``(T,)``.
        intervals: x intervals counted as inside the training range.
        plot_range: x range of the main plot.
        wide_range: x range of the zoomed-out view.
        key: JSON-serialisable identity of the data (preset settings, or a digest of the
            points), used in cache keys.
        held_out: Whether ``x_test`` are independent of the training points.
    """

    name: str
    title: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor
    intervals: tuple[tuple[float, float], ...]
    plot_range: tuple[float, float]
    wide_range: tuple[float, float]
    key: dict
    held_out: bool = True

    def __len__(self) -> int:
        """Number of training points ``N``."""
        return len(self.x_train)

    def inside(self, x: torch.Tensor) -> torch.Tensor:
        """Whether each input lies in one of the training intervals.

        Args:
            x: Inputs, any shape.

        Returns:
            Booleans shaped like ``x``.
        """
        mask = torch.zeros_like(x, dtype=torch.bool)
        for lo, hi in self.intervals:
            mask |= (x >= lo) & (x <= hi)
        return mask

    def truth(self, x: torch.Tensor) -> torch.Tensor | None:
        """The noise-free curve of a preset.

        Args:
            x: Inputs, any shape.

        Returns:
            f(x) shaped like ``x``, or None for user data (no known curve).
        """
        preset = PRESETS.get(self.name)
        return None if preset is None else preset.truth(x)

    def noise_std(self, x: torch.Tensor) -> torch.Tensor | None:
        """The true noise standard deviation of a preset.

        Args:
            x: Inputs, any shape.

        Returns:
            σ(x) shaped like ``x``, or None for user data.
        """
        preset = PRESETS.get(self.name)
        return None if preset is None else preset.noise_std(x, self.key["noise"])


def _uniform_in(
    intervals: tuple[tuple[float, float], ...], n_inputs: int, generator: torch.Generator
) -> torch.Tensor:
    """``n_inputs`` points uniform over the union of disjoint ``intervals``."""
    lengths = torch.tensor([hi - lo for lo, hi in intervals])
    u = torch.rand(n_inputs, generator=generator) * lengths.sum()
    cum = torch.cumsum(lengths, 0)
    which = torch.searchsorted(cum, u, right=True).clamp(max=len(intervals) - 1)
    starts = torch.tensor([lo for lo, _ in intervals])
    offset = u - torch.cat([torch.zeros(1), cum[:-1]])[which]
    return starts[which] + offset


def make_data(
    preset: str = "blundell",
    n_inputs: int | None = None,
    noise: float | None = None,
    seed: int = 0,
) -> RegressionData:
    """Draw a preset data set.

    Args:
        preset: A key of :data:`PRESETS`.
        n_inputs: Number of training points; None for the preset's default.
        noise: Noise level (see :class:`Preset`); None for the preset's default.
        seed: Seed of the training points; the held-out points use an independent stream.

    Returns:
        The data set.

    Raises:
        ValueError: If ``preset`` is unknown, ``n_inputs`` is outside 2..:data:`MAX_INPUTS` or
            ``noise`` is negative.
    """
    if preset not in PRESETS:
        raise ValueError(f"preset must be one of {tuple(PRESETS)}, got {preset!r}")
    p = PRESETS[preset]
    n_inputs = p.default_n_inputs if n_inputs is None else int(n_inputs)
    noise = p.default_noise if noise is None else float(noise)
    if not 2 <= n_inputs <= MAX_INPUTS:
        raise ValueError(f"n_inputs must be in 2..{MAX_INPUTS}, got {n_inputs}")
    if noise < 0:
        raise ValueError(f"noise must be ≥ 0, got {noise}")
    train_gen = torch.Generator().manual_seed(2 * seed)
    test_gen = torch.Generator().manual_seed(2 * seed + 1)
    x_train = _uniform_in(p.intervals, n_inputs, train_gen)
    y_train = p.sample(x_train, noise, train_gen)
    x_test = _uniform_in(p.intervals, N_TEST, test_gen)
    y_test = p.sample(x_test, noise, test_gen)
    return RegressionData(
        name=preset,
        title=p.title,
        x_train=x_train,
        y_train=y_train,
        x_test=x_test,
        y_test=y_test,
        intervals=p.intervals,
        plot_range=p.plot_range,
        wide_range=p.wide_range,
        key={"preset": preset, "n_inputs": n_inputs, "noise": noise, "seed": seed},
    )


def user_data(x: list[float] | torch.Tensor, y: list[float] | torch.Tensor) -> RegressionData:
    """A data set of the student's own points.

    The training range is [min x, max x]; there are no held-out points, so the test points
    are the training points (``held_out=False``). The plot shows the canvas range
    :data:`USER_PLOT_RANGE` widened to the points, and the zoomed-out view three times that.

    Args:
        x: Inputs ``(N,)``.
        y: Targets ``(N,)``.

    Returns:
        The data set.

    Raises:
        ValueError: If ``x`` and ``y`` differ in length, there are fewer than
            :data:`MIN_USER_POINTS` distinct x or more than :data:`MAX_INPUTS` points, or a
            value is not finite.
    """
    x = torch.as_tensor(x, dtype=torch.float32).flatten()
    y = torch.as_tensor(y, dtype=torch.float32).flatten()
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same length, got {len(x)} and {len(y)}")
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError("every point must have finite coordinates")
    if len(torch.unique(x)) < MIN_USER_POINTS:
        raise ValueError(f"draw at least {MIN_USER_POINTS} points at different x positions")
    if len(x) > MAX_INPUTS:
        raise ValueError(f"at most {MAX_INPUTS} points, got {len(x)}")
    lo, hi = float(x.min()), float(x.max())
    plot = (min(USER_PLOT_RANGE[0], lo), max(USER_PLOT_RANGE[1], hi))
    width = plot[1] - plot[0]
    digest = hashlib.sha256(x.numpy().tobytes() + y.numpy().tobytes()).hexdigest()[:16]
    return RegressionData(
        name="user",
        title="Your points",
        x_train=x,
        y_train=y,
        x_test=x,
        y_test=y,
        intervals=((lo, hi),),
        plot_range=plot,
        wide_range=(plot[0] - width, plot[1] + width),
        key={"preset": "user", "n_inputs": len(x), "digest": digest},
        held_out=False,
    )


MAX_DRAWN_POINTS = 200
"""A freehand stroke is thinned to at most this many points (evenly over its segments)."""
_ORIGIN = {"left": 0.0, "center": 0.5, "right": 1.0, "top": 0.0, "bottom": 1.0}


def _stroke_points(obj: dict) -> list[tuple[float, float]]:
    """Canvas pixel coordinates of one drawn object (a point or a freehand stroke)."""
    kind = str(obj.get("type", "")).lower()
    if kind == "circle":
        radius = float(obj.get("radius", 0)) * float(obj.get("scaleX", 1))
        left = float(obj.get("left", 0)) - _ORIGIN.get(obj.get("originX", "left"), 0) * 2 * radius
        top = float(obj.get("top", 0)) - _ORIGIN.get(obj.get("originY", "top"), 0) * 2 * radius
        return [(left + radius, top + radius)]
    if kind == "path":
        points = []
        for command in obj.get("path") or []:
            coords = [float(c) for c in command[1:]]
            if len(coords) >= 2:
                points.append((coords[-2], coords[-1]))  # the segment's end point
        return points
    return []


def points_from_drawing(
    drawing: dict | None,
    width: int,
    height: int,
    x_range: tuple[float, float] = USER_PLOT_RANGE,
    y_range: tuple[float, float] = USER_Y_RANGE,
) -> tuple[list[float], list[float]]:
    """Data points from a canvas drawing (Fabric.js JSON of ``streamlit-drawable-canvas``).

    Points (``Circle`` objects) give one point each; freehand strokes (``Path``) give the end
    points of their segments, resampled evenly along the stroke to at most
    :data:`MAX_DRAWN_POINTS`. Pixels map linearly onto ``x_range`` (left to right) and
    ``y_range`` (bottom to top); anything outside the canvas is dropped.

    Args:
        drawing: The canvas's ``json_data`` (``{"objects": [...]}``), or None.
        width: Canvas width in pixels.
        height: Canvas height in pixels.
        x_range: x at the left and right edges.
        y_range: y at the bottom and top edges.

    Returns:
        ``(x, y)`` lists of equal length (empty for an empty drawing).
    """
    pixels: list[tuple[float, float]] = []
    for obj in (drawing or {}).get("objects", []):
        stroke = _stroke_points(obj)
        if len(stroke) > MAX_DRAWN_POINTS:
            keep = torch.linspace(0, len(stroke) - 1, MAX_DRAWN_POINTS).round().long().tolist()
            stroke = [stroke[i] for i in keep]
        pixels += stroke
    x, y = [], []
    for px, py in pixels:
        if 0 <= px <= width and 0 <= py <= height:
            x.append(x_range[0] + px / width * (x_range[1] - x_range[0]))
            y.append(y_range[1] - py / height * (y_range[1] - y_range[0]))
    return x, y
