"""The Class page's figures.

The confusion matrix of a model on the class's drawings, and the curve of a network learning
the class's handwriting.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go
from plotly.subplots import make_subplots

from app.figures import CLASS_TICKS, class_color, layout


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


def learning_curve_figure(curves: dict[str, list[dict]], titles: dict[str, str]) -> go.Figure:
    """Kept-aside accuracy and MNIST error against the class drawings learned from.

    Args:
        curves: Model name → rows ``{"drawings", "accuracy", "mnist_error"}`` (fractions).
        titles: Model name → its title.

    Returns:
        Two panels side by side, one line per model.
    """
    fig = make_subplots(
        rows=1, cols=2, subplot_titles=("Kept-aside drawings: accuracy", "MNIST: error")
    )
    for i, (name, rows) in enumerate(curves.items()):
        x = [r["drawings"] for r in rows]
        color = class_color(i)
        for col, key in ((1, "accuracy"), (2, "mnist_error")):
            fig.add_trace(
                go.Scatter(
                    x=x,
                    y=[100 * r[key] for r in rows],
                    mode="lines+markers",
                    name=titles.get(name, name),
                    line={"color": color},
                    showlegend=col == 1,
                ),
                row=1,
                col=col,
            )
    fig.update_xaxes(title_text="class drawings learned from")
    fig.update_yaxes(title_text="%", rangemode="tozero")
    fig.update_layout(
        height=360, margin={"l": 40, "r": 10, "t": 40, "b": 40}, legend={"orientation": "h"}
    )
    return fig
