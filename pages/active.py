"""Active learning: let the Bayesian network choose which digits to label (Gal et al. 2017)."""

import json

import numpy as np
import streamlit as st

from app import ui
from app.figures import show_figure, show_table
from app.figures.active import curves_figure
from core.active.acquisition import TITLES
from core.active.loop import (
    MODEL_KINDS,
    RESULT_FILE,
    ActiveLearner,
    live_config,
    load_active_data,
)
from core.active.protocols import PAPER_LABELS, paper_comparison
from core.data import DatasetUnavailable
from core.methods import method
from core.storage.paths import REPO_ROOT

LIVE_KEY = "active_live"
RUNNING_KEY = "active_running"
KIND_KEY = "active_kind"
# The live run trains 100 steps a round (the stored curves 600), scores 500 random pool images
# (1,000) with 10 passes (20) and measures on 1,000 test images (5,000). Measured on one quiet
# core here, both learners to 150 labels, seeds 0-2: a round takes 2.84-2.87 s (median; the first
# 2.2-2.8 s, at most 3.6 s); at 150 labels BALD 79.2 / 81.2 / 80.9 % against random 77.9 / 78.8 /
# 80.5 % (120 steps and 20 passes: 3.6-4.0 s a round in the same conditions).
LIVE = {"budget": 150, "test_size": 1000, "candidates": 500, "train_steps": 100, "n_samples": 10}
PROTOCOL_FILE = "active_learning-gal2017.json"
# stored runs of the paper's experiment trained on summed losses → the line above their table
SUMMED_LOSSES = {
    "active_learning-gal2017-minibatch_loss_sum.json": "From Keras 0.3's first weights, as above:",
    "active_learning-gal2017-minibatch_loss_sum-init_glorot.json": (
        "From the first weights of later Keras versions:"
    ),
    "active_learning-gal2017-minibatch_loss_sum-init_torch.json": "From PyTorch's first weights:",
}


def stored_curves(name: str = RESULT_FILE) -> dict | None:
    """Precomputed curves in ``benchmarks/`` (``python -m core active --save``), or None."""
    try:
        return json.loads((REPO_ROOT / "benchmarks" / name).read_text())
    except (OSError, ValueError):
        return None


def paper_table(result: dict) -> list[dict]:
    """The rows of :func:`paper_comparison` in words."""
    return [
        {
            "acquisition": TITLES[row["acquisition"]],
            "test error": f"{row['error']} %",
            "labels here, per repetition": ", ".join(
                "not within 1,000" if n is None else str(n) for n in row["seeds"]
            ),
            "mean": "–" if row["mean"] is None else f"{row['mean']:.0f}",
            "Gal et al.": str(row["paper"]),
            "here / paper": "–" if row["ratio"] is None else f"{row['ratio']:.2f}×",
        }
        for row in paper_comparison(result)
    ]


def network(settings: dict) -> str:
    """The stored run's network in words, e.g. "a CNN (conv 16-32, dense 128)"."""
    hidden = "-".join(map(str, settings["hidden"]))
    if settings.get("conv"):
        conv = "-".join(map(str, settings["conv"]))
        return f"a small CNN (5×5 stride-2 convolutions {conv}, dense {hidden})"
    return f"an MLP 784-{hidden}-10"


def reach(value: int | None) -> str:
    return "not reached" if value is None else f"{value}"


def start() -> None:
    data = ui.kept(load_active_data)
    kind = st.session_state.get(KIND_KEY, "dropout")
    st.session_state[LIVE_KEY] = {
        name: ActiveLearner(live_config(kind, acquisition=name, **LIVE), data)
        for name in ("bald", "random")
    }
    st.session_state[RUNNING_KEY] = True


def toggle() -> None:
    st.session_state[RUNNING_KEY] = not st.session_state.get(RUNNING_KEY, False)


@st.fragment(run_every=1.0)
def live_run() -> None:
    """One round of BALD and of random per tick while running; pause, resume or restart."""
    learners = st.session_state.get(LIVE_KEY)
    st.selectbox(
        "Model",
        MODEL_KINDS,
        index=MODEL_KINDS.index("dropout"),
        format_func=lambda kind: method(kind).title,
        key=KIND_KEY,
        help="The Bayesian network that is retrained every round and whose sampled networks "
        "score the unlabelled digits. A new run starts with it.",
    )
    left, middle = st.columns(2)
    left.button("Start a new run", on_click=start, key="active_start", type="primary")
    running = st.session_state.get(RUNNING_KEY, False)
    if learners is None:
        config = live_config(st.session_state[KIND_KEY], **LIVE)
        st.caption(
            f"Trains a fresh {method(config.kind).title} network, {network(config.to_dict())}, "
            f"for {config.train_steps} steps after each round of {config.acquire} labels, "
            f"from {config.initial} to "
            f"{config.budget} labels, once choosing by BALD and once at random, side by side "
            "(a few seconds per round on a laptop CPU)."
        )
        return
    finished = all(learner.done for learner in learners.values())
    middle.button(
        "Pause" if running and not finished else "Resume",
        on_click=toggle,
        key="active_pause",
        disabled=finished,
    )
    if running and not finished:
        for learner in learners.values():
            if not learner.done:
                learner.step()
    curves = {
        name: {
            "labels": [r.labels for r in learner.rounds],
            "mean": [r.accuracy for r in learner.rounds],
        }
        for name, learner in learners.items()
        if learner.rounds
    }
    if curves:
        show_figure(curves_figure(curves, TITLES, "This run"), "active_live_curves")
    x_train = ui.kept(load_active_data)[0]
    for name, learner in learners.items():
        if learner.rounds and learner.rounds[-1].picked:
            last = learner.rounds[-1]
            strip = np.concatenate([x_train[i, 0].numpy() for i in last.picked], axis=1)
            st.image(strip, clamp=True, width="stretch")
            scores = ", ".join(f"{s:.2f}" for s in last.scores)
            st.caption(f"{TITLES[name]} picked these after {last.labels} labels (scores {scores}).")


st.title("Active learning")
st.markdown(
    "Labels are expensive. Start from 20 labelled digits and let the model choose which of "
    "10,000 unlabelled ones to label next: **BALD** picks the inputs on which the sampled "
    "networks disagree most (mutual information), **max entropy** the ones with the most total "
    "uncertainty, and **random** is the baseline. The network is retrained from scratch after "
    "every round of 10 labels."
)

result = stored_curves()
if result is None:
    st.info(
        "This copy of the lab has no stored long run yet (it takes about 30 minutes to compute; "
        "the documentation's Active learning section says how). The live run below works."
    )
else:
    settings = result["settings"]
    show_figure(
        curves_figure(result["curves"], TITLES, "Test accuracy against labels (mean ± std)"),
        "active_curves",
    )
    show_table(
        [
            {
                "acquisition": TITLES[name],
                "labels to 85 %": reach(c["labels_to_85"]),
                "labels to 90 %": reach(c["labels_to_90"]),
                "labels to 95 %": reach(c["labels_to_95"]),
                f"accuracy at {c['labels'][-1]}": f"{c['mean'][-1]:.1%} ± {c['std'][-1]:.1%}",
                "paper, labels to 90 % (CNN)": str(PAPER_LABELS.get(name, {}).get(90, "–")),
            }
            for name, c in result["curves"].items()
        ],
        grid=False,
    )
    st.caption(
        f"MC dropout (p = {settings.get('dropout', 0.5)}) in {network(settings)}, retrained "
        f"for {settings['train_steps']} steps per round; {settings['n_samples']} passes to "
        f"score {settings['candidates']:,} random pool images per round; accuracy on "
        f"{settings['test_size']:,} test images; {settings['seeds']} seeds. Gal et al. (2017) "
        "used a larger CNN (two 4×4 convolutions of 32 channels, max-pooling, dense 128) "
        "trained longer: compare the gap between BALD and random more than the label counts."
    )

paper = stored_curves(PROTOCOL_FILE)
if paper is not None:
    st.subheader("The paper's experiment")
    st.markdown(
        "Gal et al. (2017) counted how many labels each acquisition function needs before the "
        "test error falls to 10 % and to 5 %. Here is the same experiment — their network (two "
        "4×4 convolutions of 32 channels, max-pooling, dense 128) from Keras' first weights, "
        "their training and their pool of 40,000 digits, 2,000 of them scored with 100 passes "
        "per round — run on this lab's computer. Each repetition stops once its test error is "
        "down to 5 %."
    )
    show_figure(
        curves_figure(paper["curves"], TITLES, "The paper's experiment: test accuracy (mean)"),
        "active_paper_curves",
    )
    show_table(paper_table(paper), grid=False)
    repetitions = paper["settings"]["seeds"]
    st.caption(
        f"{repetitions} of the paper's 3 repetitions so far."
        if repetitions < 3
        else "Mean over the paper's 3 repetitions; the curve stops where the first one did."
    )

summed = {line: stored_curves(name) for name, line in SUMMED_LOSSES.items()}
if any(summed.values()):
    st.markdown(
        "**The same experiment, trained another way.** Keras, which the authors used, averages "
        "the losses of a minibatch's digits; this lab's own training adds them up. With the "
        "Adam optimiser that changes two things: the last, smaller minibatch of every pass over "
        "the labels counts for less, and the weight decay on the dense layer becomes as many "
        "times weaker next to the data as a minibatch has digits (128 once there are enough "
        "labels). The experiment trained that way, from three kinds of first "
        "weights: Keras 0.3's (its version of Glorot's rule, biases at zero, as above), later "
        "Keras versions' (the convolutions' weights drawn narrower, the first layer's three "
        "times narrower) and PyTorch's own (the dense layers' weights less than half as wide, "
        "the biases at random too):"
    )
    for line, result in summed.items():
        if result is not None:
            st.markdown(line)
            show_table(paper_table(result), grid=False)

st.subheader("Watch it live")
try:
    ui.kept(load_active_data)
except DatasetUnavailable as exc:
    st.error("The MNIST training set is needed for a live run.")
    st.text(str(exc))
    st.stop()
live_run()
