"""Pruning and weights: remove the weights with the lowest signal-to-noise ratio and watch the
test error (Blundell et al. 2015, §5.1); the densities of SNR values and of trained weights.

Shipped and user-trained BBB models are offered; each is evaluated on its own task's test set
(MNIST, or Fashion-MNIST), and compared with the MLP and MC dropout network of that task."""

import streamlit as st

from app import share, ui
from app.figures import show_figure, show_table
from app.figures.pruning import MODEL_DASHES, curve_figure, snr_figure, weights_figure
from core.evaluation import pruning
from core.methods import model_class
from core.storage.checkpoints import CheckpointError, checkpoint_dataset, task_title
from core.studies.pruning_curves import (
    CURVE_SAMPLES,
    POINT_MODELS,
    QUICK_INPUTS,
    QUICK_SAMPLES,
    SNR_BINS,
    SNR_FLOOR_DB,
    cached_pruning_curve,
    checkpoint_snr,
    compared_curves,
    paper_table,
    pruning_jobs,
    quick_error,
    quick_point,
    weight_histogram,
)

WEIGHT_RANGE = (-0.3, 0.3)
WEIGHT_BINS = 200
CURVES_MESSAGE = "Computing the pruning curves on the full test set (once per checkpoint)"


def architecture(model) -> str:
    """Layer sizes, e.g. ``784-400-400-10``."""
    return "-".join(str(n) for n in model.config.sizes)


st.title("Pruning and weights")
st.markdown(
    "Each weight of a Bayes-by-Backprop network has a posterior mean μ and standard deviation "
    "σ. Remove the weights with the lowest **signal-to-noise ratio** |μ|/σ (set them to exactly "
    "zero, with no uncertainty) and see how much of the network can go before the test error "
    "moves. For comparison, prune by |μ| alone or at random."
)

infos = ui.all_checkpoints()
available = [i.spec.name for i in infos if i.available]
# Present but broken files stay listed: choosing one names the file and says what is wrong.
bbb_names = [
    i.spec.name
    for i in infos
    if i.path.is_file() and model_class(i.spec.model.kind).weight_posterior
]
if not bbb_names:
    st.warning(
        "No trained BBB checkpoint: train one on the Train page or with "
        "`python -m core train bbb_mixture`."
    )
    st.stop()

left, middle, right = st.columns([2, 2, 3])
name = share.selectbox(
    "BBB model",
    bbb_names,
    index=bbb_names.index("bbb_mixture") if "bbb_mixture" in bbb_names else 0,
    format_func=ui.model_title,
    key="pruning_model",
    container=left,
)
method = share.radio(
    "Prune by",
    pruning.METHODS,
    format_func=pruning.METHOD_LABELS.get,
    horizontal=True,
    key="pruning_method",
    container=middle,
)
percent = share.slider("Weights removed (%)", 0, 99, 75, key="pruning_percent", container=right)
fraction = percent / 100

try:
    model = ui.load_model(name)
except CheckpointError as exc:
    st.error(f"Cannot load {ui.model_title(name)}: {exc}")
    st.stop()
task = checkpoint_dataset(name)
x_test, y_test = ui.require_test_set(task)
if task != "mnist":
    st.caption(f"Trained on {task_title(task)}: evaluated on its test set.")
pruned = ui.kept(quick_point, name, method, fraction, SNR_BINS, SNR_FLOOR_DB, models=[name])
error, size = pruned.error, pruned.size
base = ui.kept(quick_error, name, models=[name])

a, b, c, d = st.columns(4)
a.metric("Test error, unpruned", f"{base:.2%}")
b.metric(
    f"Test error, {percent}% removed",
    f"{error:.2%}",
    delta=f"{100 * (error - base):+.2f} points",
    delta_color="inverse",
    delta_arrow="off",
)
c.metric(f"Weights kept, of {size.total_weights:,}", f"{size.kept_weights:,}")
d.metric(
    f"Size stored sparsely (dense {size.dense_bytes / 1e6:.2f} MB)",
    f"{size.sparse_bytes / 1e6:.2f} MB",
)
st.caption(
    f"Errors on the first {QUICK_INPUTS:,} test images with {QUICK_SAMPLES} Monte-Carlo "
    f"samples (fast; the curves below use all {len(y_test):,} with {CURVE_SAMPLES}). Removed "
    "weights are μ = 0, σ = 0; biases are kept. Sparse size: each kept weight's μ and σ "
    "(float32) plus an int32 column index, int32 row pointers per layer (CSR), biases dense."
)

snr = ui.kept(checkpoint_snr, name, SNR_BINS, SNR_FLOOR_DB, models=[name])
show_figure(
    snr_figure(
        snr.centres,
        snr.density,
        snr.cdf,
        pruned.removed_density,
        method,
        pruned.threshold_db,
        SNR_FLOOR_DB,
    ),
    "pruning_snr",
)
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
compare = share.checkbox(
    "Also prune the MLP and the MC dropout network (by |w| and at random)",
    key="pruning_compare",
)
point_models = POINT_MODELS.get(task, ())
styles = dict(zip(point_models, POINT_MODELS["mnist"], strict=False))  # dashes per network
jobs, dashes = [], {}
for curve_model, m in compared_curves(name, task, compare, available):
    if curve_model == name:
        label = f"BBB, {pruning.METHOD_LABELS[m]}"
    else:
        label = f"{ui.model_title(curve_model)}, {pruning.METHOD_LABELS[m].replace('μ', 'w')}"
        dashes[label] = MODEL_DASHES[styles[curve_model]]
    jobs.append((curve_model, m, label))
ui.run_jobs(pruning_jobs(jobs), CURVES_MESSAGE)
curves = {label: cached_pruning_curve(n, m) for n, m, label in jobs}
show_figure(curve_figure(curves, dashes, fraction), "pruning_curves")

total_weights = pruning.num_weights(model)
st.markdown(
    f"**Test error after pruning** — ours: {ui.model_title(name)}, {architecture(model)}, "
    f"{total_weights:,} weights, all {len(y_test):,} test images, {CURVE_SAMPLES} samples; "
    "the paper: Blundell et al. (2015), Table 2, their 2×1200-unit network."
)
show_table(paper_table(curves, total_weights), grid=False)

st.subheader("Trained weights")
log_density = share.checkbox("Logarithmic density axis", key="pruning_log_density")
densities = {
    ui.model_title(n): ui.kept(weight_histogram, n, WEIGHT_BINS, WEIGHT_RANGE, models=[n])
    for n in point_models
    if n in available
}
densities[f"{ui.model_title(name)}, one posterior sample"] = ui.kept(
    weight_histogram, name, WEIGHT_BINS, WEIGHT_RANGE, models=[name]
)
show_figure(weights_figure(densities, WEIGHT_RANGE, log_density), "pruning_weights")
st.caption(
    "Histogram densities of all weights (biases excluded) between −0.3 and 0.3; for BBB one "
    "set of weights drawn from the posterior, μ + σ·ε. With the scale-mixture prior many BBB "
    "weights sit in a narrow spike at zero: these are the low-SNR weights that pruning removes."
)
