"""The OOD explorer's figures.

One input's votes and softmax spread next to an MNIST digit, and a score's distributions and ROC
curves over whole datasets.
"""

from __future__ import annotations

import numpy as np
import plotly.graph_objects as go

from app.figures import CLASS_AXIS, MODEL_COLORS, layout

SIDES = ("#ef553b", "#636efa")  # OOD input, MNIST digit
BINS = 40  # score histogram bins
ROC_POINTS = 400  # ROC curves are thinned to about this many points for drawing
NETWORKS_AXIS = {"title": {"text": "networks"}, "rangemode": "tozero"}


def votes_figure(counts: np.ndarray, names: tuple[str, str]) -> go.Figure:
    """Plot grouped bars: how many sampled networks predicted each class, per input.

    Args:
        counts: Votes ``(2, C)``: the OOD input's row, then the MNIST digit's.
        names: Legend names of the two inputs.

    Returns:
        The figure.
    """
    bars = [
        go.Bar(x=np.arange(counts.shape[1]), y=counts[j], name=names[j], marker_color=SIDES[j])
        for j in range(2)
    ]
    title = "Class predicted by each sampled network"
    return go.Figure(bars, layout(title, 280, CLASS_AXIS, NETWORKS_AXIS, barmode="group"))


def spread_figure(top: np.ndarray, predicted: np.ndarray, names: tuple[str, str]) -> go.Figure:
    """Plot overlaid histograms over sampled networks of the predicted class's softmax score.

    Args:
        top: Softmax score of each input's predicted class ``(n_samples, 2)``.
        predicted: The two inputs' predicted classes ``(2,)``.
        names: Legend names of the two inputs.

    Returns:
        The figure.
    """
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
    """Plot overlaid normalised histograms of a score on MNIST and on an OOD set.

    Args:
        inside: The score on MNIST ``(N_in,)``.
        outside: The score on the OOD set ``(N_out,)``.
        title: The figure's title.
        label: Legend name of the OOD set.

    Returns:
        The figure, with :data:`BINS` bins shared by both sets.
    """
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
    """Thin a ROC curve to about :data:`ROC_POINTS` points, both ends kept.

    Args:
        fpr: False positive rates ``(K,)``.
        tpr: True positive rates ``(K,)``.

    Returns:
        The kept false and true positive rates.
    """
    keep = np.unique(np.linspace(0, len(fpr) - 1, ROC_POINTS).round().astype(int))
    return fpr[keep], tpr[keep]


def roc_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str) -> go.Figure:
    """Plot ROC curves per model, thinned by :func:`thin`, with the chance diagonal dotted.

    Args:
        curves: Legend label → (false positive rates, true positive rates).
        title: The figure's title.

    Returns:
        The figure.
    """
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
