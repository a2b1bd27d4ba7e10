"""Timing page: training time per epoch vs Monte-Carlo samples S for the three ELBO
implementations, run in-app or loaded from saved results (``benchmarks/*.json``)."""

import plotly.graph_objects as go
import streamlit as st
import torch

from app.ui import show_figure
from core.bench import (
    BenchConfig,
    bench_dir,
    load_results,
    run_benchmark,
    save_result,
    slope_speedups,
)
from core.device import default_device, device_name
from core.objective import IMPLEMENTATIONS

RESULT_KEY = "timing_result"
TASKS = ("MNIST classification", "1-D regression (coming)")
LABELS = {"sequential": "sequential", "vmap": "vmap", "vmap_lrt": "vmap + LRT"}
COLORS = {"sequential": "#ef553b", "vmap": "#636efa", "vmap_lrt": "#00cc96"}
DASHES = ("dash", "dot", "dashdot", "longdash")
SYMBOLS = ("circle", "square", "diamond", "triangle-up")


def run_label(name: str, result: dict) -> str:
    """``device · date`` of a saved result, or the reference's label."""
    if result.get("reference"):
        return f"Reference: {result['device']} ({result['source']})"
    return f"{result['device']} · {(result.get('date') or '')[:10]} ({name})"


def add_run(fig: go.Figure, result: dict, suffix: str = "", style: int = 0) -> None:
    """Measured epoch times (markers) and fitted lines a + b·S per implementation; ``style``
    picks the marker and dash that tell runs apart."""
    for impl, fit in result["fits"].items():
        rows = sorted(
            (r for r in result["timings"] if r["impl"] == impl), key=lambda r: r["samples"]
        )
        xs = [r["samples"] for r in rows]
        name = LABELS.get(impl, impl) + suffix
        color = COLORS.get(impl)
        fig.add_trace(
            go.Scatter(
                x=xs,
                y=[r["epoch_seconds"] for r in rows],
                mode="markers",
                name=name,
                legendgroup=name,
                marker={"color": color, "size": 8, "symbol": SYMBOLS[style % len(SYMBOLS)]},
            )
        )
        if fit and xs:
            line = [fit["intercept"] + fit["slope"] * s for s in (min(xs), max(xs))]
            fig.add_trace(
                go.Scatter(
                    x=[min(xs), max(xs)],
                    y=line,
                    mode="lines",
                    name=f"{name} fit",
                    legendgroup=name,
                    showlegend=False,
                    line={"color": color, "dash": DASHES[style % len(DASHES)]},
                )
            )
    if result.get("mlp"):
        fig.add_hline(
            y=result["mlp"]["epoch_seconds"],
            line={"color": "grey", "dash": "dot"},
            annotation_text="plain MLP" + suffix,
        )


def time_figure(fig: go.Figure) -> go.Figure:
    fig.update_layout(
        height=380,
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"title": {"text": "Monte-Carlo samples S"}, "dtick": 1},
        yaxis={"title": {"text": "training time per epoch (s)"}, "rangemode": "tozero"},
    )
    return fig


def fit_rows(result: dict, run: str | None = None) -> list[dict]:
    """Table rows: slope, intercept, R² and slope speedup per implementation."""
    speed = slope_speedups(result["fits"])
    rows = []
    for impl, fit in result["fits"].items():
        fit = fit or {}
        row = {"run": run} if run else {}
        row |= {
            "implementation": LABELS.get(impl, impl),
            "slope (s/epoch per sample)": fit.get("slope"),
            "intercept (s/epoch)": fit.get("intercept"),
            "R²": fit.get("r2"),
            "slope speedup vs sequential": speed.get(impl),
        }
        rows.append(row)
    return rows


def slope_figure(runs: dict[str, dict]) -> go.Figure:
    """Grouped bars of the fitted slope per implementation, one colour per run; reference
    runs are hatched."""
    fig = go.Figure()
    for label, result in runs.items():
        fits = {impl: f for impl, f in result["fits"].items() if f}
        fig.add_trace(
            go.Bar(
                x=[LABELS.get(impl, impl) for impl in fits],
                y=[f["slope"] for f in fits.values()],
                name=label,
                marker_pattern_shape="/" if result.get("reference") else "",
            )
        )
    fig.update_layout(
        height=340,
        barmode="group",
        margin={"l": 10, "r": 10, "t": 30, "b": 10},
        yaxis={"title": {"text": "slope b (s per epoch per extra sample)"}},
        legend={"orientation": "h", "y": -0.2},
    )
    return fig


def show_result(result: dict) -> None:
    """Plot, fit table, speedups and goals of one benchmark result."""
    fig = go.Figure()
    add_run(fig, result)
    show_figure(time_figure(fig), key="timing_run_figure")
    st.dataframe(fit_rows(result), hide_index=True)
    speedups = result["speedups"]
    if speedups:
        st.markdown("**Speedup relative to sequential** (sequential epoch time ÷ this one)")
        table = {}
        for r in speedups:
            table.setdefault(r["samples"], {"S": r["samples"]})[LABELS[r["impl"]]] = r["speedup"]
        st.dataframe(list(table.values()), hide_index=True)
    if result.get("mlp"):
        st.caption(f"Plain MLP epoch (floor): {result['mlp']['epoch_seconds']:.1f} s.")
    for name, goal in result["goals"].items():
        text = {
            "vmap_lrt_S10_speedup": "vmap + LRT at S = 10 vs sequential at S = 10: ×{v:.2f} "
            "faster (goal ≥ ×2)",
            "lrt_S1_over_mlp": "BBB-LRT at S = 1 takes {v:.2f}× the plain MLP epoch (goal ≤ 3×)",
        }[name].format(v=goal["value"])
        (st.success if goal["met"] else st.warning)(text)


def run_section() -> None:
    st.subheader("Run a benchmark")
    task = st.radio("Task", TASKS, horizontal=True, key="timing_task")
    cols = st.columns(2)
    impls = cols[0].multiselect(
        "Implementations",
        IMPLEMENTATIONS,
        default=IMPLEMENTATIONS,
        format_func=LABELS.get,
        key="timing_impls",
    )
    samples = cols[1].multiselect(
        "Sample counts S", list(range(1, 11)), default=[1, 2, 4, 8], key="timing_samples"
    )
    cols = st.columns(4)
    steps = cols[0].number_input("Timed steps per point", 1, 500, 4, key="timing_steps")
    rounds = cols[1].number_input(
        "Rounds",
        1,
        20,
        2,
        help="Passes over all points; each point's median is used.",
        key="timing_rounds",
    )
    threads = cols[2].number_input(
        "CPU threads",
        1,
        64,
        torch.get_num_threads(),
        help="On a busy machine 1 thread gives steadier timings.",
        key="timing_threads",
    )
    with_mlp = cols[3].checkbox("Plain MLP floor", value=True, key="timing_mlp")
    st.caption(
        f"Device: {device_name(default_device())}. Each point times {steps} training steps "
        f"(after 2 untimed warm-up steps) in each of {rounds} rounds and extrapolates the median "
        "to an epoch of 469 steps (60,000 images, batch 128). Timings on a shared machine are "
        "noisy."
    )
    if task != TASKS[0]:
        st.info("The 1-D regression benchmark is coming; only MNIST classification runs now.")
    ready = task == TASKS[0] and impls and samples
    if st.button("Run benchmark", type="primary", disabled=not ready, key="timing_run"):
        config = BenchConfig(
            impls=tuple(impls),
            samples=tuple(samples),
            steps=int(steps),
            warmup=2,
            repeats=int(rounds),
            include_mlp=with_mlp,
        )
        bar = st.progress(0.0, text="starting")
        st.session_state[RESULT_KEY] = run_benchmark(
            config, threads=int(threads), progress=lambda f, m: bar.progress(f, text=m)
        )
        bar.empty()
    result = st.session_state.get(RESULT_KEY)
    if result:
        if result["data"] != "mnist":
            st.caption(f"Data: {result['data']}")
        show_result(result)
        if st.button("Save this run to benchmarks/", key="timing_save"):
            st.success(f"Saved {save_result(result).name}")


def saved_section() -> None:
    st.subheader("Saved results")
    results = load_results()
    ours = {name: r for name, r in results.items() if not r.get("reference")}
    references = {name: r for name, r in results.items() if r.get("reference")}
    if not ours:
        st.info(f"No saved runs in {bench_dir()} yet: run `python -m core bench --save`.")
    chosen = st.multiselect(
        "Saved runs to compare",
        list(ours),
        default=list(ours)[:1],
        format_func=lambda name: run_label(name, ours[name]),
        key="timing_saved",
    )
    if chosen:
        fig = go.Figure()
        for i, name in enumerate(chosen):
            suffix = f" · {ours[name]['device']} {(ours[name]['date'] or '')[:10]}"
            add_run(fig, ours[name], suffix if len(chosen) > 1 else "", i)
        show_figure(time_figure(fig), key="timing_saved_figure")
    runs = {run_label(n, ours[n]): ours[n] for n in chosen}
    runs |= {run_label(n, r): r for n, r in references.items()}
    if runs:
        show_figure(slope_figure(runs), key="timing_slope_figure")
        st.dataframe(
            [row for label, r in runs.items() for row in fit_rows(r, label)], hide_index=True
        )
    for ref in references.values():
        st.caption(f"Reference, not our measurement: {ref['note']}")


st.title("Training speed")
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
