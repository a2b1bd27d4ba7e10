"""Timing page: training time per epoch vs Monte-Carlo samples S for the three ELBO
implementations, run in-app or loaded from saved results
(:data:`core.studies.training_speed_runs.RUNS`, listed by device and date: a file name is only a
key). Saving a run among the lab's results is the teacher's
(:func:`core.studies.training_speed_runs.save_shared_result` refuses a student)."""

import streamlit as st
import torch

from app import share, ui
from app.figures import show_figure, show_table
from app.figures.format import day, device_words, number, table_text
from app.figures.timing import (
    LABELS,
    gradient_rows,
    peer_figure,
    peer_rows,
    run_labels,
    slope_figure,
    time_figure,
)
from core.engine import native
from core.engine.device import default_device, device_name
from core.engine.objective import IMPLEMENTATIONS
from core.studies.peers import load_peer_results
from core.studies.training_speed import (
    BBB_IMPLEMENTATIONS,
    PRIORS,
    BenchConfig,
    regression_config,
    run_benchmark,
)
from core.studies.training_speed_goals import slope_speedups
from core.studies.training_speed_runs import (
    DEVICE_COLUMNS,
    REFERENCE_FILE,
    device_table,
    gpu_trained_models,
    load_results,
    save_shared_result,
)

RESULT_KEY = "timing_result"
SAVED_KEY = "timing_saved_notice"  # (kind, line) left by the Save callback
TASK_LABELS = {"mnist": "MNIST classification", "regression": "1-D regression"}
TASK_EPOCHS = {
    "mnist": "469 steps of 128 images (784-400-400-10)",
    "regression": "one step of 1,000 points (1-100-1 on Blundell's curve)",
}


def this_device() -> str:
    """This computer's device, e.g. ``"NVIDIA H100"`` or ``"this computer's CPU, 2 threads"``."""
    device = default_device()
    name = device_words(device_name(device), torch.get_num_threads())
    return name if device.type == "cuda" else f"this computer's {name}"


def fit_rows(result: dict, run: str | None = None) -> list[dict]:
    """Table rows: slope, intercept, R² and slope speedup per implementation."""
    speed = slope_speedups(result["fits"])
    rows = []
    for impl, fit in result["fits"].items():
        fit = fit or {}
        row = {"run": run} if run else {}
        row |= {
            "implementation": LABELS.get(impl, impl),
            "s per epoch per extra sample": number(fit.get("slope")),
            "fixed s per epoch (fitted)": number(fit.get("intercept")),
            "straight-line fit R²": number(fit.get("r2")),
            "× faster per sample than the loop": number(speed.get(impl)),
        }
        rows.append(row)
    return rows


def show_result(result: dict) -> None:
    """Plot, fit table, speedups and goals of one benchmark result."""
    show_figure(time_figure([(result, "")]), key="timing_run_figure")
    show_table(fit_rows(result))
    speedups = result["speedups"]
    if speedups:
        st.markdown("**Speedup relative to sequential** (sequential epoch time ÷ this one)")
        table = {}
        for r in speedups:
            table.setdefault(r["samples"], {"S": r["samples"]})[LABELS[r["impl"]]] = r["speedup"]
        show_table(table_text(list(table.values())))
    if result.get("mlp"):
        st.caption(f"Plain MLP epoch (floor): {result['mlp']['epoch_seconds']:.1f} s.")
    for name, goal in result["goals"].items():
        text = {
            "vmap_lrt_S10_speedup": "With S = 10 samples, vmap + local reparameterisation runs "
            "an epoch {v:.1f}× faster than the Python loop over samples.",
            "lrt_S1_over_mlp": "With one sample, a Bayes-by-Backprop epoch (local "
            "reparameterisation) costs {v:.1f}× a plain network's.",
        }.get(name)
        if text:
            st.info(text.format(v=goal["value"]))


def run_section() -> None:
    st.subheader("Run a benchmark")
    task = share.radio(
        "Task",
        tuple(TASK_LABELS),
        format_func=TASK_LABELS.get,
        horizontal=True,
        key="timing_task",
        help="Classification of MNIST digits, or the 1-D regression curve.",
    )
    cols = st.columns(2)
    offered = BBB_IMPLEMENTATIONS if task == "mnist" else IMPLEMENTATIONS  # fused: classes only
    impls = share.multiselect(
        "Implementations",
        offered,
        default=IMPLEMENTATIONS,
        format_func=LABELS.get,
        key="timing_impls",
        container=cols[0],
    )
    sample_counts = share.multiselect(
        "Sample counts S",
        list(range(1, 11)),
        default=[1, 2, 4, 8],
        key="timing_samples",
        container=cols[1],
    )
    cols = st.columns(3)
    steps = share.number_input(
        "Timed steps per point", 1, 500, 4, key="timing_steps", container=cols[0]
    )
    rounds = share.number_input(
        "Rounds",
        1,
        20,
        2,
        help="Passes over all points; each point's median is used.",
        key="timing_rounds",
        container=cols[1],
    )
    with_mlp = share.checkbox("Plain MLP floor", value=True, key="timing_mlp", container=cols[2])
    threads = torch.get_num_threads()
    st.caption(
        f"Device: {this_device()}; compiled CPU kernels for `fused`: "
        f"{native.status()}. The run uses the server's "
        f"{threads} CPU thread{'s' if threads != 1 else ''} as set at its start: the page never "
        f"changes them (they are shared by every session). Each point times {steps} training steps "
        f"(after 2 untimed warm-up steps) in each of {rounds} rounds and extrapolates the median "
        f"to an epoch: {TASK_EPOCHS[task]}. Timings on a shared machine are noisy."
    )
    ready = impls and sample_counts
    if st.button("Run benchmark", type="primary", disabled=not ready, key="timing_run"):
        settings = {
            "impls": tuple(impls),
            "n_samples": tuple(sample_counts),
            "steps": int(steps),
            "warmup": 2,
            "repeats": int(rounds),
            "include_mlp": with_mlp,
        }
        config = regression_config(**settings) if task == "regression" else BenchConfig(**settings)
        bar = st.progress(0.0, text="starting")
        st.session_state[RESULT_KEY] = run_benchmark(
            config, progress=lambda f, m: bar.progress(f, text=m)
        )
        bar.empty()
    result = st.session_state.get(RESULT_KEY)
    if result:
        if result["data"].startswith("random"):
            st.caption("MNIST was not available here: timed on random images of its size.")
        show_result(result)
        if ui.visitor().teacher:
            st.button("Save this run among the lab's results", key="timing_save", on_click=save)
    saved = st.session_state.pop(SAVED_KEY, None)
    if saved is not None:
        kind, line = saved
        (st.success if kind == "success" else st.error)(line)


def save() -> None:
    """Save callback: the run among the lab's results, for the teacher only (a new file, never
    over a saved run), listed under Saved results at once."""
    try:
        save_shared_result(ui.visitor(), st.session_state[RESULT_KEY])
        saved = ("success", "Saved among the lab's results: listed under Saved results below.")
    except (PermissionError, OSError) as exc:
        saved = ("error", f"The run was not saved: {exc}")
    st.session_state[SAVED_KEY] = saved


def saved_section() -> None:
    st.subheader("Saved results")
    results = load_results()
    labels = run_labels(results)
    ours = {name: r for name, r in results.items() if not r.get("reference")}
    references = {name: r for name, r in results.items() if r.get("reference")}
    if not ours:
        st.info("This copy of the lab has no saved timing runs yet: run one above.")
    chosen = share.multiselect(
        "Saved runs to compare",
        list(ours),
        default=list(ours)[:1],
        format_func=labels.get,
        key="timing_saved",
    )
    if chosen:
        shown = [(ours[n], f" · {labels[n]}" if len(chosen) > 1 else "") for n in chosen]
        show_figure(time_figure(shown), key="timing_saved_figure")
    runs = {labels[n]: ours[n] for n in chosen}
    runs |= {labels[n]: r for n, r in references.items()}
    if runs:
        show_figure(slope_figure(runs), key="timing_slope_figure")
        show_table([row for label, r in runs.items() for row in fit_rows(r, label)])
    for name, ref in references.items():
        st.caption(
            f"“{labels[name]}”: slopes of Bayes by Backprop published for an "
            f"{device_words(ref['device'])}, quoted for scale, not measured by this lab. Only "
            "the slopes were published: the other columns show –."
        )


def devices_section() -> None:
    st.subheader("On a GPU")
    prior = share.radio(
        "Prior",
        tuple(PRIORS),
        format_func={"gaussian": "Gaussian N(0, 1)", "mixture": "scale mixture"}.get,
        horizontal=True,
        key="timing_device_prior",
    )
    rows = device_table(load_results(), prior)
    if not rows:
        st.info("No saved MNIST runs for this prior yet.")
        return
    show_table(
        [
            row
            | {"device": device_words(row["device"])}
            | {t: "–" if row[t] is None else f"{row[t]:.2f} s" for t in DEVICE_COLUMNS}
            for row in rows
        ]
    )
    st.caption(
        "Seconds per MNIST epoch (469 steps of 128 images). On a GPU one training step is "
        "hundreds of tiny computations; started one by one from Python they leave the GPU "
        "waiting most of the time (the eager rows). The lab records the whole step once as a "
        "CUDA graph and replays it with one launch per step: the same numbers, five to ten "
        "times faster. On the CPU the step is eager."
    )
    trained = gpu_trained_models()
    if trained:
        st.markdown(
            "**Shipped models trained on a GPU.** At a fraction of a second per epoch, the "
            "long schedules of the papers fit in minutes (Blundell et al. 2015 trained for 600 "
            "epochs):"
        )
        show_table(table_text([row | {"device": device_words(row["device"])} for row in trained]))


def peers_section() -> None:
    st.subheader("Peers: bayesian-torch and blitz on the same network")
    result = load_peer_results()
    if result is None:
        st.info("This copy of the lab has no timing of the peer libraries.")
        return
    show_figure(peer_figure(result), key="timing_peer_figure")
    show_table(table_text(peer_rows(result, load_results().get(REFERENCE_FILE))))
    st.caption(
        f"One run on {device_words(result['device'], result['threads'])}, {day(result['date'])}; "
        "the published A100 slopes are another machine's, for scale only."
    )
    st.markdown(
        "**Are the multi-sample gradients right?** Relative error of each library's σ "
        "(ρ) and μ gradients against a functional reference that uses the noise each sample "
        "really drew: both peers keep the weight noise in a layer buffer that the next sample "
        "overwrites before `backward`, so with S > 1 their σ-gradients use the wrong noise."
    )
    show_table(table_text(gradient_rows(result)))


st.title("Training speed")
ui.teacher_sign_in()
st.markdown(
    "How much does each extra Monte-Carlo sample S cost when training Bayes by Backprop? "
    "Three implementations of the same S-sample ELBO are compared on a 784-400-400-10 "
    "network: a Python loop over samples (**sequential**), `torch.func.vmap` over weight "
    "samples (**vmap**), and vmap with the local reparameterisation trick (**vmap + LRT**). "
    "A straight line time = a + b·S is fitted per implementation: the slope b is the cost of "
    "one extra sample per epoch."
)
run_section()
saved_section()
devices_section()
peers_section()
