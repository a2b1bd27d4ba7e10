"""The Class page's figures: the confusion matrix of a model on the class's drawings."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import CLASS_TICKS, layout


def confusion_figure(confusion: np.ndarray, title: str) -> go.Figure:
    """Plot a confusion matrix as a heatmap with the counts written in the cells.

    Args:
        confusion: Counts ``(10, 10)``: row = digit meant, column = digit predicted.
        title: The figure's title.

    Returns:
        The figure (the digits meant top to bottom, the diagonal = correct answers).
    """
    counts = np.asarray(confusion, dtype=np.int64)
    classes = list(range(counts.shape[0]))
    text = [[str(v) if v else "" for v in row] for row in counts]
    hover = [
        [f"meant {i}, predicted {j}: {counts[i, j]} drawing(s)" for j in classes] for i in classes
    ]
    heatmap = go.Heatmap(
        z=counts,
        x=classes,
        y=classes,
        text=text,
        texttemplate="%{text}",
        hovertext=hover,
        hoverinfo="text",
        colorscale="Blues",
        showscale=False,
        zmin=0,
    )
    xaxis = {**CLASS_TICKS, "title": {"text": "predicted"}, "side": "top", "constrain": "domain"}
    yaxis = {
        **CLASS_TICKS,
        "title": {"text": "meant"},
        "autorange": "reversed",
        "scaleanchor": "x",
    }
    return go.Figure([heatmap], layout(title, 380, xaxis, yaxis, margin={"t": 70}))
