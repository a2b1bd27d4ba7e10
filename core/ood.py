"""Out-of-distribution detection: MNIST test inputs against another dataset's, per score.

Each uncertainty score of :data:`core.uncertainty.SCORES` is used as a detector (higher = more
likely OOD) and rated by AUROC, AUPR and FPR at 95 % TPR (:func:`core.metrics.ood_metrics`).
Evaluations come from the disk cache (:func:`core.evalcache.evaluate_dataset`); the MNIST side
uses the same subset size ``n`` as the OOD side. For ROC plots use
:func:`core.metrics.roc_curve` on the two evaluations' ``scores``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.evalcache import IN_DISTRIBUTION, DatasetEvaluation, evaluate_dataset
from core.metrics import ood_metrics
from core.progress import ProgressFn, report


def ood_datasets() -> list[str]:
    """Names of the datasets other than MNIST whose files are available now."""
    from core.data import list_datasets

    return [
        info.name
        for info in list_datasets()
        if info.name != IN_DISTRIBUTION and info.availability()[0]
    ]


def digit_labelled(dataset: str) -> bool:
    """Whether ``dataset`` is labelled with MNIST's digit classes (e.g. rotated MNIST), so the
    accuracy of a MNIST model on it means something."""
    from core.data import dataset_info

    info = dataset_info(dataset)
    return info.has_labels and info.class_names == dataset_info(IN_DISTRIBUTION).class_names


def _part(progress: ProgressFn | None, done: int, total: int) -> ProgressFn:
    """Progress of step ``done`` of ``total`` equal steps, reported as a share of the whole."""
    return lambda fraction, message: report(progress, (done + fraction) / total, message)


@dataclass(frozen=True)
class OodResult:
    """One checkpoint against one OOD dataset.

    metrics: score name → ``{"auroc", "aupr", "fpr95"}``; ood_accuracy: accuracy on the OOD
    inputs where they are labelled with digits (:func:`digit_labelled`), None otherwise."""

    checkpoint: str
    dataset: str
    samples: int
    num_in: int
    num_out: int
    ood_accuracy: float | None
    metrics: dict[str, dict[str, float]]


def compare(inside: DatasetEvaluation, outside: DatasetEvaluation) -> dict[str, dict[str, float]]:
    """Score name → ``{"auroc", "aupr", "fpr95"}`` of detecting ``outside`` among ``inside``."""
    return {name: ood_metrics(inside.scores[name], outside.scores[name]) for name in inside.scores}


def ood_result(
    checkpoint: str | Path,
    ood_dataset: str,
    *,
    samples: int = 100,
    n: int | None = None,
    progress: ProgressFn | None = None,
) -> OodResult:
    """Detection of ``ood_dataset`` among MNIST test inputs (``n`` of each, all when None) by
    ``checkpoint`` (registry name or ``.pt`` path), ``samples`` passes per input."""
    inside = evaluate_dataset(
        checkpoint, IN_DISTRIBUTION, samples=samples, n=n, progress=_part(progress, 0, 2)
    )
    outside = evaluate_dataset(
        checkpoint, ood_dataset, samples=samples, n=n, progress=_part(progress, 1, 2)
    )
    return OodResult(
        checkpoint=Path(checkpoint).stem,
        dataset=ood_dataset,
        samples=samples,
        num_in=len(inside),
        num_out=len(outside),
        ood_accuracy=outside.accuracy if digit_labelled(ood_dataset) else None,
        metrics=compare(inside, outside),
    )


def ood_report(
    checkpoint: str | Path,
    ood_dataset: str,
    *,
    samples: int = 100,
    n: int | None = None,
    progress: ProgressFn | None = None,
) -> dict[str, dict[str, float]]:
    """Score name → ``{"auroc", "aupr", "fpr95"}``; see :func:`ood_result`."""
    return ood_result(checkpoint, ood_dataset, samples=samples, n=n, progress=progress).metrics


def ood_table(
    checkpoints: list[str],
    datasets: list[str],
    *,
    samples: int = 100,
    n: int | None = None,
    progress: ProgressFn | None = None,
) -> list[OodResult]:
    """:func:`ood_result` of every checkpoint against every dataset."""
    pairs = [(c, d) for c in checkpoints for d in datasets]
    results = [
        ood_result(c, d, samples=samples, n=n, progress=_part(progress, i, len(pairs)))
        for i, (c, d) in enumerate(pairs)
    ]
    report(progress, 1.0, "done")
    return results
