"""The Training-speed page's figures.

Epoch time against the Monte-Carlo samples S with the fitted lines a + b·S, and the fitted
slopes b of several runs side by side.

Results are the dicts of :func:`core.studies.training_speed.run_benchmark` (or saved ones).
"""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures import layout

LABELS = {"sequential": "sequential", "vmap": "vmap", "vmap_lrt": "vmap + LRT"}
COLORS = {"sequential": "#ef553b", "vmap": "#636efa", "vmap_lrt": "#00cc96"}
DASHES = ("dash", "dot", "dashdot", "longdash")
SYMBOLS = ("circle", "square", "diamond", "triangle-up")
FLOOR_LINE = {"color": "grey", "dash": "dot"}


def run_traces(result: dict, suffix: str = "", style: int = 0) -> list[go.Scatter]:
    """Build the traces of one result: measured epoch times and the fitted line a + b·S.

    Args:
        result: A benchmark result (:func:`core.studies.training_speed.run_benchmark`).
        suffix: Ends the run's legend names.
        style: Picks the run's marker and dash.

    Returns:
        Per implementation, the measured epoch times (markers, s) and the fitted line, if any.
    """
    traces = []
    for impl, fit in result["fits"].items():
        rows = sorted(
            (r for r in result["timings"] if r["impl"] == impl), key=lambda r: r["samples"]
        )
        xs = [r["samples"] for r in rows]
        name = LABELS.get(impl, impl) + suffix
        color = COLORS.get(impl)
        symbol = SYMBOLS[style % len(SYMBOLS)]
        traces.append(
            go.Scatter(
                x=xs,
                y=[r["epoch_seconds"] for r in rows],
                mode="markers",
                name=name,
                legendgroup=name,
                marker={"color": color, "size": 8, "symbol": symbol},
            )
        )
        if fit and xs:
            ends = (min(xs), max(xs))
            traces.append(
                go.Scatter(
                    x=ends,
                    y=[fit["intercept"] + fit["slope"] * s for s in ends],
                    mode="lines",
                    name=f"{name} fit",
                    legendgroup=name,
                    showlegend=False,
                    line={"color": color, "dash": DASHES[style % len(DASHES)]},
                )
            )
    return traces


def floor_line(y: float, text: str) -> tuple[dict, dict]:
    """Build a dotted grey line across the plot and its label at the right end.

    Args:
        y: Height of the line, in y-axis units.
        text: The label.

    Returns:
        A plotly shape and annotation.
    """
    shape = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y}
    note = {"xref": "paper", "x": 1, "y": y, "xanchor": "right", "yanchor": "bottom"}
    return shape | {"line": FLOOR_LINE}, note | {"text": text, "showarrow": False}


def time_figure(runs: list[tuple[dict, str]]) -> go.Figure:
    """Plot epoch time (s) against S, with a dotted line at each run's plain-MLP epoch time.

    Args:
        runs: ``(result, legend suffix)`` per run, styled by position.

    Returns:
        The figure.
    """
    traces, shapes, notes = [], [], []
    for style, (result, suffix) in enumerate(runs):
        traces += run_traces(result, suffix, style)
        if result.get("mlp"):
            shape, note = floor_line(result["mlp"]["epoch_seconds"], "plain MLP" + suffix)
            shapes.append(shape)
            notes.append(note)
    xaxis = {"title": {"text": "Monte-Carlo samples S"}, "dtick": 1}
    yaxis = {"title": {"text": "training time per epoch (s)"}, "rangemode": "tozero"}
    return go.Figure(traces, layout("", 380, xaxis, yaxis, shapes=shapes, annotations=notes))


def slope_figure(runs: dict[str, dict]) -> go.Figure:
    """Plot grouped bars of the fitted slope b (s per epoch per extra sample) per implementation.

    One colour per run; reference runs are hatched.

    Args:
        runs: Legend label → benchmark result.

    Returns:
        The figure.
    """
    bars = []
    for label, result in runs.items():
        fits = {impl: f for impl, f in result["fits"].items() if f}
        bars.append(
            go.Bar(
                x=[LABELS.get(impl, impl) for impl in fits],
                y=[f["slope"] for f in fits.values()],
                name=label,
                marker_pattern_shape="/" if result.get("reference") else "",
            )
        )
    yaxis = {"title": {"text": "slope b (s per epoch per extra sample)"}}
    legend = {"orientation": "h", "y": -0.2}
    return go.Figure(bars, layout("", 340, {}, yaxis, barmode="group", legend=legend))
