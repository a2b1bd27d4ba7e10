"""The Class page's "Learn our handwriting": the teacher teaches models the class's drawings.

Settings live in the link (:mod:`app.share`); the run computes in a background thread
(:mod:`core.adapt.live`) that a fragment polls, with a progress bar and Cancel. Students see
what the section does but cannot start it: :func:`core.adapt.live.start` refuses them too.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import streamlit as st
import torch

from app import share, ui
from app.figures import show_figure, show_table
from app.figures.classroom import learning_curve_figure
from app.figures.pixels import enlarge
from core.adapt import ADAPTERS
from core.adapt.bench import load_study, study_table
from core.adapt.live import LiveAdaptation, Plan, Snapshot, State, start
from core.adapt.point import PULL
from core.adapt.study import ASK_COUNT, SPLITS, split_drawings
from core.classroom.store import Drawing, as_tensors
from core.methods import method

RUN_KEY = "learn_run"  # this session's LiveAdaptation
POLLING_KEY = "learn_polling"  # whether the last poll saw the run computing
PROBLEM_KEY = "learn_problem"  # why the last Start was refused
POLL_S = 1.0
STEPS = (25, 50, 100, 200, 400)
METRICS = {  # key → column title, formatted as a percentage or a number
    "accuracy": ("accuracy", "{:.1%}"),
    "nll": ("NLL (nats)", "{:.3f}"),
    "ece": ("ECE", "{:.3f}"),
    "dont_know": ('"I don\'t know"', "{:.0%}"),
    "mnist_error": ("MNIST error", "{:.2%}"),
}


def adaptable_models() -> list[str]:
    """The digit models that can learn (shipped and user-trained), in the sidebar's order."""
    return [
        i.spec.name
        for i in ui.all_checkpoints()
        if i.available
        and i.spec.dataset == "mnist"
        and ADAPTERS.get(i.spec.model.kind) is not None
        and ADAPTERS[i.spec.model.kind].can_adapt
    ]


def settings(code: str, records: list[Drawing]) -> Plan | None:
    """The section's controls; the plan they describe (None without a model)."""
    options = adaptable_models()
    wanted = [name for name in ("bbb_gaussian", "mlp") if name in options]
    models = share.multiselect(
        "Models to teach",
        options,
        default=wanted,
        format_func=ui.model_title,
        key="learn_models",
        help="Each learns from the same drawings; the model you started from is not changed.",
    )
    left, middle, right = st.columns(3)
    split = share.radio(
        "Drawings kept aside to test on",
        list(SPLITS),
        format_func=SPLITS.get,
        key="learn_split",
        container=left,
    )
    seed = share.number_input(
        "Seed",
        0,
        9999,
        0,
        key="learn_seed",
        container=left,
        help="Fixes the random split and the random numbers of learning.",
    )
    steps = share.select_slider(
        "Steps",
        STEPS,
        100,
        key="learn_steps",
        container=middle,
        help="How many times each network looks at all the drawings and changes a little.",
    )
    pull = share.select_slider(
        PULL.label,
        PULL.options,
        PULL.default,
        key="learn_pull",
        container=middle,
        help=PULL.help + " (plain MLP, MC dropout and ensemble only).",
    )
    curve = share.checkbox(
        "Also learn from 10, 20, 50 drawings (the curve)",
        True,
        key="learn_curve",
        container=right,
    )
    ask = share.checkbox(
        f"Which {ASK_COUNT} drawings would it ask about? (BALD)",
        True,
        key="learn_ask",
        container=right,
    )
    if not models:
        return None
    return Plan(
        tuple(models),
        *as_tensors(records)[:2],
        split=split,
        seed=int(seed),
        options={"pull": float(pull)},
        steps=int(steps),
        n_samples=ui.sample_count(),
        curve=curve,
        ask=ask,
        prefix=f"{code}-learned",
        owner=ui.visitor().id,
    )


def begin(plan: Plan) -> None:
    """Start callback: a new run (an old one is cancelled); a refusal is shown as one line."""
    old = st.session_state.get(RUN_KEY)
    if old is not None:
        old.cancel()
    try:
        st.session_state[RUN_KEY] = start(ui.visitor(), plan, torch.get_num_threads())
        st.session_state[POLLING_KEY] = True
        st.session_state.pop(PROBLEM_KEY, None)
    except (PermissionError, ValueError) as exc:
        st.session_state.pop(RUN_KEY, None)
        st.session_state[PROBLEM_KEY] = str(exc)


def cancel() -> None:
    """Cancel callback: the run stops within one step and saves nothing."""
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        run.cancel()


def results_table(snap: Snapshot) -> None:
    """Before and after, one row per model and moment."""
    rows = {}
    for result in snap.results:
        for when, scores in (("before", result.before), ("after", result.after)):
            values = scores.row()
            rows[f"{ui.model_title(result.checkpoint)}, {when}"] = {
                title: fmt.format(values[key]) for key, (title, fmt) in METRICS.items()
            }
    show_table(pd.DataFrame.from_dict(rows, orient="index"), grid=False)


def changed(snap: Snapshot, kept: np.ndarray) -> None:
    """The kept-aside drawings (``(K, 28, 28)`` in [0, 1]) whose answer changed, per model."""
    for result in snap.results:
        title = ui.model_title(result.checkpoint)
        if not result.changed:
            st.caption(f"{title}: no answer changed.")
            continue
        right = sum(1 for _, meant, _, new in result.changed if new == meant)
        st.markdown(
            f"**{title}** changed its answer on {len(result.changed)} drawing(s); "
            f"{right} of them are now right."
        )
        st.image(
            list(enlarge(kept[[i for i, *_ in result.changed]])),
            caption=[f"meant {m}: {b} → {a}" for _, m, b, a in result.changed],
        )


def asked(snap: Snapshot, learn: np.ndarray, labels: list[int]) -> None:
    """BALD's first picks beside random picks, and what each set taught.

    Args:
        snap: The finished run.
        learn: The drawings learned from, ``(L, 28, 28)`` in [0, 1].
        labels: Their digits.
    """
    for pick in snap.asked:
        title = "BALD (where its sampled networks disagree)" if pick.how == "bald" else "Random"
        taught = (
            "all one digit: nothing to learn"
            if pick.accuracy is None
            else f"kept-aside accuracy after learning from these alone: {pick.accuracy:.1%}"
        )
        st.markdown(f"**{title}**: {taught}")
        chosen = pick.positions.tolist()
        captions = [
            f"{labels[i]} · MI {score:.2f}" if pick.how == "bald" else f"{labels[i]}"
            for i, score in zip(chosen, pick.scores.tolist(), strict=True)
        ]
        st.image(list(enlarge(learn[chosen])), caption=captions)


def show_run(run: LiveAdaptation) -> bool:
    """The run's progress and, once it is done, everything it found; whether it computes."""
    snap = run.snapshot()
    active = snap.state is State.RUNNING
    if active:
        st.progress(snap.fraction, text=f"{snap.message} ({snap.seconds:.0f} s)")
        st.button("Cancel", on_click=cancel, key="learn_cancel", icon=":material/stop_circle:")
    elif snap.state is State.CANCELLED:
        st.info("Cancelled: no model was saved.")
    elif snap.state is State.FAILED:
        st.error("The networks could not learn from these drawings.")
        st.text(snap.error)
    if snap.results:
        st.markdown("**Before and after, on the drawings kept aside and on MNIST**")
        results_table(snap)
    plan = run.plan  # the drawings it learned from, whatever arrived since
    learn_at, kept_at = split_drawings(len(plan.labels), plan.split, plan.seed)
    images = plan.images[:, 0].numpy()
    if snap.state is State.DONE:
        st.success(
            f"Saved {', '.join(ui.model_title(n) for n in snap.saved)}: pick them in the "
            "sidebar to draw again and see the difference."
        )
        changed(snap, images[kept_at.numpy()])
        if snap.curves:
            titles = {r.checkpoint: ui.model_title(r.checkpoint) for r in snap.results}
            show_figure(learning_curve_figure(snap.curves, titles), "learn_curve_figure")
        asked(snap, images[learn_at.numpy()], plan.labels[learn_at].tolist())
    return active


def stored_study() -> None:
    """The lab's own study: every method learning canvas-style digits, as measured."""
    result = load_study()
    if result is None:
        return
    measured = result["settings"]
    st.markdown("**Measured: every method learning digits drawn as on a canvas**")
    show_table(pd.DataFrame.from_dict(study_table(result), orient="index"), grid=False)
    st.caption(
        f"MNIST test digits drawn thicker, tilted and off-centre stand in for a class's "
        f"handwriting. Each method learned from the first {', '.join(map(str, measured['sizes']))} "
        f"of them and was tested on {measured['kept_aside']} others kept aside and on "
        f"{measured['mnist_subset']} MNIST test digits; {measured['n_samples']} passes per "
        f"prediction; seconds on {result['machine']['threads']} CPU thread(s) of a shared "
        "2-core machine (median of "
        f"{measured['repeats']})."
    )


def learn_section(code: str, records: list[Drawing]) -> None:
    """The whole section (for the teacher: the controls and Start; for students, what it does)."""
    st.subheader("Learn our handwriting")
    st.caption(
        "Half of the class's drawings teach the networks, the other half test them: do they "
        "read this class's handwriting better afterwards, and do they still read MNIST? "
        "Bayes by Backprop learns with its MNIST posterior as the prior; a plain network is "
        "fine-tuned."
    )
    stored_study()
    unable = {k: a.reason for k, a in ADAPTERS.items() if not a.can_adapt}
    with st.expander("Models that cannot learn here"):
        for kind, reason in unable.items():
            st.markdown(f"- **{method(kind).title}**: {reason}")
    if not ui.visitor().teacher:
        st.info("Only the teacher can start this: sign in with the teacher key in the sidebar.")
        return
    plan = settings(code, records)
    problem = st.session_state.get(PROBLEM_KEY)
    if problem:
        st.error(problem)
    st.button(
        "Teach the networks",
        type="primary",
        key="learn_start",
        disabled=plan is None,
        on_click=begin,
        args=(plan,),
    )
    run = st.session_state.get(RUN_KEY)
    if run is not None:
        polling = run.snapshot().state is State.RUNNING
        st.fragment(run_every=POLL_S if polling else None)(poll)()


def poll() -> None:
    """The run's part of the page (a fragment: redrawn every second while it computes)."""
    run = st.session_state.get(RUN_KEY)
    if run is None:
        return
    was = st.session_state.get(POLLING_KEY, True)
    active = show_run(run)
    st.session_state[POLLING_KEY] = active
    if was and not active:
        st.rerun()  # the whole page: stop polling
