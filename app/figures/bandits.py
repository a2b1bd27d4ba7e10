"""The Bandits page's figures.

Cumulative-regret curves (mean over seeds with the range as a band), the wheel's disk with
recent contexts coloured by the chosen arm, the agent's uncertainty over the disk, and the
mushroom agent's recent decisions with the spread of its sampled advantage of eating.

Inputs are the JSON dicts of :meth:`core.bandits.runner.BanditRun.result` and its snapshot.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout
from core.bandits.protocols import paper_findings
from core.bandits.runner import RunConfig
from core.catalogue import BANDIT_COLOR_ORDER

ARM_COLORS = ("#7f7f7f", "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e")


def agent_color(name: str) -> str:
    """The colour of an agent, the same in every figure.

    Args:
        name: Agent name (``bbb``, ``greedy`` ...).

    Returns:
        A hex colour.
    """
    order = BANDIT_COLOR_ORDER
    index = order.index(name) if name in order else len(order)
    return MODEL_COLORS[index % len(MODEL_COLORS)]


def _rgba(color: str, alpha: float) -> str:
    r, g, b = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def regret_figure(result: dict, title: str = "", height: int = 420) -> go.Figure:
    """Cumulative expected regret against steps: mean over seeds, band from min to max.

    Args:
        result: A run's result (``record_steps``, ``agents`` with ``curves`` per seed).
        title: The figure's title.
        height: Height in pixels.

    Returns:
        The figure; a dotted line shows the uniformly random agent's expected regret. The
        y-axis ends above the learning agents, so uniform random may run beyond the top.
    """
    steps = result["record_steps"]
    learners = [
        max(max(c) for c in a["curves"])
        for n, a in result["agents"].items()
        if n != "random" and a["curves"] and a["curves"][0]
    ]
    top = 1.1 * max(learners) if learners and max(learners) > 0 else None
    traces = []
    for name, agent in result["agents"].items():
        if not agent["curves"] or not steps:
            continue
        mean = [sum(c) / len(c) for c in zip(*agent["curves"], strict=True)]
        label = agent["title"]
        if top is not None and max(mean) > top:
            label += " (beyond the top)"
        traces += _mean_and_range(steps, agent["curves"], name, label, "%{y:,.0f}")
    per_step = result["env"]["random_regret_per_step"]
    last = steps[-1] if steps else 1
    traces.append(
        go.Scatter(
            x=[0, last],
            y=[0, per_step * last],
            mode="lines",
            name="random (expected)",
            line={"color": "grey", "dash": "dot", "width": 1},
        )
    )
    yaxis = {"title": {"text": "cumulative expected regret"}} | (
        {"range": [0, top]} if top is not None else {"rangemode": "tozero"}
    )
    return _over_steps(traces, title, height, yaxis)


def _over_steps(traces: list[go.Scatter], title: str, height: int, yaxis: dict) -> go.Figure:
    """A figure of curves against the bandit's steps, the legend beside the plot.

    Beside it, not below it: on a projector the plot fills the screen's height.
    """
    return go.Figure(
        traces,
        layout(
            title,
            height,
            {"title": {"text": "step"}},
            yaxis,
            legend={"orientation": "v", "x": 1.01, "xanchor": "left", "y": 1, "yanchor": "top"},
        ),
    )


def _mean_and_range(
    steps: list[int], curves: list[list[float]], name: str, label: str, value: str
) -> list[go.Scatter]:
    """An agent's mean curve over seeds, over a band from the lowest to the highest seed.

    Args:
        steps: The x values.
        curves: One curve per seed, each as long as ``steps``.
        name: The agent (its colour and legend group).
        label: The legend entry.
        value: The hover's format of a y value, e.g. ``"%{y:,.0f}"``.

    Returns:
        The band (for two seeds or more) and the line.
    """
    color = agent_color(name)
    columns = list(zip(*curves, strict=True))
    traces = []
    if len(curves) > 1:
        traces.append(
            go.Scatter(
                x=steps + steps[::-1],
                y=[max(c) for c in columns] + [min(c) for c in columns][::-1],
                fill="toself",
                fillcolor=_rgba(color, 0.15),
                line={"width": 0},
                hoverinfo="skip",
                showlegend=False,
                legendgroup=name,
            )
        )
    traces.append(
        go.Scatter(
            x=steps,
            y=[sum(c) / len(c) for c in columns],
            mode="lines",
            name=label,
            legendgroup=name,
            line={"color": color, "width": 2},
            hovertemplate=value + " at step %{x:,}<extra>" + label + "</extra>",
        )
    )
    return traces


def sigma_figure(result: dict, title: str = "", height: int = 320) -> go.Figure | None:
    """The mean posterior standard deviation of the weights over the run, per agent that has one.

    Args:
        result: A run's result (agents with ``sigma`` at ``sigma_steps``).
        title: The figure's title.
        height: Height in pixels.

    Returns:
        Mean over seeds with the range as a band, or None when no agent has a weight posterior.
    """
    steps = result.get("sigma_steps") or []
    traces = [
        trace
        for name, agent in result["agents"].items()
        if agent.get("sigma") and steps
        for trace in _mean_and_range(steps, agent["sigma"], name, agent["title"], "σ %{y:.3f}")
    ]
    if not traces:
        return None
    yaxis = {"title": {"text": "mean posterior σ of the weights"}, "rangemode": "tozero"}
    return _over_steps(traces, title, height, yaxis)


def final_rows(result: dict) -> list[dict]:
    """Table rows: each agent's final cumulative regret, mean ± std over seeds, and seconds.

    Args:
        result: A run's result.

    Returns:
        One dict per agent, best (lowest mean) first; for a run of a paper's protocol (or an
        ablation of it) also what the paper found of each agent.
    """
    paper = paper_findings(RunConfig.from_dict(result["settings"]))
    rows = []
    for name, agent in result["agents"].items():
        row = {
            "agent": agent["title"],
            "cumulative regret (mean)": round(agent["mean"]),
            "std over seeds": round(agent["std"]),
            "mean regret per step": round(agent["per_step"], 3),
            "seconds": round(agent["seconds"], 1),
        }
        if paper is not None:
            row[paper[0]] = paper[1].get(name, "")
        rows.append(row)
    return sorted(rows, key=lambda r: r["cumulative regret (mean)"])


def _disk_shapes(delta: float | None) -> list[dict]:
    shapes = [
        {"type": "circle", "x0": -1, "y0": -1, "x1": 1, "y1": 1, "line": {"color": "black"}},
        {"type": "line", "x0": 0, "y0": -1, "x1": 0, "y1": 1, "line": {"color": "#bbb"}},
        {"type": "line", "x0": -1, "y0": 0, "x1": 1, "y1": 0, "line": {"color": "#bbb"}},
    ]
    if delta:
        shapes.append(
            {
                "type": "circle",
                "x0": -delta,
                "y0": -delta,
                "x1": delta,
                "y1": delta,
                "line": {"color": "black", "dash": "dash"},
            }
        )
    return shapes


def _square_axes() -> tuple[dict, dict]:
    x = {"range": [-1.05, 1.05], "zeroline": False, "title": {"text": "x₁"}}
    y = {
        "range": [-1.05, 1.05],
        "zeroline": False,
        "scaleanchor": "x",
        "title": {"text": "x₂"},
    }
    return x, y


def wheel_decisions_figure(
    snapshot: dict, arm_names: list[str], delta: float | None, title: str = ""
) -> go.Figure:
    """The disk with the agent's recent contexts, coloured by the arm it chose.

    Args:
        snapshot: A wheel snapshot (``points``, ``arms``).
        arm_names: Name of each arm.
        delta: The inner radius δ, drawn dashed.
        title: The figure's title.

    Returns:
        The figure.
    """
    traces = []
    for arm, name in enumerate(arm_names):
        pts = [p for p, a in zip(snapshot["points"], snapshot["arms"], strict=True) if a == arm]
        traces.append(
            go.Scatter(
                x=[p[0] for p in pts],
                y=[p[1] for p in pts],
                mode="markers",
                name=name,
                marker={"color": ARM_COLORS[arm % len(ARM_COLORS)], "size": 6},
            )
        )
    xaxis, yaxis = _square_axes()
    return go.Figure(
        traces,
        layout(title, 430, xaxis, yaxis, shapes=_disk_shapes(delta), legend={"y": -0.2}),
    )


def wheel_uncertainty_figure(
    snapshot: dict, delta: float | None, key: str = "std", title: str = ""
) -> go.Figure:
    """A map over the disk of the agent's uncertainty.

    Args:
        snapshot: A wheel snapshot with ``grid`` (``x``, ``y``, and the map ``key``).
        delta: The inner radius δ, drawn dashed.
        key: ``"std"`` (posterior std of the quadrant arm's reward) or ``"explore"`` (the
            fraction of posterior draws whose best arm differs from the mean's).
        title: The figure's title.

    Returns:
        The figure.
    """
    grid = snapshot["grid"]
    label = "std of the quadrant arm's reward" if key == "std" else "P(draw explores)"
    heat = go.Heatmap(
        x=grid["x"],
        y=grid["y"],
        z=grid[key],
        colorscale="Viridis",
        colorbar={"title": {"text": label, "side": "right"}},
        hovertemplate="x₁ %{x:.2f}, x₂ %{y:.2f}: %{z:.3f}<extra></extra>",
    )
    xaxis, yaxis = _square_axes()
    return go.Figure([heat], layout(title, 430, xaxis, yaxis, shapes=_disk_shapes(delta)))


def mushroom_decisions_figure(snapshot: dict, title: str = "") -> go.Figure:
    """The agent's recent mushrooms: its sampled advantage of eating now, mean ± std.

    Args:
        snapshot: A mushroom snapshot with ``decisions``.
        title: The figure's title.

    Returns:
        The figure: one point per recent mushroom (green edible, red poisonous; a filled
        marker where the agent ate it), error bars of one standard deviation over posterior
        draws, and the zero line above which eating is preferred.
    """
    decisions = snapshot["decisions"]
    traces = []
    for edible, color, label in ((True, "#2ca02c", "edible"), (False, "#d62728", "poisonous")):
        rows = [d for d in decisions if d["edible"] == edible]
        traces.append(
            go.Scatter(
                x=[d["step"] for d in rows],
                y=[d["eat_advantage_mean"] for d in rows],
                error_y={
                    "type": "data",
                    "array": [d["eat_advantage_std"] for d in rows],
                    "color": color,
                },
                mode="markers",
                name=label,
                marker={
                    "color": [color if d["action"] == "eat" else "white" for d in rows],
                    "line": {"color": color, "width": 2},
                    "size": 11,
                    "symbol": "circle",
                },
                customdata=[[d["action"], d["eat_fraction"], d["regret"]] for d in rows],
                hovertemplate=(
                    "step %{x}: %{customdata[0]} (regret %{customdata[2]:.0f}); "
                    "eat − pass %{y:.1f}; %{customdata[1]:.0%} of draws eat<extra></extra>"
                ),
            )
        )
    steps = [d["step"] for d in decisions] or [0, 1]
    zero = {
        "type": "line",
        "x0": min(steps) - 0.5,
        "x1": max(steps) + 0.5,
        "y0": 0,
        "y1": 0,
        "line": {"color": "grey", "dash": "dot"},
    }
    return go.Figure(
        traces,
        layout(
            title,
            380,
            {"title": {"text": "step (filled: eaten, hollow: passed)"}},
            {"title": {"text": "sampled reward of eat − pass"}},
            shapes=[zero],
        ),
    )


def format_seconds(seconds: float) -> str:
    """Seconds as ``"42 s"`` or ``"3 min 5 s"``.

    Args:
        seconds: A duration.

    Returns:
        The text.
    """
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = math.floor(seconds / 60)
    return f"{minutes} min {seconds - 60 * minutes:.0f} s"
