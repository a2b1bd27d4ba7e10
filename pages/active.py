"""Active learning: let the Bayesian network choose which digits to label (Gal et al. 2017)."""

import numpy as np
import streamlit as st
import torch

from app import ui
from app.figures import show_figure, show_table
from app.figures.active import curves_figure
from core.active.acquisition import TITLES
from core.active.live import LIVE_SLOTS, LiveState, Snapshot, comparison
from core.active.loop import MODEL_KINDS, ActiveLearner, live_config, load_active_data
from core.active.protocols import PAPER_LABELS, paper_comparison
from core.active.study import stored_result
from core.data import DatasetUnavailable
from core.methods import method

LIVE_KEY = "active_live"  # this session's LiveComparison
POLLING_KEY = "active_polling"  # the page drew the live run polled (it was computing)
KIND_KEY = "active_kind"
LIVE_NAMES = ("bald", "random")
POLL_SECONDS = 1.0
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
    """A new live run with the chosen model: BALD and random, advanced together. It starts
    computing once the page has been redrawn for it (a page drawn beside the computation would
    take longer, and fade)."""
    old = st.session_state.get(LIVE_KEY)
    if old is not None:
        old.cancel()
    data = ui.kept(load_active_data)
    kind = st.session_state.get(KIND_KEY, "dropout")
    st.session_state[LIVE_KEY] = comparison(
        lambda name: ActiveLearner(live_config(kind, acquisition=name, **LIVE), data),
        LIVE_NAMES,
        threads=torch.get_num_threads(),
    )


def stop() -> None:
    """Cancel the live run: it stops within a learner's step; the finished rounds stay."""
    run = st.session_state.get(LIVE_KEY)
    if run is not None:
        run.cancel()


def status_line(snap: Snapshot) -> str:
    """One line on where the live run is, e.g. "Round 3 of 14: both at 40 labels (8 s)"."""
    labels = next(iter(snap.rounds.values()))[-1].labels if snap.done_rounds else None
    where = f"both at {labels} labels" if labels else "training the first round"
    took = f"{snap.seconds:.0f} s"
    if snap.state is LiveState.STARTING:
        return "Starting…"
    if snap.state is LiveState.WAITING:
        return f"Waiting: {LIVE_SLOTS} live runs are computing on this server right now."
    if snap.state is LiveState.RUNNING:
        return f"Round {snap.done_rounds + 1} of {snap.total}: {where} so far ({took})."
    if snap.state is LiveState.DONE:
        return f"Finished: {snap.total} rounds, {where}, in {took}."
    if snap.state is LiveState.CANCELLED:
        return f"Stopped after {snap.done_rounds} of {snap.total} rounds, {where} ({took})."
    return "The run failed."


def show_strips(snap: Snapshot) -> None:
    """Each learner's last picks (the last round that picked), all at the same label count, in
    one element: the strips and their captions change together."""
    x_train = ui.kept(load_active_data)[0]
    strips, captions = [], []
    for name, rounds in snap.rounds.items():
        picking = [r for r in rounds if r.picked]
        if not picking:
            continue
        last = picking[-1]
        strips.append(np.concatenate([x_train[i, 0].numpy() for i in last.picked], axis=1))
        scores = ", ".join(f"{s:.2f}" for s in last.scores)
        captions.append(
            f"{TITLES[name]} picked these after {last.labels} labels (scores {scores})."
        )
    if strips:
        st.image(strips, caption=captions, clamp=True, width="stretch")


def live_run() -> None:
    """The live run: start, stop or run again; redrawn from what the run has published."""
    run = st.session_state.get(LIVE_KEY)
    snap = run.snapshot() if run is not None else None
    active = snap is not None and snap.state.active
    if active != st.session_state.get(POLLING_KEY, False):
        st.rerun()  # the whole page: it starts (or stops) polling this fragment
    with st.container(key="active_live_area"):
        st.selectbox(
            "Model",
            MODEL_KINDS,
            index=MODEL_KINDS.index("dropout"),
            format_func=lambda kind: method(kind).title,
            key=KIND_KEY,
            disabled=active,
            help="The Bayesian network that is retrained every round and whose sampled "
            "networks score the unlabelled digits. A new run starts with it.",
        )
        if active:
            st.button("Stop", on_click=stop, key="active_stop", icon=":material/stop_circle:")
        else:
            st.button(
                "Start a new run" if snap is None else "Run again",
                on_click=start,
                key="active_start",
                type="primary",
            )
        if snap is None:
            config = live_config(st.session_state[KIND_KEY], **LIVE)
            st.caption(
                f"Trains a fresh {method(config.kind).title} network, "
                f"{network(config.to_dict())}, for {config.train_steps} steps after each round "
                f"of {config.acquire} labels, from {config.initial} to {config.budget} labels, "
                "once choosing by BALD and once at random, side by side (a few seconds per "
                "round on a laptop CPU)."
            )
            return
        st.progress(snap.done_rounds / snap.total, text=status_line(snap))
        if snap.state is LiveState.FAILED:
            st.error("The live run stopped with an error; press Run again.")
        curves = {
            name: {"labels": [r.labels for r in rounds], "mean": [r.accuracy for r in rounds]}
            for name, rounds in snap.rounds.items()
            if rounds
        }
        if curves:
            show_figure(curves_figure(curves, TITLES, "This run"), "active_live_curves")
        show_strips(snap)
    if active:
        run.start()


st.title("Active learning")
st.markdown(
    "Labels are expensive. Start from 20 labelled digits and let the model choose which of "
    "10,000 unlabelled ones to label next: **BALD** picks the inputs on which the sampled "
    "networks disagree most (mutual information), **max entropy** the ones with the most total "
    "uncertainty, and **random** is the baseline. The network is retrained from scratch after "
    "every round of 10 labels."
)

result = stored_result()
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

paper = stored_result(PROTOCOL_FILE)
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

summed = {line: stored_result(name) for name, line in SUMMED_LOSSES.items()}
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
running = st.session_state.get(LIVE_KEY)
st.session_state[POLLING_KEY] = running is not None and running.snapshot().state.active
st.fragment(run_every=POLL_SECONDS if st.session_state[POLLING_KEY] else None)(live_run)()
