"""The Adversarial page's pictures.

Digit grids, robustness curves against ε and the class probabilities along a targeted attack.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import MODEL_COLORS, class_color, layout, vline
from app.figures.pixels import enlarge
from core.studies.robustness import RobustnessCurve

DASHES = ("solid", "dot")
HEIGHT = 330
EPS_AXIS = {"title": {"text": "ε (pixel units; images in [0, 1])"}}


def tile(rows: list[np.ndarray]) -> np.ndarray:
    """Stack rows of digits into one enlarged image, with grey 2-pixel gaps between them.

    Each pixel becomes a square of 3 × 3 (:func:`~app.figures.pixels.enlarge`).

    Args:
        rows: Rows of ``(G, 28, 28)`` images in [0, 1], the same ``G`` in every row.

    Returns:
        One image ``(30 · len(rows) · 3, 30 · G · 3)`` in [0, 1].
    """
    padded = [np.pad(r, ((0, 0), (0, 2), (0, 2)), constant_values=0.35) for r in rows]
    big = np.concatenate([np.concatenate(list(r), axis=1) for r in padded], axis=0)
    return enlarge(big)


def curve_figure(
    curves: dict[str, RobustnessCurve], fields: dict[str, str], title: str, y: str, eps: float
) -> go.Figure:
    """Plot robustness curves against ε, one line per model and field.

    Args:
        curves: Model title → curve; one colour per model.
        fields: Curve attribute → label; one dash per field.
        title: The figure's title.
        y: The y-axis title.
        eps: The slider's ε, drawn as a dotted line.

    Returns:
        The figure.
    """
    lines = [
        go.Scatter(
            x=curve.eps,
            y=getattr(curve, field),
            name=model + (f", {label}" if len(fields) > 1 else ""),
            mode="lines+markers",
            line={"color": MODEL_COLORS[i % len(MODEL_COLORS)], "dash": DASHES[j]},
        )
        for i, (model, curve) in enumerate(curves.items())
        for j, (field, label) in enumerate(fields.items())
    ]
    marker = vline(eps, dash="dot", color="grey")
    return go.Figure(
        lines, layout(title, HEIGHT, EPS_AXIS, {"title": {"text": y}}, shapes=[marker])
    )


def trajectory_figure(probs: np.ndarray, target: int) -> go.Figure:
    """Plot the class probabilities along a targeted attack.

    Args:
        probs: Class probabilities ``(steps + 1, 10)``, one row per iteration.
        target: The target class, drawn in bold; each class in its colour (:func:`class_color`).

    Returns:
        The figure.
    """
    lines = [
        go.Scatter(
            y=probs[:, c],
            name=f"{c} (target)" if c == target else str(c),
            mode="lines",
            line={"width": 4 if c == target else 1.5, "color": class_color(c)},
        )
        for c in range(probs.shape[1])
    ]
    xaxis = {"title": {"text": "iteration"}}
    yaxis = {"title": {"text": "probability"}, "range": [0, 1.02]}
    return go.Figure(lines, layout("Class probabilities over the iterations", HEIGHT, xaxis, yaxis))
