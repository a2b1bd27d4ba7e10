"""The Draw page's per-model figure: mean probabilities, votes and the softmax spread.

The Draw page shows one three-panel figure per model: every chart costs the browser a full plot.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import CLASS_TICKS, TITLE_FONT, class_color

PANEL_TITLE = {
    "xref": "paper",
    "yref": "paper",
    "x": 0,
    "xanchor": "left",
    "showarrow": False,
    "font": {"size": TITLE_FONT},
}


def predictive_figure(
    mean: np.ndarray, std: np.ndarray, counts: np.ndarray, scores: np.ndarray, cls: int
) -> go.Figure:
    """Plot one model's predictive in three stacked panels.

    The panels: mean class probabilities with ±1 std error bars across samples; how many
    sampled networks predicted each class; the histogram over samples of the softmax score of
    class ``cls`` (the softmax spread).

    Args:
        mean: Mean class probabilities ``(C,)``.
        std: Their standard deviations across samples ``(C,)``.
        counts: Sampled networks predicting each class ``(C,)``.
        scores: Softmax score of class ``cls`` in each sample ``(n_samples,)``.
        cls: The class whose spread is shown (the top class).

    Returns:
        The figure.
    """
    classes = np.arange(len(mean))
    colors = [class_color(c) for c in classes]  # each class its colour, as on every page
    traces = [
        go.Bar(
            x=classes,
            y=mean,
            marker_color=colors,
            error_y={"type": "data", "array": std, "visible": True},
        ),
        go.Bar(x=classes, y=counts, marker_color=colors, xaxis="x2", yaxis="y2"),
        go.Histogram(
            x=np.minimum(scores, 0.99999),  # a score of 1 belongs to the last bin, [0.95, 1]
            xbins={"start": 0.0, "end": 1.0, "size": 0.05},
            marker_color=class_color(cls),
            xaxis="x3",
            yaxis="y3",
        ),
    ]
    titles = [
        "Mean class probability ± std",
        "Class predicted by each sampled network",
        f"Spread of the top class ({cls}) across samples",
    ]
    domains = [(0.72, 0.94), (0.38, 0.60), (0.07, 0.29)]
    layout = {
        "height": 600,
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "showlegend": False,
        "bargap": 0.15,
        "dragmode": False,
        "annotations": [
            {**PANEL_TITLE, "y": top + 0.01, "yanchor": "bottom", "text": f"<b>{title}</b>"}
            for title, (_, top) in zip(titles, domains, strict=True)
        ],
        "xaxis": {**CLASS_TICKS, "anchor": "y"},
        "yaxis": {"domain": domains[0], "range": [0, 1.05], "title": {"text": "probability"}},
        "xaxis2": {**CLASS_TICKS, "anchor": "y2"},
        "yaxis2": {"domain": domains[1], "rangemode": "tozero", "title": {"text": "networks"}},
        "xaxis3": {"anchor": "y3", "range": [0, 1], "title": {"text": f"p({cls})"}},
        "yaxis3": {"domain": domains[2], "rangemode": "tozero", "title": {"text": "networks"}},
    }
    return go.Figure(traces, layout)
