"""OOD explorer: show the models inputs they never saw (clothes, Japanese characters, letters,
alphabets, noise) and compare their uncertainty with that on MNIST digits, one input at a time
and over a whole dataset (score distributions, ROC curves, AUROC and FPR at 95 % TPR).

The in-distribution task can also be Fashion-MNIST: then the Fashion-MNIST models are compared
on clothes against MNIST digits and the other sets."""

import numpy as np
import pandas as pd
import streamlit as st
import torch

from app import share, ui
from app.figures import show_figure, show_table
from app.figures.ood import hist_figure, roc_figure, spread_figure, votes_figure
from app.figures.pixels import enlarge
from core.data import DatasetUnavailable, list_datasets, load_dataset
from core.evaluation.metrics import roc_curve
from core.evaluation.uncertainty import SCORES, PredictiveSummary
from core.storage.checkpoints import TASK_DATASETS, checkpoint_dataset, task_title
from core.studies.evaluations import (
    IN_DISTRIBUTION,
    DatasetEvaluation,
    evaluate_dataset,
    evaluation_jobs,
)
from core.studies.ood import (
    CONFIDENT_PROB,
    PAGE_INPUTS,
    PAGE_SAMPLES,
    best_score,
    digit_labelled,
    ood_behaviour,
    ood_result,
    sample_summary,
    surest_inputs,
)

GRID = 9  # random samples shown
DEFAULT_DATASET = {"mnist": "fashion_mnist", "fashion_mnist": "mnist"}  # per task
EVAL_SAMPLES = (10, 20, 50, 100)
DEFAULT_SCORE = "mutual_information"
STRIP = 8  # most confident OOD inputs shown per model
PICK_KEY = "ood_pick"
SEED_KEY = "ood_seed"
EVALUATING = "Evaluating (once, then cached on disk)"


def random_samples(dataset: str, seed: int) -> np.ndarray:
    """:data:`GRID` seeded random test images of ``dataset``, ``(GRID, 28, 28)`` in [0, 1]."""
    images, _ = ui.kept(load_dataset, dataset, "test", n_inputs=GRID, seed=seed)
    return images[:, 0].numpy()


def pick(i: int) -> None:
    """Show grid sample ``i`` in the explorer (a button callback)."""
    st.session_state[PICK_KEY] = i


def reroll() -> None:
    """Draw a new random seed for the sample grid (a button callback)."""
    st.session_state[SEED_KEY] = int(np.random.default_rng().integers(1_000_000))


def describe(summary: PredictiveSummary, j: int) -> str:
    """One line about input ``j`` of a summary: predicted class, probability, MI."""
    top = int(summary.predicted[j])
    return (
        f"predicts **{top}** (mean probability {summary.mean[j, top]:.0%}, "
        f"MI {summary.mutual_information[j]:.3f} nats)"
    )


def show_sample(
    models: list[str], datasets: tuple[str, str], seed: int, chosen: int, label: str, n_samples: int
) -> None:
    """For each model: votes and top-class spread on grid sample ``chosen`` of the OOD dataset
    next to the same one of the task (``datasets``: OOD, task)."""
    names = (label, TASK_INPUT)
    for name in models:
        ood, digit = (
            ui.kept(sample_summary, name, d, seed, GRID, n_samples, models=[name]) for d in datasets
        )
        st.markdown(
            f"**{ui.model_title(name)}** — {label}: {describe(ood, chosen)}; "
            f"{TASK_INPUT}: {describe(digit, chosen)}"
        )
        counts = torch.stack([ood.class_counts[chosen], digit.class_counts[chosen]])
        top = torch.stack([ood.top_scores[:, chosen], digit.top_scores[:, chosen]], 1)
        predicted = np.array([int(ood.predicted[chosen]), int(digit.predicted[chosen])])
        left, right = st.columns(2)
        with left:
            show_figure(votes_figure(counts.numpy(), names), f"ood_{name}_votes")
        with right:
            show_figure(spread_figure(top.numpy(), predicted, names), f"ood_{name}_spread")


@st.fragment
def sample_explorer(
    datasets: tuple[str, str], seed: int, label: str, models: list[str], n_samples: int
) -> None:
    """The grid of samples with pick buttons and the picked one's views; a pick reruns only
    this fragment, not the dataset-level part."""
    grid, digits = (random_samples(d, seed) for d in datasets)
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
    preview.image(enlarge(digits[chosen]), caption=f"a test input of {TASK}", clamp=True)
    with views:
        show_sample(models, datasets, seed, chosen, f"{label} #{chosen + 1}", n_samples)
    st.caption(
        f"For the picked input and for the {TASK_INPUT}: the class each of the {n_samples} "
        "sampled networks predicts, and the softmax score of the overall predicted class in "
        "each of them. Confident: all votes on one class and scores near 1. The MLP repeats "
        "one network, so its votes are unanimous by construction."
    )


def honest_caption(
    evals: dict[str, tuple[DatasetEvaluation, DatasetEvaluation]],
    results: dict[str, dict[str, dict[str, float]]],
    score: str,
    label: str,
    digit_labels: bool,
) -> str:
    """What the numbers show, in words: each model's
    :func:`~core.studies.ood.ood_behaviour` and its best detector. ``digit_labels``: the OOD
    inputs are altered digits labelled with them, so a confident answer can be right."""
    title = SCORES[score].title.lower()
    parts = []
    for name, (inside, outside) in evals.items():
        behaviour = ood_behaviour(inside, outside, score)
        text = (
            f"**{ui.model_title(name)}**: {behaviour.calm:.0%} of the {label} inputs "
            f"have a {title} no higher than 90 % of {TASK} inputs (it would answer them as "
            '"confident"), and '
        )
        if behaviour.confident_mistakes is not None:
            text += (
                f"{behaviour.confident_mistakes:.0%} are confident mistakes (mean probability ≥ "
                f"{CONFIDENT_PROB:.0%} for a wrong class)"
            )
        else:
            text += (
                f"{behaviour.confident:.0%} get a mean probability ≥ "
                f"{CONFIDENT_PROB:.0%} for some class"
            )
            if behaviour.common_class is not None:
                text += f", most often {behaviour.common_class}"
        if behaviour.constant_score:
            text += f" — its {title} is the same for every input, so it cannot tell them apart"
        parts.append(text + ".")
    if not digit_labels:
        parts.append(
            f"None of these inputs belongs to a class of {TASK}, so every confident answer is a "
            "confident mistake."
        )
    best = []
    for name, metrics in results.items():
        top = best_score(metrics)
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
    "The models were trained on one task only — MNIST digits, or Fashion-MNIST clothes. Show "
    "them something else — clothes, digits, Japanese characters, letters, other alphabets, "
    "noise — and see whether their uncertainty rises. A Bayesian network should disagree with "
    "itself (high mutual information) on inputs unlike its training data; a plain MLP has no "
    "such signal."
)
task = share.radio(
    "In-distribution task (the models' training data)",
    tuple(TASK_DATASETS),
    format_func=task_title,
    horizontal=True,
    key="ood_task",
)
TASK = task_title(task)
TASK_INPUT = "MNIST digit" if task == IN_DISTRIBUTION else f"{TASK} input"

infos = {info.name: info for info in list_datasets() if info.name != task}
status = {name: info.availability() for name, info in infos.items()}
titles = {name: info.title for name, info in infos.items()}
available = [name for name, (ok, _) in status.items() if ok]
missing = [name for name, (ok, _) in status.items() if not ok]

chosen = [name for name, _ in ui.selected_models()]
models = [name for name in chosen if checkpoint_dataset(name) == task]
if len(models) < len(chosen):
    st.caption(
        f"Left out: these chosen models were trained on another task than {TASK}, so its "
        "inputs are not in-distribution for them (switch the task above to see them):"
    )
    st.text(", ".join(ui.model_title(n) for n in chosen if n not in models))  # user names
n_samples = ui.sample_count()

left, middle, right = st.columns([3, 2, 1], vertical_alignment="bottom")
dataset = share.selectbox(
    "Dataset the models never saw",
    available,
    index=available.index(DEFAULT_DATASET[task]) if DEFAULT_DATASET.get(task) in available else 0,
    format_func=titles.get,
    key="ood_dataset",
    placeholder="No dataset available",
    container=left,
)
seed = share.number_input("Seed", 0, 1_000_000, 0, key=SEED_KEY, container=middle)
right.button("Re-roll", on_click=reroll, key="ood_reroll", icon=":material/casino:")
if missing:
    with st.expander(f"Unavailable datasets ({len(missing)})"):
        for name in missing:
            st.caption(f"**{titles[name]}**: {status[name][1]}")
if dataset is None:
    st.warning("No out-of-distribution dataset is available; see the list above.")
    st.stop()
if not models:
    st.warning(f"Choose at least one model trained on {TASK} in the sidebar.")
    st.stop()
try:
    for d in (dataset, task):
        random_samples(d, int(seed))
except DatasetUnavailable as exc:
    st.error(str(exc))
    st.stop()

label = titles[dataset]
digit_labels = digit_labelled(dataset, task)
st.caption(infos[dataset].description)
sample_explorer((dataset, task), int(seed), label, models, n_samples)

st.subheader(f"{TASK} test against {label}")
a, b, c = st.columns(3)
subset = share.number_input(
    "Inputs per dataset",
    10,
    10_000,
    PAGE_INPUTS,
    step=500,
    key="ood_subset",
    help=f"Random test inputs drawn from each of {TASK} and the OOD dataset (seed 0).",
    container=a,
)
eval_samples = share.selectbox(
    "Samples per input",
    EVAL_SAMPLES,
    index=EVAL_SAMPLES.index(PAGE_SAMPLES),
    key="ood_samples",
    help="Monte-Carlo passes per input for the dataset-level numbers (cached on disk).",
    container=b,
)
score = share.selectbox(
    "Uncertainty score",
    list(SCORES),
    index=list(SCORES).index(DEFAULT_SCORE),
    format_func=lambda s: SCORES[s].title,
    key="ood_score",
    container=c,
)
datasets = (task, dataset)
try:
    ui.run_jobs(
        evaluation_jobs(
            models,
            list(datasets),
            title=ui.model_title,
            n_samples=eval_samples,
            n_inputs=subset,
        ),
        EVALUATING,
    )
except DatasetUnavailable as exc:
    st.error(str(exc))
    st.stop()
evals = {
    name: tuple(
        ui.kept(evaluate_dataset, name, d, n_samples=eval_samples, n_inputs=subset, models=[name])
        for d in datasets
    )
    for name in models
}
results = {
    name: ui.kept(
        ood_result, name, dataset, n_samples=eval_samples, n_inputs=subset, models=[name]
    ).metrics
    for name in models
}

score_title = SCORES[score].title.lower()
for column, (name, (inside, outside)) in zip(st.columns(len(models)), evals.items(), strict=True):
    with column:
        fig = hist_figure(
            inside.scores[score].numpy(),
            outside.scores[score].numpy(),
            f"{ui.model_title(name)}: {score_title}",
            label,
        )
        show_figure(fig, f"ood_hist_{name}")

curves = {}
for name, (inside, outside) in evals.items():
    curve = roc_curve(inside.scores[score], outside.scores[score])
    auroc = results[name][score]["auroc"]
    curves[f"{ui.model_title(name)} (AUROC {auroc:.3f})"] = (curve.fpr.numpy(), curve.tpr.numpy())
roc_column, table_column = st.columns([2, 3])
with roc_column:
    show_figure(roc_figure(curves, f"ROC: {score_title} as detector"), "ood_roc")
with table_column:
    index = pd.Index([ui.model_title(name) for name in models], name="Model")
    for metric, heading in (
        ("auroc", "AUROC (1 = perfect, 0.5 = chance)"),
        (
            "fpr95",
            f"FPR at 95 % TPR ({TASK} inputs flagged when 95 % of OOD inputs are; lower is better)",
        ),
    ):
        st.markdown(f"**{heading}**")
        table = pd.DataFrame(
            {s.title: [results[name][key][metric] for name in models] for key, s in SCORES.items()},
            index=index,
        )
        show_table(table.map("{:.3f}".format), grid=False)
if digit_labels:
    st.caption(
        f"Accuracy on {label} (its labels are the original digits) against the {TASK} subset: "
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
        + f". Near chance by design: those labels are not classes of {TASK}, so a classifier "
        "of that task has no right answer to give."
    )
inside, outside = evals[models[0]]
st.caption(
    f"{len(inside):,} random {TASK} test inputs and {len(outside):,} {label} inputs, "
    f"{eval_samples} passes each. A score flags an input as "
    "OOD when it exceeds a threshold; AUROC is the chance that a random OOD input scores higher "
    f"than a random {TASK} input."
)
st.info(honest_caption(evals, results, score, label, digit_labels))

st.markdown(
    f"**The {label} inputs each model is surest about** (lowest {score_title}, "
    "ties broken by the highest mean probability)"
)
images, _ = ui.kept(load_dataset, dataset, "test", n_inputs=subset, seed=0)
for name, (_, outside) in evals.items():
    surest = surest_inputs(outside, score, STRIP)
    strip = np.concatenate(list(images[surest, 0].numpy()), axis=1)
    predicted = ", ".join(str(int(k)) for k in outside.predicted[surest])
    st.image(enlarge(strip), caption=f"{ui.model_title(name)}: predicted {predicted}", clamp=True)
