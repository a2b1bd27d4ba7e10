"""OOD explorer: show the models inputs they never saw (clothes, Japanese characters, letters,
alphabets, noise) and compare their uncertainty with that on MNIST digits, one input at a time
and over a whole dataset (score distributions, ROC curves, AUROC and FPR at 95 % TPR)."""

import numpy as np
import pandas as pd
import plotly.graph_objects as go
import streamlit as st
import torch

from app import ui
from core.checkpoints import checkpoint_path
from core.data import DatasetUnavailable, list_datasets, load_dataset
from core.evalcache import IN_DISTRIBUTION, DatasetEvaluation, evaluate_dataset, is_cached
from core.metrics import roc_curve
from core.ood import compare, digit_labelled
from core.predictive import predictive_samples
from core.uncertainty import SCORES, rejection_limits, summarize

GRID = 9  # random samples shown
SCALE = 3  # screen pixels per image pixel
DEFAULT_DATASET = "fashion_mnist"
DEFAULT_SUBSET = 2000
EVAL_SAMPLES = (10, 20, 50, 100)
DEFAULT_EVAL_SAMPLES = 50
DEFAULT_SCORE = "mutual_information"
BINS = 40
ROC_POINTS = 400  # ROC curves are thinned to about this many points for drawing
CONFIDENT_PROB = 0.9
STRIP = 8  # most confident OOD inputs shown per model
SIDES = ("#ef553b", "#636efa")  # OOD input, MNIST digit
MODEL_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd")
PICK_KEY = "ood_pick"
SEED_KEY = "ood_seed"


def version(name: str) -> int:
    """Changes whenever the checkpoint file is rewritten (keys the caches below)."""
    return checkpoint_path(name).stat().st_mtime_ns


def enlarge(image: np.ndarray) -> np.ndarray:
    return np.kron(image, np.ones((SCALE, SCALE), dtype=np.float32))


@st.cache_data(show_spinner="Loading samples…", max_entries=64)
def random_samples(dataset: str, seed: int) -> np.ndarray:
    """:data:`GRID` seeded random test images of ``dataset``, ``(GRID, 28, 28)`` in [0, 1]."""
    images, _ = load_dataset(dataset, "test", n=GRID, seed=seed)
    return images[:, 0].numpy()


@st.cache_data(show_spinner=False, max_entries=256)
def sample_views(name: str, file_version: int, images: np.ndarray, n: int) -> dict[str, np.ndarray]:
    """Seeded ``n``-pass summaries of ``images (B, 28, 28)``: votes per class ``(B, C)``, the
    predicted class's score in each pass ``(n, B)``, mean probabilities ``(B, C)``, MI ``(B,)``."""
    x = torch.from_numpy(images)[:, None]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        summary = summarize(predictive_samples(ui.load_model(name), x, n))
    return {
        "counts": summary.class_counts.numpy(),
        "top": summary.top_scores.numpy(),
        "mean": summary.mean.numpy(),
        "mi": summary.mutual_information.numpy(),
    }


@st.cache_resource(show_spinner=False, max_entries=64)
def evaluation(
    name: str, file_version: int, dataset: str, subset: int, samples: int
) -> DatasetEvaluation:
    """The disk-cached evaluation, kept in memory (shared: never modify it)."""
    return evaluate_dataset(name, dataset, n=subset, samples=samples)


@st.cache_resource(show_spinner="Loading the OOD subset…", max_entries=8)
def subset_images(dataset: str, subset: int) -> torch.Tensor:
    """The ``subset`` inputs that :func:`evaluate_dataset` scored, in the same order."""
    return load_dataset(dataset, "test", n=subset, seed=0)[0]


@st.cache_data(show_spinner=False, max_entries=64)
def detection(
    name: str, file_version: int, dataset: str, subset: int, samples: int
) -> dict[str, dict[str, float]]:
    """Score name → ``{"auroc", "aupr", "fpr95"}`` of telling ``dataset`` from MNIST."""
    inside = evaluation(name, file_version, IN_DISTRIBUTION, subset, samples)
    outside = evaluation(name, file_version, dataset, subset, samples)
    return compare(inside, outside)


def evaluate_all(names: list[str], dataset: str, subset: int, samples: int) -> None:
    """Compute the missing evaluations (MNIST and ``dataset`` per model) with a progress bar."""
    todo = [
        (name, d)
        for name in names
        for d in (IN_DISTRIBUTION, dataset)
        if not is_cached(name, d, n=subset, samples=samples)
    ]
    if not todo:
        return
    bar = st.progress(0.0, "Evaluating (once, then cached on disk)…")
    for i, (name, d) in enumerate(todo):

        def progress(f: float, message: str, i: int = i, title: str = ui.model_title(name)):
            bar.progress((i + f) / len(todo), f"{title}: {message}")

        evaluate_dataset(name, d, n=subset, samples=samples, progress=progress)
    bar.empty()


def layout(title: str, height: int, xaxis: dict, yaxis: dict, **extra) -> dict:
    """Common figure layout: small title, tight margins, legend below."""
    return {
        "title": {"text": title, "font": {"size": 14}},
        "height": height,
        "margin": {"l": 10, "r": 10, "t": 40, "b": 10},
        "legend": {"orientation": "h", "y": -0.3},
        "xaxis": xaxis,
        "yaxis": yaxis,
        **extra,
    }


def votes_figure(counts: np.ndarray, names: tuple[str, str]) -> go.Figure:
    """Grouped bars: how many sampled networks predicted each class, per input ``(2, C)``."""
    bars = [
        go.Bar(x=np.arange(counts.shape[1]), y=counts[j], name=names[j], marker_color=SIDES[j])
        for j in range(2)
    ]
    yaxis = {"title": {"text": "networks"}, "rangemode": "tozero"}
    title = "Class predicted by each sampled network"
    return go.Figure(bars, layout(title, 280, ui.CLASS_AXIS, yaxis, barmode="group"))


def spread_figure(top: np.ndarray, predicted: np.ndarray, names: tuple[str, str]) -> go.Figure:
    """Overlaid histograms over sampled networks of the predicted class's softmax score, per
    input (``top (n, 2)``)."""
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
    yaxis = {"title": {"text": "networks"}, "rangemode": "tozero"}
    title = "Score of the predicted class in each sampled network"
    return go.Figure(hists, layout(title, 280, xaxis, yaxis, barmode="overlay"))


def hist_figure(inside: np.ndarray, outside: np.ndarray, title: str, label: str) -> go.Figure:
    """Overlaid normalised histograms of a score on MNIST and on the OOD set (shared bins)."""
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


def roc_figure(curves: dict[str, tuple[np.ndarray, np.ndarray]], title: str) -> go.Figure:
    """ROC curves (FPR, TPR) per model; the chance diagonal dotted."""
    lines = [
        go.Scatter(x=fpr, y=tpr, name=label, mode="lines", line={"color": MODEL_COLORS[i % 5]})
        for i, (label, (fpr, tpr)) in enumerate(curves.items())
    ]
    chance = go.Scatter(
        x=[0, 1], y=[0, 1], name="chance", mode="lines", line={"dash": "dot", "color": "grey"}
    )
    xaxis = {"title": {"text": "false positive rate (MNIST flagged)"}, "range": [0, 1]}
    yaxis = {"title": {"text": "true positive rate (OOD flagged)"}, "range": [0, 1.02]}
    return go.Figure([*lines, chance], layout(title, 380, xaxis, yaxis))


def thin(fpr: torch.Tensor, tpr: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """About :data:`ROC_POINTS` points of a ROC curve, both ends kept."""
    keep = np.unique(np.linspace(0, len(fpr) - 1, ROC_POINTS).round().astype(int))
    return fpr.numpy()[keep], tpr.numpy()[keep]


def pick(i: int) -> None:
    st.session_state[PICK_KEY] = i


def reroll() -> None:
    st.session_state[SEED_KEY] = int(np.random.default_rng().integers(1_000_000))


def describe(views: dict[str, np.ndarray], j: int) -> str:
    """One line about input ``j`` of :func:`sample_views`: predicted class, probability, MI."""
    top = int(views["mean"][j].argmax())
    return (
        f"predicts **{top}** (mean probability {views['mean'][j, top]:.0%}, "
        f"MI {views['mi'][j]:.3f} nats)"
    )


def show_sample(models: list[str], ood: np.ndarray, digit: np.ndarray, label: str, n: int):
    """For each model: votes and top-class spread on the OOD sample next to the MNIST digit."""
    images, names = np.stack([ood, digit]), (label, "MNIST digit")
    for name in models:
        views = sample_views(name, version(name), images, n)
        predicted = views["mean"].argmax(-1)
        st.markdown(
            f"**{ui.model_title(name)}** — {label}: {describe(views, 0)}; "
            f"MNIST digit: {describe(views, 1)}"
        )
        left, right = st.columns(2)
        with left:
            ui.show_figure(votes_figure(views["counts"], names), f"ood_{name}_votes")
        with right:
            ui.show_figure(spread_figure(views["top"], predicted, names), f"ood_{name}_spread")


@st.fragment
def sample_explorer(
    grid: np.ndarray, digits: np.ndarray, label: str, models: list[str], n: int
) -> None:
    """The grid of samples with pick buttons and the picked one's views; a pick reruns only
    this fragment, not the dataset-level part."""
    chosen = st.session_state.setdefault(PICK_KEY, 0)
    for i, column in enumerate(st.columns(GRID)):
        column.image(enlarge(grid[i]), clamp=True, width="stretch")
        column.button(
            f"#{i + 1}",
            key=f"ood_pick_{i}",
            on_click=pick,
            args=(i,),
            type="primary" if i == chosen else "secondary",
            width="stretch",
        )
    st.subheader("One input, every sampled network")
    preview, views = st.columns([1, 6])
    preview.image(enlarge(grid[chosen]), caption=f"{label} #{chosen + 1}", clamp=True)
    preview.image(enlarge(digits[chosen]), caption="an MNIST test digit", clamp=True)
    with views:
        show_sample(models, grid[chosen], digits[chosen], f"{label} #{chosen + 1}", n)
    st.caption(
        f"For the picked input and for the MNIST digit: the class each of the {n} sampled "
        "networks predicts, and the softmax score of the overall predicted class in each of "
        "them. Confident: all votes on one class and scores near 1. The MLP repeats one "
        "network, so its votes are unanimous by construction."
    )


def honest_caption(
    evals: dict[str, tuple[DatasetEvaluation, DatasetEvaluation]],
    results: dict[str, dict[str, dict[str, float]]],
    score: str,
    label: str,
    digit_labels: bool,
) -> str:
    """What the numbers show, computed from the evaluations and detection metrics on screen.
    ``digit_labels``: the OOD inputs are altered digits labelled with them, so a confident
    answer can be right."""
    title = SCORES[score].title.lower()
    parts = []
    for name, (inside, outside) in evals.items():
        p90 = rejection_limits(inside.scores[score])["p90"]
        calm = outside.scores[score] <= p90
        sure = outside.mean.max(-1).values >= CONFIDENT_PROB
        text = (
            f"**{ui.model_title(name)}**: {calm.float().mean().item():.0%} of the {label} inputs "
            f"have a {title} no higher than 90 % of MNIST digits (it would answer them as "
            '"confident"), and '
        )
        if digit_labels:
            mistakes = (sure & ~outside.correct).float().mean().item()
            text += (
                f"{mistakes:.0%} are confident mistakes (mean probability ≥ "
                f"{CONFIDENT_PROB:.0%} for a wrong digit)"
            )
        else:
            text += (
                f"{sure.float().mean().item():.0%} get a mean probability ≥ "
                f"{CONFIDENT_PROB:.0%} for some digit"
            )
            if sure.any():
                common = int(torch.bincount(outside.predicted[sure], minlength=10).argmax())
                text += f", most often {common}"
        values = torch.cat([inside.scores[score], outside.scores[score]])
        if (values == values[0]).all():
            text += f" — its {title} is the same for every input, so it cannot tell them apart"
        parts.append(text + ".")
    if not digit_labels:
        parts.append(
            "None of these inputs is a digit, so every confident answer is a confident mistake."
        )
    best = []
    for name, metrics in results.items():
        top = max(metrics, key=lambda s: metrics[s]["auroc"])
        auroc = metrics[top]["auroc"]
        best.append(f"{ui.model_title(name)}: {SCORES[top].title.lower()}, AUROC {auroc:.3f}")
    parts.append(
        "Best detector per model: "
        + "; ".join(best)
        + ". Uncertainty is higher on such inputs on average, not on each one: the strips below "
        "show the inputs each model is surest about."
    )
    return " ".join(parts)


st.title("Out-of-distribution explorer")
st.markdown(
    "The models were trained on MNIST digits only. Show them something else — clothes, "
    "Japanese characters, letters, other alphabets, noise — and see whether their uncertainty "
    "rises. A Bayesian network should disagree with itself (high mutual information) on inputs "
    "unlike its training data; a plain MLP has no such signal."
)

infos = {info.name: info for info in list_datasets() if info.name != IN_DISTRIBUTION}
status = {name: info.availability() for name, info in infos.items()}
titles = {name: info.title for name, info in infos.items()}
available = [name for name, (ok, _) in status.items() if ok]
missing = [name for name, (ok, _) in status.items() if not ok]

models = [name for name, _ in ui.selected_models()]
n = ui.sample_count()

left, middle, right = st.columns([3, 2, 1], vertical_alignment="bottom")
dataset = left.selectbox(
    "Dataset the models never saw",
    available,
    index=available.index(DEFAULT_DATASET) if DEFAULT_DATASET in available else 0,
    format_func=titles.get,
    key="ood_dataset",
    placeholder="No dataset available",
)
seed = middle.number_input("Seed", 0, 1_000_000, 0, key=SEED_KEY)
right.button("Re-roll", on_click=reroll, key="ood_reroll", icon=":material/casino:")
if missing:
    with st.expander(f"Unavailable datasets ({len(missing)})"):
        for name in missing:
            st.caption(f"**{titles[name]}**: {status[name][1]}")
if dataset is None:
    st.warning("No out-of-distribution dataset is available; see the list above.")
    st.stop()
if not models:
    st.warning("Choose at least one trained model in the sidebar.")
    st.stop()
try:
    grid = random_samples(dataset, int(seed))
    digits = random_samples(IN_DISTRIBUTION, int(seed))
except DatasetUnavailable as exc:
    st.error(str(exc))
    st.stop()

label = titles[dataset]
digit_labels = digit_labelled(dataset)
st.caption(infos[dataset].description)
sample_explorer(grid, digits, label, models, n)

st.subheader(f"MNIST test against {label}")
a, b, c = st.columns(3)
subset = a.number_input(
    "Inputs per dataset",
    10,
    10_000,
    DEFAULT_SUBSET,
    step=500,
    key="ood_subset",
    help="Random test inputs drawn from each of MNIST and the OOD dataset (seed 0).",
)
samples = b.selectbox(
    "Samples per input",
    EVAL_SAMPLES,
    index=EVAL_SAMPLES.index(DEFAULT_EVAL_SAMPLES),
    key="ood_samples",
    help="Monte-Carlo passes per input for the dataset-level numbers (cached on disk).",
)
score = c.selectbox(
    "Uncertainty score",
    list(SCORES),
    index=list(SCORES).index(DEFAULT_SCORE),
    format_func=lambda s: SCORES[s].title,
    key="ood_score",
)
try:
    evaluate_all(models, dataset, subset, samples)
except DatasetUnavailable as exc:
    st.error(str(exc))
    st.stop()
evals = {
    name: tuple(
        evaluation(name, version(name), d, subset, samples) for d in (IN_DISTRIBUTION, dataset)
    )
    for name in models
}
results = {name: detection(name, version(name), dataset, subset, samples) for name in models}

for column, (name, (inside, outside)) in zip(st.columns(len(models)), evals.items(), strict=True):
    with column:
        fig = hist_figure(
            inside.scores[score].numpy(),
            outside.scores[score].numpy(),
            f"{ui.model_title(name)}: {SCORES[score].title.lower()}",
            label,
        )
        ui.show_figure(fig, f"ood_hist_{name}")

curves = {}
for name, (inside, outside) in evals.items():
    curve = roc_curve(inside.scores[score], outside.scores[score])
    curves[f"{ui.model_title(name)} (AUROC {results[name][score]['auroc']:.3f})"] = thin(
        curve.fpr, curve.tpr
    )
roc_column, table_column = st.columns([2, 3])
with roc_column:
    ui.show_figure(roc_figure(curves, f"ROC: {SCORES[score].title.lower()} as detector"), "ood_roc")
with table_column:
    index = pd.Index([ui.model_title(name) for name in models], name="Model")
    for metric, heading in (
        ("auroc", "AUROC (1 = perfect, 0.5 = chance)"),
        (
            "fpr95",
            "FPR at 95 % TPR (MNIST inputs flagged when 95 % of OOD inputs are; lower is better)",
        ),
    ):
        st.markdown(f"**{heading}**")
        table = pd.DataFrame(
            {s.title: [results[name][key][metric] for name in models] for key, s in SCORES.items()},
            index=index,
        )
        st.table(table.map("{:.3f}".format))
if digit_labels:
    st.caption(
        f"Accuracy on {label} (its labels are the original digits) against the MNIST subset: "
        + ", ".join(
            f"{ui.model_title(name)} {outside.accuracy:.1%} vs {inside.accuracy:.1%}"
            for name, (inside, outside) in evals.items()
        )
        + "."
    )
elif infos[dataset].has_labels:
    st.caption(
        f"Accuracy against {label}'s own labels: "
        + ", ".join(
            f"{ui.model_title(name)} {out.accuracy:.1%}" for name, (_, out) in evals.items()
        )
        + ". Near chance by design: those labels are not digits, so a digit classifier has no "
        "right answer to give."
    )
inside, outside = evals[models[0]]
st.caption(
    f"{len(inside):,} random MNIST test digits and {len(outside):,} {label} inputs, {samples} "
    "passes each. A score flags an input as "
    "OOD when it exceeds a threshold; AUROC is the chance that a random OOD input scores higher "
    "than a random MNIST digit."
)
st.info(honest_caption(evals, results, score, label, digit_labels))

st.markdown(
    f"**The {label} inputs each model is surest about** (lowest {SCORES[score].title.lower()}, "
    "ties broken by the highest mean probability)"
)
images = subset_images(dataset, subset)
for name, (_, outside) in evals.items():
    order = torch.argsort(outside.scores["max_prob"], stable=True)
    surest = order[torch.argsort(outside.scores[score][order], stable=True)][:STRIP]
    strip = np.concatenate(list(images[surest, 0].numpy()), axis=1)
    predicted = ", ".join(str(int(k)) for k in outside.predicted[surest])
    st.image(enlarge(strip), caption=f"{ui.model_title(name)}: predicted {predicted}", clamp=True)
