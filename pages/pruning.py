"""Pruning and weights: remove the weights with the lowest signal-to-noise ratio and watch the
test error (Blundell et al. 2015, §5.1); the densities of SNR values and of trained weights."""

from dataclasses import dataclass

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch

from app import ui
from core.checkpoints import CheckpointError, checkpoint_path, list_checkpoints
from core.data import DatasetUnavailable, load_dataset
from core.pruning import (
    METHOD_LABELS,
    METHODS,
    StorageSize,
    cutoff,
    density,
    num_weights,
    removal_mask,
    remove_weights,
    snr_db,
    storage_size,
    weight_scores,
    weight_values,
)
from core.pruning_curve import (
    CURVE_SAMPLES,
    PAPER_ERRORS,
    PAPER_FRACTIONS,
    PruningCurve,
    cached_pruning_curve,
    missing_fractions,
    paper_table,
    seeded_error,
)

QUICK_EXAMPLES = 1000  # test images evaluated on each slider move
QUICK_SAMPLES = 5
WEIGHT_RANGE = (-0.3, 0.3)
BINS = 200
POINT_MODELS = ("mlp", "dropout_mlp")  # compared by |w| and at random
COLORS = {"snr": "#d62728", "magnitude": "#1f77b4", "random": "#7f7f7f"}
DASHES = {"mlp": "dash", "dropout_mlp": "dot"}  # solid for BBB
WEIGHT_COLORS = ("#1f77b4", "#ff7f0e", "#d62728")  # MLP, MC dropout, BBB
ERROR_TICKS = [1, 2, 5, 10, 20, 50, 100]  # test error axis (%), log scale
SNR_FLOOR_DB = -60.0  # left end of the SNR axis; the CDF still counts the weights below


def version(name: str) -> int:
    """Changes whenever the checkpoint file is rewritten (keys the caches below)."""
    return checkpoint_path(name).stat().st_mtime_ns


@st.cache_resource(show_spinner="Loading the MNIST test set…")
def mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    return load_dataset("mnist", "test")


@st.cache_data(show_spinner=False, max_entries=32)
def unpruned_error(name: str, mtime_ns: int) -> float:
    x, y = mnist_test()
    model = ui.load_model(name)
    return seeded_error(model, x[:QUICK_EXAMPLES], y[:QUICK_EXAMPLES], QUICK_SAMPLES)


@st.cache_data(show_spinner=False, max_entries=8)
def snr_summary(name: str, mtime_ns: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, tuple]:
    """SNR (dB) of every weight; bin centres and density stacked ``(2, BINS)``; the CDF at the
    centres (over all weights); the plotted range (whole dB, at least ``SNR_FLOOR_DB``)."""
    db = snr_db(weight_scores(ui.load_model(name), "snr"))
    lowest = max(db.quantile(0.001).item(), SNR_FLOOR_DB)  # μ ≈ 0 reaches -380 dB or -inf
    value_range = (float(np.floor(lowest)), float(db.max().ceil()))
    centres, dens = density(db, BINS, value_range)
    cdf = np.searchsorted(np.sort(db.numpy()), centres) / len(db)
    return db.numpy(), np.stack([centres, dens]), cdf, value_range


@st.cache_data(show_spinner="Sampling weights…", max_entries=8)
def weight_density(name: str, mtime_ns: int) -> tuple[np.ndarray, np.ndarray]:
    return density(weight_values(ui.load_model(name), sample=True), BINS, WEIGHT_RANGE)


def layout(title: str, xaxis: dict, yaxis: dict, **extra) -> dict:
    """Common height, margins and title; the legend below the plot."""
    return {
        "title": {"text": title, "font": {"size": 14}},
        "height": 360,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "legend": {"orientation": "h", "y": -0.25},
        "xaxis": xaxis,
        "yaxis": yaxis,
        **extra,
    }


def vline(x: float, **line) -> dict:
    """A vertical line shape at ``x`` spanning the plot's height."""
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


@dataclass(frozen=True)
class Pruned:
    """What the page shows of one model pruned by one method to one ratio."""

    error: float  # on the quick test subset
    size: StorageSize
    removed_density: np.ndarray | None  # removed weights' share of the SNR density, per bin
    threshold_db: float | None  # SNR cut-off (SNR pruning with something removed)


@st.cache_resource(show_spinner=False, max_entries=1000)
def pruned_summary(name: str, mtime_ns: int, method: str, percent: int) -> Pruned:
    """Prune, evaluate on the quick subset and summarise; cached (shared, immutable), so
    revisiting a slider position costs nothing."""
    x, y = mnist_test()
    model = ui.load_model(name)
    scores = weight_scores(model, method)
    removed = removal_mask(scores, percent / 100)
    pruned = remove_weights(model, removed)
    error = seeded_error(pruned, x[:QUICK_EXAMPLES], y[:QUICK_EXAMPLES], QUICK_SAMPLES)
    removed_density = None
    if removed.any():
        db, _, _, value_range = snr_summary(name, mtime_ns)
        _, dens = density(torch.from_numpy(db[removed.numpy()]), BINS, value_range)
        removed_density = dens * removed.float().mean().item()
    threshold = cutoff(scores, percent / 100) if method == "snr" else None
    threshold_db = None if threshold is None else snr_db(torch.tensor(threshold)).item()
    return Pruned(error, storage_size(pruned), removed_density, threshold_db)


def snr_figure(name: str, method: str, pruned: Pruned) -> go.Figure:
    """Density and CDF of SNR (dB) over all weights, the removed weights' share of the density
    and, for SNR pruning, the cut-off."""
    _, (centres, dens), cdf, _ = snr_summary(name, version(name))
    traces = [
        go.Scatter(x=centres, y=dens, name="all weights", line={"color": "black"}),
        go.Scatter(x=centres, y=cdf, name="CDF", yaxis="y2", line={"dash": "dot"}),
    ]
    if pruned.removed_density is not None:
        traces.insert(
            1,
            go.Scatter(
                x=centres,
                y=pruned.removed_density,
                name=f"removed ({METHOD_LABELS[method]})",
                fill="tozeroy",
                line={"color": COLORS[method], "width": 0},
            ),
        )
    threshold, title = pruned.threshold_db, "Density and CDF of the SNR over all weights"
    shapes = []
    if threshold is not None and threshold >= SNR_FLOOR_DB:
        shapes = [vline(threshold, color=COLORS["snr"], width=2)]
        title += f" (cut-off at {threshold:.1f} dB)"
    elif threshold is not None:
        title += f" (cut-off below {SNR_FLOOR_DB:.0f} dB)"
    return go.Figure(
        traces,
        layout(
            title,
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


def curve_figure(curves: dict[str, PruningCurve], dashes: dict[str, str], fraction: float):
    """Test error (%) against weights removed (%), log scale; the paper's points as crosses."""
    traces = [
        go.Scatter(
            x=[100 * f for f in curve.fractions],
            y=[100 * e for e in curve.errors],
            name=label,
            mode="lines+markers",
            line={"color": COLORS[curve.method], "dash": dashes.get(label, "solid")},
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
            {"title": {"text": "weights removed (%)"}, "range": [0, 100]},
            {"title": {"text": "test error (%)"}, "type": "log", "tickvals": ERROR_TICKS},
            shapes=[vline(100 * fraction, dash="dot", color="grey")],
        ),
    )


def weights_figure(densities: dict[str, tuple[np.ndarray, np.ndarray]], log: bool) -> go.Figure:
    """Overlaid weight densities, one line per model; ``log``: logarithmic density axis."""
    traces = [
        go.Scatter(x=c, y=d, name=label, mode="lines", line={"color": color})
        for (label, (c, d)), color in zip(densities.items(), WEIGHT_COLORS, strict=False)
    ]
    return go.Figure(
        traces,
        layout(
            "Density of trained weights",
            {"title": {"text": "weight"}, "range": list(WEIGHT_RANGE)},
            {"title": {"text": "density"}, "type": "log" if log else "linear"},
        ),
    )


def architecture(model) -> str:
    """Layer sizes, e.g. ``784-400-400-10``."""
    c = model.config
    return "-".join(str(n) for n in (c.in_features, *c.hidden, c.num_classes))


def curves_for(jobs: list[tuple[str, str, str]]) -> dict[str, PruningCurve]:
    """Cached curves for ``(checkpoint, method, label)`` jobs, computing missing points with a
    progress bar (each point is cached as soon as it is done, so leaving the page loses little)."""
    todo = sum(len(missing_fractions(name, method)) for name, method, _ in jobs)
    message = "Computing the pruning curves on the full test set (once per checkpoint)…"
    bar = st.progress(0.0, message) if todo else None
    done, curves = 0, {}
    for name, method, label in jobs:
        missing = len(missing_fractions(name, method))

        def progress(f: float, message: str, base=done, size=missing, title=label) -> None:
            bar.progress((base + f * size) / todo, f"{title}: {message}")

        curves[label] = cached_pruning_curve(name, method, progress=progress if bar else None)
        done += missing
    if bar is not None:
        bar.empty()
    return curves


st.title("Pruning and weights")
st.markdown(
    "Each weight of a Bayes-by-Backprop network has a posterior mean μ and standard deviation "
    "σ. Remove the weights with the lowest **signal-to-noise ratio** |μ|/σ (set them to exactly "
    "zero, with no uncertainty) and see how much of the network can go before the test error "
    "moves. For comparison, prune by |μ| alone or at random."
)

infos = [i for i in list_checkpoints() if i.available]
available = [i.spec.name for i in infos]
bbb_names = [i.spec.name for i in infos if i.spec.model.kind == "bbb"]
if not bbb_names:
    st.warning("No trained BBB checkpoint: train one with `python -m core train bbb_mixture`.")
    st.stop()
try:
    x_test, y_test = mnist_test()
except DatasetUnavailable as exc:
    st.error(f"The MNIST test set is unavailable: {exc}")
    st.stop()

left, middle, right = st.columns([2, 2, 3])
name = left.selectbox(
    "BBB model",
    bbb_names,
    index=bbb_names.index("bbb_mixture") if "bbb_mixture" in bbb_names else 0,
    format_func=ui.model_title,
    key="pruning_model",
)
method = middle.radio(
    "Prune by",
    METHODS,
    format_func=METHOD_LABELS.get,
    horizontal=True,
    key="pruning_method",
)
percent = right.slider("Weights removed (%)", 0, 99, 75, key="pruning_percent")
fraction = percent / 100

try:
    model = ui.load_model(name)
except CheckpointError as exc:
    st.error(f"Cannot load {ui.model_title(name)}: {exc}")
    st.stop()
pruned = pruned_summary(name, version(name), method, percent)
error, size = pruned.error, pruned.size
base = unpruned_error(name, version(name))

a, b, c, d = st.columns(4)
a.metric("Test error, unpruned", f"{base:.2%}")
b.metric(
    f"Test error, {percent}% removed",
    f"{error:.2%}",
    delta=f"{100 * (error - base):+.2f} pp",
    delta_color="inverse",
)
c.metric(f"Weights kept, of {size.total_weights:,}", f"{size.kept_weights:,}")
d.metric(
    f"Size stored sparsely (dense {size.dense_bytes / 1e6:.2f} MB)",
    f"{size.sparse_bytes / 1e6:.2f} MB",
)
st.caption(
    f"Errors on the first {QUICK_EXAMPLES:,} test images with {QUICK_SAMPLES} Monte-Carlo "
    f"samples (fast; the curves below use all {len(y_test):,} with {CURVE_SAMPLES}). Removed "
    "weights are μ = 0, σ = 0; biases are kept. Sparse size: each kept weight's μ and σ "
    "(float32) plus an int32 column index, int32 row pointers per layer (CSR), biases dense."
)

ui.show_figure(snr_figure(name, method, pruned), "pruning_snr")
st.caption(
    "Why SNR pruning works: a weight whose mean |μ| is small compared with its posterior "
    "standard deviation σ carries little signal — the posterior says it could just as well be "
    "zero (below 0 dB, |μ| < σ, sampled networks often give it either sign). Setting it to "
    "zero changes the predictions about as much as drawing another posterior sample does. The "
    "scale-mixture prior's narrow component (σ₂ = e⁻⁶ ≈ 0.0025) encourages many such "
    "weights: in the shipped mixture model most weights have σ ≈ σ₂ and |μ| far smaller. SNR "
    "in decibels is 10·log10(|μ|/σ), the paper's axis; the axis starts at −60 dB (weights "
    "whose mean collapsed to zero lie further left and are counted in the CDF only)."
)

st.subheader("Error against the pruning ratio")
compare = st.checkbox(
    "Also prune the MLP and the MC dropout network (by |w| and at random)",
    key="pruning_compare",
)
jobs = [(name, m, f"BBB, {METHOD_LABELS[m]}") for m in METHODS]
dashes = {}
for point_name in POINT_MODELS if compare else ():
    if point_name in available:
        for m in ("magnitude", "random"):
            label = f"{ui.model_title(point_name)}, {METHOD_LABELS[m].replace('μ', 'w')}"
            jobs.append((point_name, m, label))
            dashes[label] = DASHES[point_name]
curves = curves_for(jobs)
ui.show_figure(curve_figure(curves, dashes, fraction), "pruning_curves")

st.markdown(
    f"**Test error after pruning** — ours: {ui.model_title(name)}, {architecture(model)}, "
    f"{num_weights(model):,} weights, all {len(y_test):,} test images, {CURVE_SAMPLES} samples; "
    "the paper: Blundell et al. (2015), Table 2, their 2×1200-unit network."
)
st.table(paper_table(curves, num_weights(model)))

st.subheader("Trained weights")
log_density = st.checkbox("Logarithmic density axis", key="pruning_log_density")
densities = {
    ui.model_title(n): weight_density(n, version(n)) for n in POINT_MODELS if n in available
}
densities[f"{ui.model_title(name)}, one posterior sample"] = weight_density(name, version(name))
ui.show_figure(weights_figure(densities, log_density), "pruning_weights")
st.caption(
    "Histogram densities of all weights (biases excluded) between −0.3 and 0.3; for BBB one "
    "set of weights drawn from the posterior, μ + σ·ε. With the scale-mixture prior many BBB "
    "weights sit in a narrow spike at zero: these are the low-SNR weights that pruning removes."
)
