"""Live training curves of the Train page: objective, NLL, KL and errors against epochs."""

from __future__ import annotations

import plotly.graph_objects as go

from app.figures import MODEL_COLORS, layout

LOSS_COLOR, NLL_COLOR, KL_COLOR = MODEL_COLORS[0], MODEL_COLORS[1], MODEL_COLORS[4]
TRAIN_COLOR, TEST_COLOR = MODEL_COLORS[3], MODEL_COLORS[2]


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
    """The training objective and NLL per image (nats) against the epoch.

    Args:
        epochs: Per finished epoch: ``"epoch"``, ``"elbo_loss"``, ``"nll"`` and
            ``"test_nll"`` lists.
        steps: Running averages within epochs: ``"x"`` (fractional epoch), ``"elbo_loss"``,
            ``"nll"`` lists.
        n_epochs: The run's number of epochs (fixes the x range).

    Returns:
        The figure.
    """
    traces = [
        _trace(steps["x"], steps["elbo_loss"], "objective (−ELBO)", LOSS_COLOR, steps=True),
        _trace(steps["x"], steps["nll"], "train NLL", NLL_COLOR, steps=True),
        _trace(epochs["epoch"], epochs["elbo_loss"], "objective (−ELBO)", LOSS_COLOR, steps=False),
        _trace(epochs["epoch"], epochs["nll"], "train NLL", NLL_COLOR, steps=False),
        _trace(epochs["epoch"], epochs["test_nll"], "test NLL", TEST_COLOR, steps=False),
    ]
    return go.Figure(
        traces,
        layout(
            "Objective and NLL per training image",
            300,
            {"title": {"text": "epoch"}, "range": [0, max(n_epochs, 1) + 0.05]},
            {"title": {"text": "nats"}, "rangemode": "tozero"},
        ),
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
