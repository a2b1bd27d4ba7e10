"""Plotly figure builders of the dashboard, one module per topic, and what they share.

Figures are built in one constructor call (plotly's ``update_*`` methods are slow) from plain
numbers and arrays; pages pass data in and show the result with :func:`show_figure`.
"""

from __future__ import annotations

import copy

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from app import share
from app.figures.format import number

TITLE_FONT = 14
"""Font size of figure titles (and of annotations that title a panel), in points."""
CLASS_TICKS = {"tickmode": "linear", "dtick": 1}
CLASS_AXIS = {**CLASS_TICKS, "title": {"text": "class"}}
DEFAULT_HEIGHT = 450  # plotly's, for figures that set none
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
"""Colours of the models (or agents, or acquisition functions) of one figure, in order."""
CLASS_COLORS = (
    "#0072B2",  # blue
    "#E69F00",  # orange
    "#117733",  # green
    "#CC79A7",  # pink
    "#56B4E9",  # sky blue
    "#D55E00",  # vermilion
    "#882255",  # wine
    "#332288",  # indigo
    "#BBBBBB",  # grey
    "#999933",  # olive
)
"""One colour per digit class 0-9, the same in every figure of every page.

Okabe and Ito's colour-blind-safe set (without its black and its pale yellow) completed from
Paul Tol's: every two classes stay apart for normal vision and under simulated deuteranopia
and protanopia (``tests/unit/test_figures.py`` measures it)."""
LEGEND_MARKER = 14
"""Size of a class's marker in a legend, in pixels: large enough to read its colour."""
INK = "#111111"
"""Text colour of presenter mode: dark, for a projector."""


def class_color(c: int) -> str:
    """The colour of class ``c`` (:data:`CLASS_COLORS`, wrapping after 10).

    Args:
        c: The class index.

    Returns:
        A hex colour.
    """
    return CLASS_COLORS[c % len(CLASS_COLORS)]


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
        "title": {"text": title, "font": {"size": TITLE_FONT}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "legend": {"orientation": "h", "y": -0.3},
        "xaxis": xaxis,
        "yaxis": yaxis,
        "dragmode": False,  # a swipe on a phone scrolls the page, it does not zoom the chart
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


def presenter_layout(fig: go.Figure) -> go.Figure:
    """Enlarge a figure for a projector: larger fonts in dark ink, taller plot.

    Every text is set explicitly (axes' ticks and titles, legend, colour bars, annotations), since
    Streamlit's chart theme gives axes and legends their own small grey fonts, which a figure-wide
    font does not override. An annotation sized :data:`TITLE_FONT` titles a panel and gets the
    title size; an annotation with its own colour keeps it.

    Args:
        fig: The figure; not modified (it may be cached and shared).

    Returns:
        A copy with fonts of :data:`app.share.PRESENTER_FONT` points (titles
        :data:`app.share.PRESENTER_TITLE_FONT`) in :data:`INK`, and the height times
        :data:`app.share.PRESENTER_HEIGHT`.
    """
    text = {"size": share.PRESENTER_FONT, "color": INK}
    title_text = {"size": share.PRESENTER_TITLE_FONT, "color": INK}
    big = copy.deepcopy(fig.layout.to_plotly_json())
    height = big.get("height") or DEFAULT_HEIGHT
    top = big.get("margin", {}).get("t")
    big["height"] = round(height * share.PRESENTER_HEIGHT)
    if top is not None:
        big["margin"]["t"] = max(top, 60)
    for key, value in [("font", text), ("title", {"font": title_text}), ("legend", {"font": text})]:
        big[key] = {**big.get(key, {}), **value}
    big.setdefault("xaxis", {})  # an axis left at its defaults is missing from the layout
    big.setdefault("yaxis", {})
    for name in [k for k in big if k.startswith(("xaxis", "yaxis"))]:
        _set_fonts(big[name], text)
    for note in big.get("annotations", []):
        font = note.setdefault("font", {})
        font["size"] = title_text["size"] if font.get("size") == TITLE_FONT else text["size"]
        font.setdefault("color", INK)
    traces = copy.deepcopy([trace.to_plotly_json() for trace in fig.data])
    for trace in traces:
        if trace.get("type") == "heatmap":
            _set_fonts(trace.setdefault("colorbar", {}), text)
    return go.Figure(traces, big)


def _set_fonts(element: dict, text: dict) -> None:
    """Give an axis or colour bar (a layout dict, changed in place) this font for all its text."""
    element["tickfont"] = text
    element["title"] = {**element.get("title", {}), "font": text}


def show_figure(fig: go.Figure, key: str) -> None:
    """Render a plotly figure at container width, without the mode bar.

    In presenter mode (:func:`app.share.presenter`, ``?present=1``) it is drawn larger
    (:func:`presenter_layout`).

    Args:
        fig: The figure.
        key: Unique on the page: two identical figures without keys are a Streamlit error.
    """
    if share.presenter():
        fig = presenter_layout(fig)
    config = {"displayModeBar": False, "scrollZoom": False, "doubleClick": False}
    st.plotly_chart(fig, width="stretch", config=config, key=key)


def show_table(data, formats: dict[str, str] | None = None, *, grid: bool = True) -> None:
    """Show a table, the one way a page shows one: a sortable grid, or a static table.

    Presenter mode's larger fonts reach a static table but not the grid (drawn on a canvas at a
    fixed size), so a projected table is always static, its numbers written for people. A
    DataFrame's own index (e.g. the models' names) is shown as its first column; a plain
    numbered index is not shown.

    Args:
        data: Rows (a list of dicts), columns (a dict of lists) or a DataFrame.
        formats: printf-style formats of numeric columns by name, e.g. ``{"NLL": "%.3f"}``;
            in a static table the other numeric columns read as
            :func:`app.figures.format.number`.
        grid: False for a static table on screen too (text that should wrap, a short table).
    """
    formats = formats or {}
    frame = data if isinstance(data, pd.DataFrame) else pd.DataFrame(data)
    numbered = isinstance(frame.index, pd.RangeIndex) and frame.index.name is None
    if share.presenter() or not grid:  # a static table shows floats with four decimals
        numeric = frame.select_dtypes("number").columns
        cells = {c: (lambda v, f=formats[c]: f % v) if c in formats else number for c in numeric}
        st.table(frame.style.format(cells) if cells else frame, hide_index=numbered)
        return
    column = st.column_config.NumberColumn
    config = {c: column(format=f) for c, f in formats.items()}
    st.dataframe(frame, hide_index=numbered, column_config=config, width="stretch")
