"""Figures of the regression playground.

Fitted bands with sampled functions, all methods overlaid, uncertainty along x, loss curves;
the drawing canvas's axes.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import plotly.graph_objects as go
from PIL import Image, ImageDraw

from app.figures import MODEL_COLORS, layout

X_AXIS = {"title": {"text": "x"}, "zeroline": False}
TRUTH_STYLE = {"color": "black", "dash": "dash", "width": 1.5}
POINT_STYLE = {"color": "black", "size": 5, "opacity": 0.7}
FIT_KEY = (
    "Black dots: training data; dashed: the true curve; solid line: predictive mean; dark "
    "band: ±2σ epistemic; light band: ±2σ total (epistemic + aleatoric); thin lines: sampled "
    "functions; grey: the training range."
)
"""The legend of :func:`fit_figure`, to show once above a grid of them."""


def rgba(color: str, alpha: float) -> str:
    """Turn ``#rrggbb`` into a plotly ``rgba(...)`` string.

    Args:
        color: Hex colour.
        alpha: Opacity in [0, 1].

    Returns:
        The colour with that opacity.
    """
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def method_color(index: int) -> str:
    """The colour of a method, by its place in :data:`core.regression.variants.VARIANTS`.

    The playground passes that place, so a method keeps its colour whichever others are shown.

    Args:
        index: Position of the method.

    Returns:
        A hex colour of :data:`app.figures.MODEL_COLORS`.
    """
    return MODEL_COLORS[index % len(MODEL_COLORS)]


def y_range(y: np.ndarray, spread: float = 1.0) -> list[float]:
    """A y-axis range around the data, padded by ``spread`` times its span on both sides.

    Bands that leave it are clipped on purpose: far from the data they may be huge.

    Args:
        y: Training targets.
        spread: Padding in units of the data's span.

    Returns:
        ``[low, high]``.
    """
    lo, hi = float(np.min(y)), float(np.max(y))
    span = max(hi - lo, 0.5)
    return [lo - spread * span, hi + spread * span]


def band(x: np.ndarray, low: np.ndarray, high: np.ndarray, fill: str, name: str) -> list:
    """Two traces filling the area between ``low`` and ``high``.

    Args:
        x: Inputs ``(G,)``.
        low: Lower edge ``(G,)``.
        high: Upper edge ``(G,)``.
        fill: Fill colour.
        name: Legend entry.

    Returns:
        The lower (invisible) and upper (filled to the lower) traces.
    """
    edge = {"width": 0}
    return [
        go.Scatter(x=x, y=low, mode="lines", line=edge, showlegend=False, hoverinfo="skip"),
        go.Scatter(x=x, y=high, mode="lines", line=edge, fill="tonexty", fillcolor=fill, name=name),
    ]


def spaghetti(x: np.ndarray, functions: np.ndarray, color: str, name: str) -> go.Scatter:
    """Sampled functions as one trace of line pieces separated by gaps.

    Args:
        x: Inputs ``(G,)``.
        functions: Sampled functions ``(K, G)``.
        color: Line colour (drawn thin and translucent).
        name: Legend entry.

    Returns:
        The trace.
    """
    # float32 throughout: half the bytes of float64 for the browser to load and decode
    pieces = [np.append(np.float32(x), np.nan) for _ in functions]
    xs = np.concatenate(pieces).astype(np.float32) if pieces else np.array([], np.float32)
    pieces = [np.append(np.float32(f), np.nan) for f in functions]
    ys = np.concatenate(pieces).astype(np.float32) if pieces else np.array([], np.float32)
    return go.Scatter(
        x=xs,
        y=ys,
        mode="lines",
        line={"color": rgba(color, 0.35), "width": 0.8},
        name=name,
        hoverinfo="skip",
        connectgaps=False,
    )


def training_shapes(intervals: list[tuple[float, float]]) -> list[dict]:
    """Grey rectangles over the training intervals.

    Args:
        intervals: x intervals of the training data.

    Returns:
        Plotly shape dicts.
    """
    return [
        {
            "type": "rect",
            "xref": "x",
            "yref": "paper",
            "x0": lo,
            "x1": hi,
            "y0": 0,
            "y1": 1,
            "fillcolor": "rgba(128,128,128,0.08)",
            "line": {"width": 0},
            "layer": "below",
        }
        for lo, hi in intervals
    ]


def fit_figure(
    predictive: dict[str, np.ndarray],
    x_train: np.ndarray,
    y_train: np.ndarray,
    truth: np.ndarray | None,
    intervals: list[tuple[float, float]],
    title: str,
    color: str,
    *,
    spread: float = 1.0,
    height: int = 340,
    show_functions: bool = True,
) -> go.Figure:
    """One method's fit: data, mean, ±2σ bands split into epistemic and total, functions.

    The dark band is ±2 epistemic std (the networks disagree); the light band around it
    reaches ±2 total std, the extra width being the aleatoric noise. No legend (several of
    these figures sit side by side): :data:`FIT_KEY` says it in words.

    Args:
        predictive: ``x``, ``mean``, ``epistemic_std``, ``aleatoric_std`` ``(G,)`` and
            ``functions`` ``(K, G)``.
        x_train: Training inputs.
        y_train: Training targets.
        truth: The noise-free curve on ``predictive["x"]``, or None.
        intervals: Training intervals (shaded).
        title: Figure title.
        color: The method's colour.
        spread: y-axis padding around the data (see :func:`y_range`).
        height: Pixels.
        show_functions: Whether to draw the sampled functions.

    Returns:
        The figure.
    """
    x, mean = predictive["x"], predictive["mean"]
    epistemic, aleatoric = predictive["epistemic_std"], predictive["aleatoric_std"]
    total = np.sqrt(epistemic**2 + aleatoric**2)
    traces = [
        *band(x, mean - 2 * total, mean + 2 * total, rgba(color, 0.15), "±2σ total"),
        *band(x, mean - 2 * epistemic, mean + 2 * epistemic, rgba(color, 0.35), "±2σ epistemic"),
    ]
    if show_functions and len(predictive["functions"]) > 1:
        traces.append(spaghetti(x, predictive["functions"], color, "sampled functions"))
    traces.append(go.Scatter(x=x, y=mean, mode="lines", line={"color": color}, name="mean"))
    if truth is not None:
        traces.append(go.Scatter(x=x, y=truth, mode="lines", line=TRUTH_STYLE, name="truth"))
    traces.append(go.Scatter(x=x_train, y=y_train, mode="markers", marker=POINT_STYLE, name="data"))
    return go.Figure(
        traces,
        layout(
            title,
            height,
            {**X_AXIS, "range": [float(x[0]), float(x[-1])]},
            {"title": {"text": "y"}, "range": y_range(y_train, spread)},
            shapes=training_shapes(intervals),
            showlegend=False,
        ),
    )


def overlay_figure(
    fits: dict[str, dict[str, np.ndarray]],
    x_train: np.ndarray,
    y_train: np.ndarray,
    truth: np.ndarray | None,
    intervals: list[tuple[float, float]],
    title: str,
    *,
    spread: float = 1.0,
    height: int = 460,
    colors: list[str] | None = None,
) -> go.Figure:
    """All methods in one plot: each one's mean and ±2σ total band.

    Args:
        fits: Method title → predictive (as in :func:`fit_figure`), in display order.
        x_train: Training inputs.
        y_train: Training targets.
        truth: The noise-free curve on the grid, or None.
        intervals: Training intervals (shaded).
        title: Figure title.
        spread: y-axis padding around the data.
        height: Pixels.
        colors: One colour per method; default :func:`method_color` by position.

    Returns:
        The figure.
    """
    traces, x = [], None
    for i, (name, p) in enumerate(fits.items()):
        color, x = colors[i] if colors else method_color(i), p["x"]
        total = np.sqrt(p["epistemic_std"] ** 2 + p["aleatoric_std"] ** 2)
        edge = {"color": rgba(color, 0.6), "width": 1, "dash": "dot"}
        traces += [
            go.Scatter(
                x=x,
                y=p["mean"] - 2 * total,
                mode="lines",
                line=edge,
                showlegend=False,
                legendgroup=name,
                hoverinfo="skip",
            ),
            go.Scatter(
                x=x,
                y=p["mean"] + 2 * total,
                mode="lines",
                line=edge,
                fill="tonexty",
                fillcolor=rgba(color, 0.10),
                showlegend=False,
                legendgroup=name,
                hoverinfo="skip",
            ),
            go.Scatter(
                x=x,
                y=p["mean"],
                mode="lines",
                line={"color": color},
                name=name,
                legendgroup=name,
            ),
        ]
    if truth is not None and x is not None:
        traces.append(go.Scatter(x=x, y=truth, mode="lines", line=TRUTH_STYLE, name="truth"))
    traces.append(go.Scatter(x=x_train, y=y_train, mode="markers", marker=POINT_STYLE, name="data"))
    x_axis = {**X_AXIS} if x is None else {**X_AXIS, "range": [float(x[0]), float(x[-1])]}
    return go.Figure(
        traces,
        layout(
            title,
            height,
            x_axis,
            {"title": {"text": "y"}, "range": y_range(y_train, spread)},
            shapes=training_shapes(intervals),
        ),
    )


def std_figure(
    fits: dict[str, dict[str, np.ndarray]],
    intervals: list[tuple[float, float]],
    title: str,
    noise_std: tuple[np.ndarray, np.ndarray] | None = None,
    height: int = 320,
    colors: list[str] | None = None,
) -> go.Figure:
    """Epistemic (solid) and aleatoric (dotted) std along x for every method.

    One legend entry per method (it toggles both of its lines).

    Args:
        fits: Method title → predictive (as in :func:`fit_figure`), in display order.
        intervals: Training intervals (shaded).
        title: Figure title.
        noise_std: ``(x, σ(x))`` of the true noise, or None.
        height: Pixels.
        colors: One colour per method; default :func:`method_color` by position.

    Returns:
        The figure.
    """
    traces = []
    for i, (name, p) in enumerate(fits.items()):
        color = colors[i] if colors else method_color(i)
        traces += [
            go.Scatter(
                x=p["x"],
                y=p["epistemic_std"],
                mode="lines",
                line={"color": color},
                name=name,
                legendgroup=name,
            ),
            go.Scatter(
                x=p["x"],
                y=p["aleatoric_std"],
                mode="lines",
                line={"color": color, "dash": "dot"},
                name=f"{name}: aleatoric",
                legendgroup=name,
                showlegend=False,
            ),
        ]
    if noise_std is not None:
        traces.append(
            go.Scatter(
                x=noise_std[0], y=noise_std[1], mode="lines", line=TRUTH_STYLE, name="true noise σ"
            )
        )
    return go.Figure(
        traces,
        layout(
            title,
            height,
            X_AXIS,
            {"title": {"text": "standard deviation"}, "rangemode": "tozero"},
            shapes=training_shapes(intervals),
        ),
    )


def loss_figure(
    histories: dict[str, list[float]],
    title: str = "Training loss",
    height: int = 320,
    colors: list[str] | None = None,
) -> go.Figure:
    """Loss per training point against the step, one line per method.

    Args:
        histories: Method title → loss after each step (nats per point), in display order.
        title: Figure title.
        height: Pixels.
        colors: One colour per method; default :func:`method_color` by position.

    Returns:
        The figure; the y-axis spans the last 90 % of the steps up to their 98th percentile,
        so early values and rare spikes do not flatten the curves.
    """
    traces, lows, highs = [], [], []
    for i, (name, losses) in enumerate(histories.items()):
        losses = np.asarray(losses, dtype=float)
        color = colors[i] if colors else method_color(i)
        traces.append(
            go.Scatter(
                x=np.arange(1, len(losses) + 1),
                y=losses,
                mode="lines",
                line={"color": color, "width": 1.2},
                name=name,
            )
        )
        settled = losses[len(losses) // 10 :]
        lows.append(np.min(settled))
        highs.append(np.percentile(settled, 98))
    y_axis = {"title": {"text": "loss per point (nats)"}}
    if lows:
        pad = 0.05 * (max(highs) - min(lows) + 1e-9)
        y_axis["range"] = [min(lows) - pad, max(highs) + pad]
    return go.Figure(
        traces, layout(title, height, {"title": {"text": "step (full batch)"}}, y_axis)
    )


@cache
def canvas_background(
    width: int, height: int, x_range: tuple[float, float], y_range: tuple[float, float]
) -> Image.Image:
    """Axes for the drawing canvas: a grid every 0.25 in x and 0.5 in y, the x-axis darker.

    Args:
        width: Canvas width in pixels.
        height: Canvas height in pixels.
        x_range: ``(low, high)`` of x across the canvas.
        y_range: ``(low, high)`` of y from the bottom to the top.

    Returns:
        The RGB image (one per size and ranges, shared: never draw on it).
    """
    image = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(image)
    (x0, x1), (y0, y1) = x_range, y_range
    for x in np.arange(x0, x1 + 1e-9, 0.25):
        px = (x - x0) / (x1 - x0) * (width - 1)
        draw.line([(px, 0), (px, height)], fill=(225, 225, 225))
        draw.text((px + 3, height - 14), f"{x:g}", fill=(120, 120, 120))
    for y in np.arange(y0, y1 + 1e-9, 0.5):
        py = (y1 - y) / (y1 - y0) * (height - 1)
        color = (170, 170, 170) if abs(y) < 1e-9 else (225, 225, 225)
        draw.line([(0, py), (width, py)], fill=color)
        draw.text((3, py + 2), f"{y:g}", fill=(120, 120, 120))
    return image
