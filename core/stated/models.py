"""Stated values of the shipped models: their test metrics and how each file was made.

The metrics are :func:`core.studies.evaluations.test_metrics`, what ``python -m core evaluate
--checkpoint NAME`` prints (100 seeded passes over the test set of the model's task, seed 0);
the facts are the file's own metadata (``checkpoints/NAME.json``), written when it was trained.
"""

from __future__ import annotations

from datetime import datetime

from core.catalogue import REGISTRY
from core.stated.registry import stated
from core.storage.checkpoints import checkpoint_path, read_metadata
from core.studies.evaluations import test_metrics

METRICS = {
    "test_error": lambda m: f"{100 * m['test_error']:.2f} %",
    "test_error_se": lambda m: f"{100 * m['test_error_se']:.2f}",
    "nll": lambda m: f"{m['nll']:.3f}",
    "nll_se": lambda m: f"{m['nll_se']:.3f}",
    "ece": lambda m: f"{m['ece']:.4f}",
}
"""A metric's name → how the documents write it (percent to two decimals, nats to three)."""


def _duration(seconds: float) -> str:
    """Training time as the documents write it: "4 s", "5.7 min", "84 min"."""
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    return f"{minutes:.1f} min" if minutes < 10 else f"{minutes:.0f} min"


FACTS = {
    "epochs": lambda meta: f"{meta['epochs']:,}",
    "train_time": lambda meta: _duration(meta["train_seconds"]),
    "train_images": lambda meta: f"{meta['train_subset']:,}",
    "device": lambda meta: meta["device"].replace("(1 threads)", "(1 thread)"),
    "date": lambda meta: f"{datetime.fromisoformat(meta['date']):%-d %b %Y}",
}
"""A fact of a shipped file's metadata → how the documents write it."""


def _shipped(name: str) -> str:
    if name not in REGISTRY:
        raise ValueError(f"{name!r} is not a shipped model (one of {sorted(REGISTRY)})")
    return name


@stated("model_metric")
def model_metric(name: str, metric: str) -> str:
    """A shipped model's test metric, e.g. ``model_metric bbb_mixture test_error`` → ``1.52 %``.

    ``metric``: one of :data:`METRICS` (``test_error_se``: the error's standard error over the
    test images, in points; ``nll_se`` the NLL's).
    """
    if metric not in METRICS:
        raise ValueError(f"a model metric is one of {sorted(METRICS)}, not {metric!r}")
    return METRICS[metric](test_metrics(_shipped(name)))


@stated("model_fact")
def model_fact(name: str, fact: str) -> str:
    """A fact of how a shipped file was made, e.g. ``model_fact sgld epochs`` → ``65``.

    ``fact``: one of :data:`FACTS`, read from the file's metadata.
    """
    if fact not in FACTS:
        raise ValueError(f"a model fact is one of {sorted(FACTS)}, not {fact!r}")
    return FACTS[fact](read_metadata(checkpoint_path(_shipped(name))))
