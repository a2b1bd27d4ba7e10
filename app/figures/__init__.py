"""Plotly figure builders of the dashboard, one module per topic, and what they share.

Figures are built in one constructor call (plotly's ``update_*`` methods are slow) from plain
numbers and arrays; pages pass data in and show the result with :func:`show_figure`.
"""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

CLASS_TICKS = {"tickmode": "linear", "dtick": 1}
CLASS_AXIS = {**CLASS_TICKS, "title": {"text": "class"}}
MODEL_COLORS = (
    "#1f77b4",
    "#d62728",
    "#2ca02c",
    "#ff7f0e",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)


def layout(title: str, height: int, xaxis: dict, yaxis: dict, **extra) -> dict:
    """Build the common figure layout: small title, tight margins, legend below the plot.

    Args:
        title: The figure's title ("" for none).
        height: Height in pixels.
        xaxis: Plotly x-axis settings.
        yaxis: Plotly y-axis settings.
        **extra: Further plotly layout settings, overriding the common ones.

    Returns:
        A plotly layout dict.
    """
    return {
        "title": {"text": title, "font": {"size": 14}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "legend": {"orientation": "h", "y": -0.3},
        "xaxis": xaxis,
        "yaxis": yaxis,
        **extra,
    }


def vline(x: float, **line) -> dict:
    """Build a vertical line shape spanning the plot's height.

    Args:
        x: Where the line is, in x-axis units.
        **line: Plotly line style, e.g. ``dash="dot", color="grey"``.

    Returns:
        A plotly shape dict.
    """
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": x,
        "x1": x,
        "y0": 0,
        "y1": 1,
        "line": line,
    }


def show_figure(fig: go.Figure, key: str) -> None:
    """Render a plotly figure at container width, without the mode bar.

    Args:
        fig: The figure.
        key: Unique on the page: two identical figures without keys are a Streamlit error.
    """
    st.plotly_chart(fig, width="stretch", config={"displayModeBar": False}, key=key)
