"""The stored study of adaptation: every method on a shifted digit set the lab makes itself.

MNIST test digits redrawn as a canvas draws them (:func:`core.data.synthetic.canvas_digits`:
thicker, tilted, off-centre) stand in for a class's handwriting. From one seeded order of the
MNIST test set: the first :data:`~core.adapt.study.MNIST_SUBSET` digits are the forgetting
check (as on the page), the next :data:`KEPT` redrawn ones are kept aside, and the next
:data:`POOL` redrawn ones are the drawings learned from, the first 20, 50 or 200 of them. Each
row (:data:`ROWS`: a checkpoint and its options, fixed before anything was measured; no
tuning on the kept-aside drawings) is adapted with the default steps, timed
``repeats`` times at the largest size (median), and scored before and after.

The rows are read from the adapters (:data:`~core.adapt.registry.ADAPTERS`): each kind's
:attr:`~core.adapt.base.Adapter.study` arms, on the kind's first shipped MNIST checkpoint
(:func:`~core.catalogue.first_shipped`).
"""

from __future__ import annotations

import platform
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from core.adapt.registry import ADAPTERS
from core.adapt.run import Recipe, adapt
from core.adapt.study import MNIST_SUBSET, scores
from core.catalogue import first_shipped
from core.data import load_dataset
from core.data.synthetic import canvas_digits
from core.progress import ProgressFn, report
from core.storage.checkpoints import load_checkpoint
from core.storage.results import StoredResults

SIZES = (20, 50, 200)
"""Drawings learned from."""
KEPT = 500
"""Redrawn digits kept aside."""
POOL = max(SIZES)
SEED = 0
N_SAMPLES = 20
"""Monte-Carlo passes of every score."""


@dataclass(frozen=True)
class StudyRow:
    """One row of the study: a shipped checkpoint adapted with fixed options.

    Attributes:
        name: The row's name, the kind plus its arm's suffix (e.g. ``"mlp_pull"``).
        title: Its title on the page and in the documents.
        checkpoint: The shipped checkpoint adapted.
        options: The adaptation options.
    """

    name: str
    title: str
    checkpoint: str
    options: dict


def study_rows() -> dict[str, StudyRow]:
    """Every adapter's study arms on its kind's first shipped MNIST checkpoint.

    Returns:
        Row name → row, in the adapters' order (kinds without a shipped checkpoint or arms
        have none).
    """
    rows = {}
    for kind, adapter in ADAPTERS.items():
        checkpoint = first_shipped(kind)
        for arm in adapter.study if checkpoint else ():
            name = kind + arm.suffix
            rows[name] = StudyRow(name, arm.title, checkpoint, dict(arm.options))
    return rows


ROWS = study_rows()
"""Row name → what it measures."""
TITLES = {name: row.title for name, row in ROWS.items()}
"""Row name → title (the stored study's rows carry theirs)."""
RESULT_NAME = "adapt-canvas.json"
STORED = StoredResults("adaptation")
"""Where the stored study lives: ``<results folder>/adaptation/adapt-canvas.json``."""


def canvas_sets(seed: int = SEED) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """The study's three sets: ``"mnist"``, ``"kept"`` and ``"pool"`` (images, labels).

    Raises:
        DatasetUnavailable: If MNIST is missing.
    """
    x, y = load_dataset("mnist", "test", n_inputs=MNIST_SUBSET + KEPT + POOL, seed=seed)
    redrawn = canvas_digits(x[MNIST_SUBSET:], seed=seed + 1)
    rest = y[MNIST_SUBSET:]
    return {
        "mnist": (x[:MNIST_SUBSET], y[:MNIST_SUBSET]),
        "kept": (redrawn[:KEPT], rest[:KEPT]),
        "pool": (redrawn[KEPT:], rest[KEPT:]),
    }


def run_study(
    methods: list[str] | None = None, repeats: int = 3, progress: ProgressFn | None = None
) -> dict:
    """Adapt every method at every size and score it.

    Args:
        methods: Row names of :data:`ROWS` (None: all).
        repeats: Timed runs at the largest size (the median is kept).
        progress: Gets the fraction done.

    Returns:
        ``{"settings", "machine", "cannot_adapt", "rows"}``; each row ``{"method", "title",
        "checkpoint", "options", "before", "sizes": {N: {"accuracy", "ece", "nll",
        "dont_know", "mnist_error", "seconds"}}}`` (``"seconds"``: the median of ``repeats``
        at the largest size, the one run's elsewhere).
    """
    names = methods or list(ROWS)
    sets = canvas_sets()
    rows = []
    for i, row in enumerate(names):
        checkpoint, options = ROWS[row].checkpoint, ROWS[row].options
        shipped, _ = load_checkpoint(checkpoint)
        before = scores(shipped, sets["kept"], sets["mnist"], N_SAMPLES, SEED).row()
        sizes = {}
        for size in SIZES:
            report(progress, (i + SIZES.index(size) / len(SIZES)) / len(names), f"{row}, {size}")
            x, y = sets["pool"][0][:size], sets["pool"][1][:size]
            times, adapted = [], None
            for _ in range(repeats if size == max(SIZES) else 1):
                start = time.perf_counter()
                adapted = adapt(checkpoint, x, y, Recipe(options=options, seed=SEED))
                times.append(time.perf_counter() - start)
            after = scores(adapted.model, sets["kept"], sets["mnist"], N_SAMPLES, SEED).row()
            sizes[str(size)] = after | {"seconds": statistics.median(times), "runs": times}
        rows.append(
            {
                "method": row,
                "title": ROWS[row].title,
                "checkpoint": checkpoint,
                "options": options,
                "before": before,
                "sizes": sizes,
            }
        )
    report(progress, 1.0, "done")
    return {
        "settings": {
            "sizes": list(SIZES),
            "kept_aside": KEPT,
            "mnist_subset": MNIST_SUBSET,
            "n_samples": N_SAMPLES,
            "seed": SEED,
            "repeats": repeats,
            "steps": 100,
        },
        "machine": {
            "processor": platform.processor() or platform.machine(),
            "threads": torch.get_num_threads(),
            "torch": torch.__version__,
            "date": time.strftime("%Y-%m-%d"),
        },
        "cannot_adapt": {k: a.reason for k, a in ADAPTERS.items() if not a.can_adapt},
        "rows": rows,
    }


def save_study(result: dict) -> Path:
    """Store the study atomically among the lab's stored results; the file written."""
    return STORED.save(RESULT_NAME, result)


def load_study() -> dict | None:
    """The stored study, or None when there is none."""
    return STORED.load(RESULT_NAME)


def columns(sizes: list[int]) -> dict[str, str]:
    """The study table's columns: short name → title.

    Args:
        sizes: The drawings learned from, smallest first.

    Returns:
        ``before``, one per size (``"20"``...), ``ece_before``, ``ece``, ``mnist_before``,
        ``mnist`` and ``seconds`` (the last three at the largest size) → their titles.
    """
    top = sizes[-1]
    return {
        "before": "kept-aside accuracy (%), as trained",
        **{str(s): f"after {s}" for s in sizes},
        "ece_before": "ECE, as trained",
        "ece": f"ECE after {top}",
        "mnist_before": "MNIST error (%), as trained",
        "mnist": f"MNIST error after {top}",
        "seconds": f"seconds ({top})",
    }


def study_table(result: dict) -> dict[str, dict[str, str]]:
    """The stored study as the page and the documents show it.

    Args:
        result: The study (:func:`load_study`).

    Returns:
        Method title → column title (:func:`columns`) → text: accuracies and errors in %,
        ECEs, the seconds at the largest size (median of the repeats).
    """
    sizes = list(result["settings"]["sizes"])
    top = str(sizes[-1])
    titles = columns(sizes)
    table = {}
    for row in result["rows"]:
        before, after = row["before"], row["sizes"]
        cells = {
            "before": f"{100 * before['accuracy']:.1f}",
            **{str(s): f"{100 * after[str(s)]['accuracy']:.1f}" for s in sizes},
            "ece_before": f"{before['ece']:.3f}",
            "ece": f"{after[top]['ece']:.3f}",
            "mnist_before": f"{100 * before['mnist_error']:.1f}",
            "mnist": f"{100 * after[top]['mnist_error']:.1f}",
            "seconds": f"{after[top]['seconds']:.1f}",
        }
        table[row["title"]] = {titles[k]: v for k, v in cells.items()}
    return table
