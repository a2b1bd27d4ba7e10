"""Active-learning figures: accuracy against labels per acquisition function, picked images."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout


def curves_figure(curves: dict[str, dict], titles: dict[str, str], title: str) -> go.Figure:
    """Mean test accuracy against the number of labels, one line per function, ± 1 std band.

    Args:
        curves: Name → ``{"labels", "mean", "std"}`` (accuracies as fractions).
        titles: Name → legend label.
        title: Figure title.

    Returns:
        The figure.
    """
    traces = []
    for i, (name, c) in enumerate(curves.items()):
        color = MODEL_COLORS[i % len(MODEL_COLORS)]
        labels = np.asarray(c["labels"])
        mean, std = 100 * np.asarray(c["mean"]), 100 * np.asarray(c.get("std") or [0] * len(labels))
        traces.append(
            go.Scatter(
                x=np.concatenate([labels, labels[::-1]]),
                y=np.concatenate([mean + std, (mean - std)[::-1]]),
                fill="toself",
                line={"width": 0},
                fillcolor=color,
                opacity=0.15,
                showlegend=False,
                hoverinfo="skip",
            )
        )
        traces.append(
            go.Scatter(x=labels, y=mean, name=titles.get(name, name), line={"color": color})
        )
    return go.Figure(
        traces,
        layout(
            title,
            380,
            {"title": {"text": "labelled images"}},
            {"title": {"text": "test accuracy (%)"}},
        ),
    )
