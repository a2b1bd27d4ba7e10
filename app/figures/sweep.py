"""The rotated-digit figure: each sampled network's softmax per angle, and the uncertainty."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import LEGEND_MARKER, class_color, layout


def sweep_figure(
    angles: np.ndarray,
    probs: np.ndarray,
    entropy: np.ndarray,
    mutual_information: np.ndarray,
    classes: list[int],
    title: str,
) -> go.Figure:
    """Every pass's probability of each of ``classes`` against the rotation angle.

    One colour per class (:func:`~app.figures.class_color`, as in every figure), points slightly
    jittered along the angle, each class's legend marker large; the predictive entropy and
    mutual information on a second axis.

    Args:
        angles: ``(T,)`` degrees.
        probs: ``(T, n_samples, C)`` per-pass softmax.
        entropy: ``(T,)`` nats.
        mutual_information: ``(T,)`` nats.
        classes: The classes to show.
        title: Figure title.

    Returns:
        The figure.
    """
    steps, n_samples, _ = probs.shape
    jitter = np.random.default_rng(0).uniform(-1.5, 1.5, size=(steps, n_samples))
    x = (angles[:, None] + jitter).ravel()
    traces = [
        go.Scatter(
            x=x,
            y=probs[:, :, c].ravel(),
            mode="markers",
            name=f"p({c}) per network",
            marker={"size": 4, "opacity": 0.35, "color": class_color(c)},
            legendgroup=str(c),
            showlegend=False,
        )
        for c in classes
    ]
    # The legend's own markers: large and opaque, where the points are small and faint.
    traces += [
        go.Scatter(
            x=[None],
            y=[None],
            mode="markers",
            name=f"p({c}) per network",
            marker={"size": LEGEND_MARKER, "color": class_color(c)},
            legendgroup=str(c),
        )
        for c in classes
    ]
    traces += [
        go.Scatter(
            x=angles, y=entropy, name="predictive entropy", yaxis="y2", line={"color": "black"}
        ),
        go.Scatter(
            x=angles,
            y=mutual_information,
            name="mutual information",
            yaxis="y2",
            line={"color": "black", "dash": "dot"},
        ),
    ]
    return go.Figure(
        traces,
        layout(
            title,
            360,
            {"title": {"text": "rotation (degrees)"}},
            {"title": {"text": "softmax probability"}, "range": [0, 1.02]},
            yaxis2={
                "overlaying": "y",
                "side": "right",
                "rangemode": "tozero",
                "title": {"text": "nats"},
                "showgrid": False,
            },
        ),
    )
