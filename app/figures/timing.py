"""The Training-speed page's figures.

Epoch time against the Monte-Carlo samples S with the fitted lines a + b·S, and the fitted
slopes b of several runs side by side.

Results are the dicts of :func:`core.studies.training_speed.run_benchmark` (or saved ones).
"""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures import layout
from app.figures.format import day, device_words
from core.studies.training_speed import FLOOR_IMPL

LABELS = {"sequential": "sequential", "vmap": "vmap", "vmap_lrt": "vmap + LRT", "fused": "fused"}
COLORS = {"sequential": "#ef553b", "vmap": "#636efa", "vmap_lrt": "#00cc96", "fused": "#ab63fa"}
DASHES = ("dash", "dot", "dashdot", "longdash")
SYMBOLS = ("circle", "square", "diamond", "triangle-up")
FLOOR_LINE = {"color": "grey", "dash": "dot"}
TASKS = {"mnist": "", "regression": "1-D regression"}
PRIOR_WORDS = {"gaussian": "", "mixture": "scale-mixture prior"}


def run_label(result: dict) -> str:
    """Label a benchmark result by its device, date and what else sets it apart.

    Args:
        result: A saved or in-app result (:func:`core.studies.training_speed.run_benchmark`),
            or the published reference.

    Returns:
        E.g. ``"NVIDIA H100 · 26 Nov 2026"``, ``"NVIDIA H100 · scale-mixture prior ·
        26 Nov 2026"`` or ``"Published: NVIDIA A100"``.
    """
    device = device_words(result["device"], result.get("threads"))
    if result.get("reference"):
        return f"Published: {device}"
    prior = ((result.get("config") or {}).get("prior")) or "gaussian"
    parts = [device, TASKS.get(result.get("task", "mnist"), ""), PRIOR_WORDS.get(prior, prior)]
    return " · ".join([p for p in parts if p] + [day(result.get("date"))])


def run_labels(results: dict[str, dict]) -> dict[str, str]:
    """Label results with :func:`run_label`, numbering runs that would read the same.

    Args:
        results: Results by their key (a file name, never shown).

    Returns:
        Key → label, each label once, e.g. ``"CPU, 1 thread · 23 Nov 2026 (2)"``.
    """
    labels: dict[str, str] = {}
    for key, result in results.items():
        label = run_label(result)
        seen = sum(1 for other in labels.values() if other.split(" (")[0] == label)
        labels[key] = f"{label} ({seen + 1})" if seen else label
    return labels


def run_traces(result: dict, suffix: str = "", style: int = 0) -> list[go.Scatter]:
    """Build the traces of one result: measured epoch times and the fitted line a + b·S.

    Args:
        result: A benchmark result (:func:`core.studies.training_speed.run_benchmark`).
        suffix: Ends the run's legend names.
        style: Picks the run's marker and dash.

    Returns:
        Per implementation, the measured epoch times (markers, s) and the fitted line, if any.
    """
    traces = []
    for impl, fit in result["fits"].items():
        rows = sorted(
            (r for r in result["timings"] if r["impl"] == impl), key=lambda r: r["samples"]
        )
        xs = [r["samples"] for r in rows]
        name = LABELS.get(impl, impl) + suffix
        color = COLORS.get(impl)
        symbol = SYMBOLS[style % len(SYMBOLS)]
        traces.append(
            go.Scatter(
                x=xs,
                y=[r["epoch_seconds"] for r in rows],
                mode="markers",
                name=name,
                legendgroup=name,
                marker={"color": color, "size": 8, "symbol": symbol},
            )
        )
        if fit and xs:
            ends = (min(xs), max(xs))
            traces.append(
                go.Scatter(
                    x=ends,
                    y=[fit["intercept"] + fit["slope"] * s for s in ends],
                    mode="lines",
                    name=f"{name} fit",
                    legendgroup=name,
                    showlegend=False,
                    line={"color": color, "dash": DASHES[style % len(DASHES)]},
                )
            )
    return traces


def floor_line(y: float, text: str) -> tuple[dict, dict]:
    """Build a dotted grey line across the plot and its label at the right end.

    Args:
        y: Height of the line, in y-axis units.
        text: The label.

    Returns:
        A plotly shape and annotation.
    """
    shape = {"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": y, "y1": y}
    note = {"xref": "paper", "x": 1, "y": y, "xanchor": "right", "yanchor": "bottom"}
    return shape | {"line": FLOOR_LINE}, note | {"text": text, "showarrow": False}


def time_figure(runs: list[tuple[dict, str]]) -> go.Figure:
    """Plot epoch time (s) against S, with a dotted line at each run's plain-MLP epoch time.

    Args:
        runs: ``(result, legend suffix)`` per run, styled by position.

    Returns:
        The figure.
    """
    traces, shapes, notes = [], [], []
    for style, (result, suffix) in enumerate(runs):
        traces += run_traces(result, suffix, style)
        if result.get("mlp"):
            shape, note = floor_line(result["mlp"]["epoch_seconds"], "plain MLP" + suffix)
            shapes.append(shape)
            notes.append(note)
    xaxis = {"title": {"text": "Monte-Carlo samples S"}, "dtick": 1}
    yaxis = {"title": {"text": "training time per epoch (s)"}, "rangemode": "tozero"}
    return go.Figure(traces, layout("", 380, xaxis, yaxis, shapes=shapes, annotations=notes))


def slope_figure(runs: dict[str, dict]) -> go.Figure:
    """Plot grouped bars of the fitted slope b (s per epoch per extra sample) per implementation.

    One colour per run; reference runs are hatched.

    Args:
        runs: Legend label → benchmark result.

    Returns:
        The figure.
    """
    bars = []
    for label, result in runs.items():
        fits = {impl: f for impl, f in result["fits"].items() if f}
        bars.append(
            go.Bar(
                x=[LABELS.get(impl, impl) for impl in fits],
                y=[f["slope"] for f in fits.values()],
                name=label,
                marker_pattern_shape="/" if result.get("reference") else "",
            )
        )
    yaxis = {"title": {"text": "slope b (s per epoch per extra sample)"}}
    legend = {"orientation": "h", "y": -0.2}
    return go.Figure(bars, layout("", 340, {}, yaxis, barmode="group", legend=legend))


PEER_LABELS = {
    ("ours", FLOOR_IMPL): "plain MLP (ours)",
    ("ours", "sequential"): "ours: sequential",
    ("ours", "vmap_lrt"): "ours: vmap + LRT",
    ("ours", "fused"): "ours: fused",
    ("bayesian-torch", "bayesian-torch"): "bayesian-torch 0.5.0",
    ("blitz", "blitz"): "blitz 0.2.8",
}


def peer_figure(result: dict) -> go.Figure:
    """Plot grouped bars of epoch time per library and implementation, one group per S.

    Args:
        result: A saved ``python -m core bench --peers`` result (a stored ``peers-*.json``).

    Returns:
        The figure (the plain-MLP floor as a dotted line).
    """
    rows = [r for r in result["timings"] if r["samples"] is not None]
    bars = []
    for key, label in PEER_LABELS.items():
        mine = [r for r in rows if (r["library"], r["impl"]) == key]
        if mine:
            bars.append(
                go.Bar(
                    x=[f"S = {r['samples']}" for r in mine],
                    y=[r["epoch_seconds"] for r in mine],
                    name=label,
                    marker_pattern_shape="" if key[0] == "ours" else "/",
                )
            )
    floor = next((r for r in result["timings"] if r["impl"] == FLOOR_IMPL), None)
    shapes, notes = [], []
    if floor:
        shape, note = floor_line(floor["epoch_seconds"], "plain MLP")
        shapes, notes = [shape], [note]
    yaxis = {"title": {"text": "training time per epoch (s)"}}
    legend = {"orientation": "h", "y": -0.2}
    return go.Figure(
        bars,
        layout(
            "", 380, {}, yaxis, barmode="group", legend=legend, shapes=shapes, annotations=notes
        ),
    )


def peer_rows(result: dict, reference: dict | None = None) -> list[dict]:
    """Table rows: epoch seconds at each S and the cost of one extra sample, per library.

    The extra-sample cost is (t(S_max) − t(S_min)) / (S_max − S_min), comparable with the
    report seed's fitted slopes (its A100 reference, hatched on the slope figure).

    Args:
        result: A saved ``python -m core bench --peers`` result.
        reference: The report seed's reference result (slopes only), or None.

    Returns:
        One row per library and implementation (and per reference implementation).
    """
    rows = []
    for key, label in PEER_LABELS.items():
        mine = sorted(
            (r for r in result["timings"] if (r["library"], r["impl"]) == key and r["samples"]),
            key=lambda r: r["samples"],
        )
        if not mine:
            continue
        row = {"run": run_label(result), "what": label}
        row |= {f"S = {r['samples']} (s/epoch)": r["epoch_seconds"] for r in mine}
        if len(mine) > 1:
            first, last = mine[0], mine[-1]
            row["s/epoch per extra sample"] = (last["epoch_seconds"] - first["epoch_seconds"]) / (
                last["samples"] - first["samples"]
            )
        rows.append(row)
    for impl, fit in ((reference or {}).get("fits") or {}).items():
        if fit and fit.get("slope") is not None:
            rows.append(
                {
                    "run": run_label(reference),
                    "what": LABELS.get(impl, impl),
                    "s/epoch per extra sample": fit["slope"],
                }
            )
    return rows


def gradient_rows(result: dict) -> list[dict]:
    """Table rows of the multi-sample gradient check of a peers result.

    Args:
        result: A saved ``python -m core bench --peers`` result.

    Returns:
        Rows ``library, S, ρ-gradient error, μ-gradient error`` (relative L2 errors against the
        functional reference; ~1e-7 is float rounding).
    """
    return [
        {
            "library": c["library"],
            "S": c["samples"],
            "ρ-gradient rel. error": c["rho_rel_error"],
            "μ-gradient rel. error": c["mu_rel_error"],
        }
        for c in result.get("gradient_checks", [])
    ]
