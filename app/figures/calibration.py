"""The Calibration page's figures.

Reliability diagrams (accuracy per confidence bin with the gap to the diagonal shaded and the
bin counts below), accuracy–coverage curves with the "I don't know" operating points, and
metrics against the severity of a dataset shift.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout, vline
from app.figures.format import number

GAP_COLOR = "rgba(214, 39, 40, 0.45)"
BAR_COLOR = "#1f77b4"
CURVE_POINTS = 500  # accuracy–coverage curves are thinned to about this many points


def color(i: int) -> str:
    """Give the colour of the ``i``-th model.

    Args:
        i: The model's position on the page.

    Returns:
        A colour of :data:`app.figures.MODEL_COLORS`, cycling.
    """
    return MODEL_COLORS[i % len(MODEL_COLORS)]


def reliability_figure(
    edges: np.ndarray,
    confidence: np.ndarray,
    accuracy: np.ndarray,
    count: np.ndarray,
    title: str,
) -> go.Figure:
    """Plot a reliability diagram: accuracy per confidence bin against the diagonal.

    The gap between each bin's accuracy and its mean confidence is shaded (above the bar:
    over-confident, inside it: under-confident); a lower panel shows how many inputs fall in
    each bin, on a log scale from half an input (a bin of one input shows), with at most three
    ticks.

    Args:
        edges: Bin edges ``(bins + 1,)`` from 0 to 1.
        confidence: Mean confidence per bin ``(bins,)`` (NaN when empty).
        accuracy: Fraction correct per bin ``(bins,)`` (NaN when empty).
        count: Inputs per bin ``(bins,)``.
        title: The figure's title.

    Returns:
        The figure.
    """
    centres, widths = (edges[1:] + edges[:-1]) / 2, np.diff(edges)
    filled = count > 0
    x, w = centres[filled], widths[filled]
    acc, conf, n = accuracy[filled], confidence[filled], count[filled]
    hover = [
        f"confidence {c:.3f}<br>accuracy {a:.3f}<br>{k:,} inputs"
        for c, a, k in zip(conf, acc, n, strict=True)
    ]
    traces = [
        go.Bar(
            x=x,
            y=acc,
            width=w,
            name="accuracy",
            marker_color=BAR_COLOR,
            hovertext=hover,
            hoverinfo="text",
        ),
        go.Bar(
            x=x,
            y=conf - acc,
            base=acc,
            width=w,
            name="gap to confidence",
            marker={"color": GAP_COLOR, "line": {"color": "#d62728", "width": 1}},
            hoverinfo="skip",
        ),
        go.Scatter(
            x=[0, 1],
            y=[0, 1],
            mode="lines",
            name="perfectly calibrated",
            line={"dash": "dot", "color": "grey"},
        ),
        go.Bar(
            x=x,
            y=n,
            width=w,
            yaxis="y2",
            name="inputs per bin",
            marker_color="#7f7f7f",
            showlegend=False,
            hovertext=[f"{k:,} inputs" for k in n],
            hoverinfo="text",
        ),
    ]
    xaxis = {"range": [0, 1], "title": {"text": "confidence"}}
    yaxis = {"range": [0, 1.02], "title": {"text": "accuracy"}, "domain": [0.38, 1]}
    ticks = count_ticks(int(n.max()) if len(n) else 1)
    yaxis2 = {
        "type": "log",
        "title": {"text": "inputs"},
        "domain": [0, 0.26],
        # From half an input: a bin of one input is a bar, not a line on the axis.
        "range": [np.log10(0.5), np.log10(max(ticks[-1], n.max() if len(n) else 1) * 1.5)],
        "tickvals": ticks,
        "ticktext": [number(t) for t in ticks],
    }
    xaxis["anchor"] = "y2"
    return go.Figure(
        traces, layout(title, 400, xaxis, yaxis, yaxis2=yaxis2, barmode="overlay", bargap=0)
    )


def count_ticks(largest: int, most: int = 3) -> list[int]:
    """Ticks of a log axis of counts: powers of ten from 1, at most ``most`` of them.

    Args:
        largest: The largest count shown.
        most: How many ticks at most (more overlap in a short panel).

    Returns:
        Evenly spaced powers of ten, 1 first, e.g. ``[1, 100, 10000]`` up to 10,000; below
        10, 1 and ``largest``.
    """
    powers = [10**k for k in range(int(np.floor(np.log10(max(largest, 1)))) + 1)]
    if len(powers) == 1 and largest > 1:
        return [1, largest]  # a handful of inputs (a class's drawings): 1 and the most
    step = -(-len(powers) // most)
    return powers[::step]


def thin(coverage: np.ndarray, accuracy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Thin an accuracy–coverage curve to about :data:`CURVE_POINTS` points, both ends kept.

    Args:
        coverage: Coverages ``(K,)``, ascending.
        accuracy: Accuracies ``(K,)``.

    Returns:
        The kept coverages and accuracies.
    """
    keep = np.unique(np.linspace(0, len(coverage) - 1, CURVE_POINTS).round().astype(int))
    return coverage[keep], accuracy[keep]


def coverage_figure(
    curves: dict[str, tuple[np.ndarray, np.ndarray]],
    points: dict[str, tuple[float, float]],
    title: str,
) -> go.Figure:
    """Plot accuracy against coverage per model, with each model's operating point marked.

    The coverage axis starts a little before the first mistake is answered (below that every
    curve is at 1).

    Args:
        curves: Legend label → (coverages, accuracies), the coverages ascending.
        points: Legend label → (coverage, accuracy) of the "I don't know" rule (NaN accuracy
            when nothing is kept: not drawn).
        title: The figure's title.

    Returns:
        The figure.
    """
    traces, start = [], 1.0
    for i, (label, (coverage, accuracy)) in enumerate(curves.items()):
        wrong = np.nonzero(accuracy < 1)[0]
        start = min(start, coverage[wrong[0]] if len(wrong) else 1.0)
        x, y = thin(coverage, accuracy)
        traces.append(go.Scatter(x=x, y=y, mode="lines", name=label, line={"color": color(i)}))
        if label in points and np.isfinite(points[label][1]):
            cov, acc = points[label]
            traces.append(
                go.Scatter(
                    x=[cov],
                    y=[acc],
                    mode="markers",
                    marker={"color": color(i), "size": 11, "symbol": "diamond"},
                    name=f"{label}: 99th-percentile rule",
                    showlegend=False,
                    hovertext=f"99th-percentile rule: coverage {cov:.1%}, accuracy {acc:.2%}",
                    hoverinfo="text",
                )
            )
    start = 0.0 if start >= 1.0 else max(0.0, np.floor((start - 0.02) * 20) / 20)
    xaxis = {"range": [start, 1.005], "title": {"text": "coverage (fraction of inputs answered)"}}
    yaxis = {"title": {"text": "accuracy on the answered inputs"}}
    return go.Figure(traces, layout(title, 400, xaxis, yaxis))


def shift_figure(
    severities: np.ndarray,
    series: dict[str, np.ndarray],
    title: str,
    xtitle: str,
    ytitle: str,
    selected: float,
    dashed: dict[str, np.ndarray] | None = None,
    dashed_note: str = "",
) -> go.Figure:
    """Plot one metric against the severity of a shift, one line per model.

    Args:
        severities: The grid ``(K,)``.
        series: Legend label → the metric at each severity ``(K,)``.
        title: The figure's title.
        xtitle: Title of the severity axis.
        ytitle: Title of the metric axis.
        selected: The severity marked by a vertical line.
        dashed: Legend label → a second metric per model, drawn dashed in the model's colour
            (e.g. after temperature scaling); None for none.
        dashed_note: Appended to the dashed lines' legend labels.

    Returns:
        The figure.
    """
    traces = []
    for i, (label, values) in enumerate(series.items()):
        traces.append(
            go.Scatter(
                x=severities,
                y=values,
                mode="lines+markers",
                name=label,
                line={"color": color(i)},
                legendgroup=label,
            )
        )
        if dashed and label in dashed:
            traces.append(
                go.Scatter(
                    x=severities,
                    y=dashed[label],
                    mode="lines",
                    name=f"{label} {dashed_note}".strip(),
                    line={"color": color(i), "dash": "dash"},
                    legendgroup=label,
                )
            )
    xaxis = {"title": {"text": xtitle}}
    yaxis = {"title": {"text": ytitle}, "rangemode": "tozero"}
    shapes = [vline(selected, dash="dot", color="grey")]
    return go.Figure(traces, layout(title, 320, xaxis, yaxis, shapes=shapes))


def temperature_figure(
    temperatures: np.ndarray,
    values: np.ndarray,
    title: str,
    ytitle: str,
    selected: float,
    floor: float | None = None,
    floor_note: str = "",
) -> go.Figure:
    """Plot one metric of SGLD against its temperature, the chosen temperature marked.

    Args:
        temperatures: The temperatures ``(K,)``, > 0 (a log axis, hottest on the left).
        values: The metric at each temperature ``(K,)``.
        title: The figure's title.
        ytitle: Title of the metric axis.
        selected: The temperature marked by a larger point.
        floor: A level drawn as a dashed horizontal line (e.g. a minimum); None for none.
        floor_note: The legend label of that line.

    Returns:
        The figure.
    """
    at = temperatures == selected
    traces = [
        go.Scatter(
            x=temperatures.tolist(),  # a handful of points: plain numbers, not binary arrays
            y=values.tolist(),
            mode="lines+markers",
            name=ytitle,
            line={"color": color(0)},
            showlegend=False,
        ),
        go.Scatter(
            x=temperatures[at].tolist(),
            y=values[at].tolist(),
            mode="markers",
            name=f"T = {number(selected)}",
            marker={"color": color(1), "size": 13, "symbol": "diamond"},
        ),
    ]
    if floor is not None:
        traces.append(
            go.Scatter(
                x=[float(temperatures.max()), float(temperatures.min())],
                y=[floor, floor],
                mode="lines",
                name=floor_note,
                line={"color": "grey", "dash": "dash"},
            )
        )
    xaxis = {"title": {"text": "temperature T (colder →)"}, "type": "log", "dtick": 1}
    xaxis["autorange"] = "reversed"  # one tick a decade: no small "2" and "5" between them
    yaxis = {"title": {"text": ytitle}, "rangemode": "tozero"}
    return go.Figure(traces, layout(title, 300, xaxis, yaxis))
