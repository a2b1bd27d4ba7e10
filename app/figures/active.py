"""Active-learning figures: accuracy against labels per acquisition function, picked images."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout


def acquisition_color(name: str, titles: dict[str, str]) -> str:
    """One colour per acquisition function, the same in every figure (its place in ``titles``).

    Args:
        name: The function's name.
        titles: Name → legend label, in the order that fixes the colours.

    Returns:
        A colour.
    """
    order = list(titles)
    i = order.index(name) if name in order else len(order)
    return MODEL_COLORS[i % len(MODEL_COLORS)]


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
    for name, c in curves.items():
        color = acquisition_color(name, titles)
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
