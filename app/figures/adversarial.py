"""The Adversarial page's pictures: digit grids, robustness curves against ε and the class
probabilities along a targeted attack."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout, vline
from core.studies.robustness import RobustnessCurve

SCALE = 3  # screen pixels per MNIST pixel in a digit grid
DASHES = ("solid", "dot")
HEIGHT = 330
EPS_AXIS = {"title": {"text": "ε (pixel units; images in [0, 1])"}}


def tile(rows: list[np.ndarray]) -> np.ndarray:
    """Stack rows of ``(G, 28, 28)`` images in [0, 1] into one image enlarged ``SCALE`` times,
    with grey 2-pixel gaps."""
    padded = [np.pad(r, ((0, 0), (0, 2), (0, 2)), constant_values=0.35) for r in rows]
    big = np.concatenate([np.concatenate(list(r), axis=1) for r in padded], axis=0)
    return np.kron(big, np.ones((SCALE, SCALE), dtype=np.float32))


def curve_figure(
    curves: dict[str, RobustnessCurve], fields: dict[str, str], title: str, y: str, eps: float
) -> go.Figure:
    """One line per model (``curves``: title → curve; colour) and field (``fields``: curve
    attribute → label; dash) against ε; the slider's ``eps`` dotted. ``y``: the axis title."""
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
    """Class probabilities ``(steps + 1, 10)`` against the iteration; the ``target`` in bold."""
    lines = [
        go.Scatter(
            y=probs[:, c],
            name=f"{c} (target)" if c == target else str(c),
            mode="lines",
            line={"width": 4 if c == target else 1.5, "color": MODEL_COLORS[c]},
        )
        for c in range(probs.shape[1])
    ]
    xaxis = {"title": {"text": "iteration"}}
    yaxis = {"title": {"text": "probability"}, "range": [0, 1.02]}
    return go.Figure(lines, layout("Class probabilities over the iterations", HEIGHT, xaxis, yaxis))
