"""Stated values of the Pruning page.

The quick numbers at the top (first :data:`~core.studies.pruning_curves.QUICK_INPUTS` test
images) and the curves' table (the whole test set).
"""

from __future__ import annotations

from core.stated.registry import stated
from core.studies.pruning_curves import (
    SNR_BINS,
    SNR_FLOOR_DB,
    cached_pruning_curve,
    quick_error,
    quick_point,
)


def _fraction(percent: str) -> float:
    return int(percent) / 100


@stated("pruning_unpruned")
def pruning_unpruned(checkpoint: str) -> str:
    """The unpruned model's quick test error, e.g. ``1.50%``."""
    return f"{quick_error(checkpoint):.2%}"


@stated("pruning_quick")
def pruning_quick(checkpoint: str, method: str, percent: str, field: str) -> str:
    """One of the quick numbers of a model pruned by ``method`` to ``percent`` % removed.

    ``field``: ``error`` (``1.60%``), ``kept`` / ``total`` weights (``47,760``), ``sparse_mb``
    or ``dense_mb`` (``0.58``).
    """
    point = quick_point(checkpoint, method, _fraction(percent), SNR_BINS, SNR_FLOOR_DB)
    size = point.size
    texts = {
        "error": f"{point.error:.2%}",
        "kept": f"{size.kept_weights:,}",
        "total": f"{size.total_weights:,}",
        "sparse_mb": f"{size.sparse_bytes / 1e6:.2f}",
        "dense_mb": f"{size.dense_bytes / 1e6:.2f}",
    }
    return texts[field]


@stated("pruning_curve")
def pruning_curve(checkpoint: str, method: str, percent: str) -> str:
    """A pruning curve's test error on the whole test set at ``percent`` % removed."""
    curve = cached_pruning_curve(checkpoint, method)
    return f"{curve.error_at(_fraction(percent)):.2%}"
