"""The Train page's live training curves and the names of its runs.

Curves: objective, NLL, KL and errors against epochs. Names: what sets apart runs that would
otherwise read the same.
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout
from app.figures.format import number

LOSS_COLOR, NLL_COLOR, KL_COLOR = MODEL_COLORS[0], MODEL_COLORS[1], MODEL_COLORS[4]
TRAIN_COLOR, TEST_COLOR = MODEL_COLORS[3], MODEL_COLORS[2]
SETTING_WORDS = {
    "method": "method",
    "dataset": "task",
    "n_train": "training images",
    "epochs": "epochs",
    "lr": "learning rate",
    "batch_size": "batch size",
    "hidden": "hidden layers",
    "seed": "seed",
}
"""Words for settings that no method names in its controls (a field's name otherwise)."""


def request_settings(request: dict) -> dict[str, object]:
    """Flatten a training request into its settings by name.

    Args:
        request: A :class:`core.jobs.training.TrainRequest` as a dict (its ``to_dict``).

    Returns:
        ``method``, ``dataset``, ``n_train``, the network's fields, the method's parameters
        and the training's fields.
    """
    model = dict(request["model"])
    params = model.pop("params", {})
    flat = {"method": model.pop("kind"), "dataset": request["dataset"]}
    return flat | {"n_train": request["n_train"], **model, **params, **request["training"]}


def setting_text(name: str, value: object, labels: dict[str, str]) -> str:
    """Write one setting as ``"KL weight β = 0.1"``.

    Args:
        name: The setting's name.
        value: Its value.
        labels: Shown names of settings by name (a method's control labels).

    Returns:
        The text; numbers through :func:`app.figures.format.number`, ``all`` for None.
    """
    label = labels.get(name) or SETTING_WORDS.get(name) or name.replace("_", " ")
    if isinstance(value, bool):
        text = "on" if value else "off"
    elif isinstance(value, int | float):
        text = number(value)
    elif isinstance(value, list | tuple):
        text = "-".join(map(str, value)) or "none"
    else:
        text = "all" if value is None else str(value)
    return f"{label} = {text}"


def run_names(
    lines: list[str], runs: list[dict[str, object]], say: Callable[[str, object], str]
) -> list[str]:
    """Name runs: each by its line, and where several share a line, by what sets it apart.

    Args:
        lines: Each run's one-line description (e.g. method, task, epochs and images).
        runs: Each run's settings by name (:func:`request_settings`).
        say: Writes one setting, e.g. ``"KL weight β = 0.1"`` (:func:`setting_text`).

    Returns:
        Per run, its line, followed by ``" · "`` and the settings whose values differ among
        the runs of the same line.
    """
    names = []
    for line, run in zip(lines, runs, strict=True):
        group = [other for text, other in zip(lines, runs, strict=True) if text == line]
        keys = dict.fromkeys(key for other in group for key in other)
        differ = [k for k in keys if len({repr(other.get(k)) for other in group}) > 1]
        extra = ", ".join(say(k, run.get(k)) for k in differ)
        names.append(f"{line} · {extra}" if extra else line)
    return names


def _trace(x, y, name: str, color: str, *, steps: bool, **extra) -> go.Scatter:
    """A running-average line (thin, no markers) or an epoch curve (markers)."""
    return go.Scatter(
        x=list(x),
        y=list(y),
        name=name,
        mode="lines" if steps else "lines+markers",
        line={"color": color, "width": 1 if steps else 2, **({"dash": "dot"} if steps else {})},
        opacity=0.6 if steps else 1.0,
        showlegend=not steps,
        legendgroup=name,
        **extra,
    )


def loss_figure(epochs: dict, steps: dict, n_epochs: int) -> go.Figure:
    """The training objective (upper panel) and the NLL per image (lower panel) against the epoch.

    Each has its own axis: the objective of a Bayesian network holds the KL term too and may be
    hundreds of nats, where the NLL falls from about 2 to below 0.2 — on one axis the NLL's
    fall would be a flat line.

    Args:
        epochs: Per finished epoch: ``"epoch"``, ``"elbo_loss"``, ``"nll"`` and
            ``"test_nll"`` lists.
        steps: Running averages within epochs: ``"x"`` (fractional epoch), ``"elbo_loss"``,
            ``"nll"`` lists.
        n_epochs: The run's number of epochs (fixes the x range).

    Returns:
        The figure: the objective on ``y``, the train and test NLL on ``y2``.
    """
    lower = {"yaxis": "y2"}
    traces = [
        _trace(steps["x"], steps["elbo_loss"], "objective (−ELBO)", LOSS_COLOR, steps=True),
        _trace(steps["x"], steps["nll"], "train NLL", NLL_COLOR, steps=True, **lower),
        _trace(epochs["epoch"], epochs["elbo_loss"], "objective (−ELBO)", LOSS_COLOR, steps=False),
        _trace(epochs["epoch"], epochs["nll"], "train NLL", NLL_COLOR, steps=False, **lower),
        _trace(epochs["epoch"], epochs["test_nll"], "test NLL", TEST_COLOR, steps=False, **lower),
    ]
    xaxis = {
        "title": {"text": "epoch"},
        "range": [0, max(n_epochs, 1) + 0.05],
        "anchor": "y2",
    }
    panel = {"rangemode": "tozero", "automargin": True}
    objective = {"title": {"text": "objective"}, "domain": [0.56, 1], **panel}
    nll = {"title": {"text": "NLL"}, "domain": [0, 0.44], **panel}
    return go.Figure(
        traces,
        layout("Objective and NLL per training image (nats)", 380, xaxis, objective, yaxis2=nll),
    )


def kl_figure(epochs: dict, steps: dict, n_epochs: int) -> go.Figure:
    """The complexity cost KL(q ‖ p) (nats, before the KL weight) against the epoch.

    Args:
        epochs: Per finished epoch: ``"epoch"`` and ``"kl"`` lists.
        steps: Running averages: ``"x"`` and ``"kl"`` lists.
        n_epochs: The run's number of epochs.

    Returns:
        The figure.
    """
    traces = [
        _trace(steps["x"], steps["kl"], "KL", KL_COLOR, steps=True),
        _trace(epochs["epoch"], epochs["kl"], "KL", KL_COLOR, steps=False),
    ]
    return go.Figure(
        traces,
        layout(
            "Complexity cost KL(q ‖ prior)",
            300,
            {"title": {"text": "epoch"}, "range": [0, max(n_epochs, 1) + 0.05]},
            {"title": {"text": "nats"}, "rangemode": "tozero"},
        ),
    )


def error_figure(epochs: dict, steps: dict, n_epochs: int) -> go.Figure:
    """Train and test error (%) against the epoch.

    Args:
        epochs: Per finished epoch: ``"epoch"``, ``"train_error"`` and ``"test_error"`` lists
            (fractions).
        steps: Running averages: ``"x"`` and ``"train_error"`` lists (fractions).
        n_epochs: The run's number of epochs.

    Returns:
        The figure.
    """
    percent = lambda values: [100 * v for v in values]  # noqa: E731
    traces = [
        _trace(steps["x"], percent(steps["train_error"]), "train error", TRAIN_COLOR, steps=True),
        _trace(
            epochs["epoch"], percent(epochs["train_error"]), "train error", TRAIN_COLOR, steps=False
        ),
        _trace(
            epochs["epoch"], percent(epochs["test_error"]), "test error", TEST_COLOR, steps=False
        ),
    ]
    return go.Figure(
        traces,
        layout(
            "Error",
            300,
            {"title": {"text": "epoch"}, "range": [0, max(n_epochs, 1) + 0.05]},
            {"title": {"text": "%"}, "rangemode": "tozero"},
        ),
    )
