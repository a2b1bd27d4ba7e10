"""The OOD explorer's figures: one input's votes and softmax spread next to an MNIST digit, and
a score's distributions and ROC curves over whole datasets."""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import CLASS_AXIS, MODEL_COLORS, layout

SIDES = ("#ef553b", "#636efa")  # OOD input, MNIST digit
BINS = 40  # score histogram bins
ROC_POINTS = 400  # ROC curves are thinned to about this many points for drawing
NETWORKS_AXIS = {"title": {"text": "networks"}, "rangemode": "tozero"}


def votes_figure(counts: np.ndarray, names: tuple[str, str]) -> go.Figure:
    """Grouped bars: how many sampled networks predicted each class, per input ``(2, C)``."""
    bars = [
        go.Bar(x=np.arange(counts.shape[1]), y=counts[j], name=names[j], marker_color=SIDES[j])
        for j in range(2)
    ]
    title = "Class predicted by each sampled network"
    return go.Figure(bars, layout(title, 280, CLASS_AXIS, NETWORKS_AXIS, barmode="group"))


def spread_figure(top: np.ndarray, predicted: np.ndarray, names: tuple[str, str]) -> go.Figure:
    """Overlaid histograms over sampled networks of the predicted class's softmax score, per
    input (``top (n_samples, 2)``, ``predicted (2,)``)."""
    hists = [
        go.Histogram(
            x=top[:, j],
            xbins={"start": 0.0, "end": 1.0001, "size": 0.05},
            name=f"{names[j]} (class {predicted[j]})",
            marker_color=SIDES[j],
            opacity=0.6,
        )
        for j in range(2)
    ]
    xaxis = {"range": [0, 1.0001], "title": {"text": "softmax score of the predicted class"}}
    title = "Score of the predicted class in each sampled network"
    return go.Figure(hists, layout(title, 280, xaxis, NETWORKS_AXIS, barmode="overlay"))


def hist_figure(inside: np.ndarray, outside: np.ndarray, title: str, label: str) -> go.Figure:
    """Overlaid normalised histograms of a score on MNIST ``(N_in,)`` and on the OOD set
    ``(N_out,)`` named ``label``, with :data:`BINS` shared bins."""
    edges = np.histogram_bin_edges(np.concatenate([inside, outside]), BINS)
    centres, width = (edges[1:] + edges[:-1]) / 2, edges[1] - edges[0]
    bars = [
        go.Bar(
            x=centres,
            y=np.histogram(values, edges)[0] / len(values),
            width=width,
            name=name,
            marker_color=color,
            opacity=0.6,
        )
        for values, name, color in ((outside, label, SIDES[0]), (inside, "MNIST", SIDES[1]))
    ]
    yaxis = {"title": {"text": "fraction of inputs"}}
    return go.Figure(bars, layout(title, 280, {}, yaxis, barmode="overlay", bargap=0))


def thin(fpr: np.ndarray, tpr: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """About :data:`ROC_POINTS` points of a ROC curve ``(K,)``, both ends kept."""
    keep = np.unique(np.linspace(0, len(fpr) - 1, ROC_POINTS).round().astype(int))
    return fpr[keep], tpr[keep]


def roc_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str) -> go.Figure:
    """ROC curves per model (legend label → FPR, TPR), thinned by :func:`thin`; the chance
    diagonal dotted."""
    thinned = {label: thin(fpr, tpr) for label, (fpr, tpr) in curves.items()}
    lines = [
        go.Scatter(
            x=fpr,
            y=tpr,
            name=label,
            mode="lines",
            line={"color": MODEL_COLORS[i % len(MODEL_COLORS)]},
        )
        for i, (label, (fpr, tpr)) in enumerate(thinned.items())
    ]
    chance = go.Scatter(
        x=[0, 1], y=[0, 1], name="chance", mode="lines", line={"dash": "dot", "color": "grey"}
    )
    xaxis = {"title": {"text": "false positive rate (MNIST flagged)"}, "range": [0, 1]}
    yaxis = {"title": {"text": "true positive rate (OOD flagged)"}, "range": [0, 1.02]}
    return go.Figure([*lines, chance], layout(title, 380, xaxis, yaxis))
