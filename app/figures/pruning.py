"""The Pruning page's figures.

The SNR density with what is removed, test error against the pruned fraction beside the paper's
points, and the densities of trained weights.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import layout, vline
from core.evaluation.pruning import METHOD_LABELS
from core.studies.pruning_curves import PAPER_ERRORS, PAPER_FRACTIONS, PruningCurve

HEIGHT = 360
METHOD_COLORS = {"snr": "#d62728", "magnitude": "#1f77b4", "random": "#7f7f7f"}
MODEL_DASHES = {"mlp": "dash", "dropout_mlp": "dot"}  # per checkpoint; solid for BBB
WEIGHT_COLORS = ("#1f77b4", "#ff7f0e", "#d62728")  # MLP, MC dropout, BBB
ERROR_TICKS = [1, 2, 5, 10, 20, 50, 100]  # test error axis (%), log scale


def snr_figure(
    centres: np.ndarray,
    dens: np.ndarray,
    cdf: np.ndarray,
    removed_density: np.ndarray | None,
    method: str,
    threshold_db: float | None,
    floor_db: float,
) -> go.Figure:
    """Plot the density and CDF of the SNR over all weights, and what is removed.

    Args:
        centres: Bin centres, SNR in dB ``(K,)``.
        dens: Density of all weights at the centres ``(K,)``.
        cdf: Cumulative fraction of weights at the centres ``(K,)``, in [0, 1].
        removed_density: The removed weights' share of the density ``(K,)``; None when nothing
            is removed.
        method: The pruning method (colours the removed share).
        threshold_db: SNR pruning's cut-off in dB; None for other methods.
        floor_db: The left end of the axis, in dB; a cut-off below it is not drawn.

    Returns:
        The figure.
    """
    traces = [
        go.Scatter(x=centres, y=dens, name="all weights", line={"color": "black"}),
        go.Scatter(x=centres, y=cdf, name="CDF", yaxis="y2", line={"dash": "dot"}),
    ]
    if removed_density is not None:
        traces.insert(
            1,
            go.Scatter(
                x=centres,
                y=removed_density,
                name=f"removed ({METHOD_LABELS[method]})",
                fill="tozeroy",
                line={"color": METHOD_COLORS[method], "width": 0},
            ),
        )
    title = "Density and CDF of the SNR over all weights"
    shapes = []
    if threshold_db is not None and threshold_db >= floor_db:
        shapes = [vline(threshold_db, color=METHOD_COLORS["snr"], width=2)]
        title += f" (cut-off at {threshold_db:.1f} dB)"
    elif threshold_db is not None:
        title += f" (cut-off below {floor_db:.0f} dB)"
    return go.Figure(
        traces,
        layout(
            title,
            HEIGHT,
            {"title": {"text": "signal-to-noise ratio 10·log10(|μ|/σ) (dB)"}},
            {"title": {"text": "density"}, "rangemode": "tozero"},
            yaxis2={
                "overlaying": "y",
                "side": "right",
                "range": [0, 1],
                "tickformat": ".0%",
                "title": {"text": "CDF"},
                "showgrid": False,
            },
            shapes=shapes,
        ),
    )


def curve_figure(
    curves: dict[str, PruningCurve], dashes: dict[str, str], fraction: float
) -> go.Figure:
    """Plot test error (%, log scale) against weights removed (%), with the paper's points.

    Args:
        curves: Legend label → curve; one line each, coloured by method.
        dashes: Label → plotly dash style; solid for labels not in it.
        fraction: The chosen fraction, in [0, 1], drawn as a dotted line.

    Returns:
        The figure.
    """
    traces = [
        go.Scatter(
            x=[100 * f for f in curve.fractions],
            y=[100 * e for e in curve.errors],
            name=label,
            mode="lines+markers",
            line={"color": METHOD_COLORS[curve.method], "dash": dashes.get(label, "solid")},
        )
        for label, curve in curves.items()
    ]
    traces.append(
        go.Scatter(
            x=[100 * f for f in PAPER_FRACTIONS],
            y=list(PAPER_ERRORS),
            name="paper (2×1200 BBB, SNR)",
            mode="markers",
            marker={"symbol": "x", "size": 10, "color": "black"},
        )
    )
    return go.Figure(
        traces,
        layout(
            "Test error against the proportion of weights removed (full test set)",
            HEIGHT,
            {"title": {"text": "weights removed (%)"}, "range": [0, 100]},
            {"title": {"text": "test error (%)"}, "type": "log", "tickvals": ERROR_TICKS},
            shapes=[vline(100 * fraction, dash="dot", color="grey")],
        ),
    )


def weights_figure(
    densities: dict[str, tuple[np.ndarray, np.ndarray]],
    value_range: tuple[float, float],
    log: bool,
) -> go.Figure:
    """Plot overlaid densities of trained weights, one line per label.

    Args:
        densities: Legend label → (bin centres, densities).
        value_range: The x-axis range (weight values).
        log: Whether the density axis is logarithmic.

    Returns:
        The figure.
    """
    traces = [
        go.Scatter(x=c, y=d, name=label, mode="lines", line={"color": color})
        for (label, (c, d)), color in zip(densities.items(), WEIGHT_COLORS, strict=False)
    ]
    return go.Figure(
        traces,
        layout(
            "Density of trained weights",
            HEIGHT,
            {"title": {"text": "weight"}, "range": list(value_range)},
            {"title": {"text": "density"}, "type": "log" if log else "linear"},
        ),
    )
