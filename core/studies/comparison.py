"""Every shipped method side by side on one evaluation (docs/methods.md and the Home page's table).

Per checkpoint: MNIST test error, NLL and ECE of the predictive mean (all 10,000 test images,
:data:`N_SAMPLES` passes); OOD AUROC against Fashion-MNIST, KMNIST, notMNIST and Omniglot
(:data:`OOD_INPUTS` inputs per set and of MNIST), each by the score that separates the set best
on a validation half of these inputs, rated on the other half
(:func:`core.studies.ood.held_out_choice`, split seed :data:`OOD_SPLIT_SEED`); FGSM accuracy at
ε = 0.1 on
:data:`ATTACK_INPUTS` test images (EOT with k = :data:`EOT_K` passes per gradient for stochastic
methods); the time of one image × 100 passes; and the training time stored with the checkpoint.
Every part comes from the studies' disk caches, so a second run only re-times the prediction.
"""

from __future__ import annotations

import datetime
import json
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from core.atomic import atomic_write_text
from core.catalogue import REGISTRY
from core.engine.device import default_device, device_name, library_versions
from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import SCORES, summarize
from core.paths import REPO_ROOT
from core.progress import Job, ProgressFn, run_all
from core.storage.checkpoints import load_checkpoint
from core.studies.evaluations import IN_DISTRIBUTION, evaluate_dataset
from core.studies.ood import held_out_choice
from core.studies.robustness import CurveSettings, cached_curve

OOD_SETS = ("fashion_mnist", "kmnist", "notmnist", "omniglot")
N_SAMPLES = 100
OOD_INPUTS = 2000
OOD_SAMPLES = 50
OOD_SPLIT_SEED = 0
"""Seed of the split of each OOD set's inputs, and of MNIST's, into validation and test halves."""
ATTACK_INPUTS = 1000
ATTACK_EPS = 0.1
EOT_K = 20
RESULT_FILE = REPO_ROOT / "benchmarks" / "comparison.json"

# Published MNIST test errors (%) of the same families, for orientation (other networks and
# budgets): Blundell et al. 2015, Table 1 (2×1200 units, 600 epochs); Lakshminarayanan et al.
# 2017 and Li & Gal 2017 report their MNIST results in figures, so no number is quoted here.
LITERATURE_ERROR = {"bbb_mixture": 1.36, "bbb_gaussian": 1.82, "dropout_mlp": 1.51, "mlp": 1.83}


@dataclass(frozen=True)
class MethodRow:
    """One method's numbers (errors and accuracies as fractions, NLL in nats, times in s).

    Attributes:
        checkpoint: Registry name.
        title: Human title.
        test_error: MNIST test error of the predictive mean.
        nll: Mean negative log-likelihood of the predictive mean on the test set.
        ece: Expected calibration error (15 bins).
        ood_auroc: Dataset → AUROC of the chosen score on the test half (available sets only).
        ood_score: Dataset → the chosen score: the best on the validation half.
        ood_validation_auroc: Dataset → score name → AUROC on the validation half (what chose;
            never reported in the table).
        fgsm_accuracy: Accuracy on FGSM examples at ε = 0.1.
        fgsm_attack: ``"EOT k=20"`` or ``"white-box"`` (deterministic models).
        predict_ms: Median time of one image × 100 passes plus summaries, milliseconds.
        train_seconds: Training time stored with the checkpoint (None if unknown).
        literature_error: A published error of the family in percent, or None.
    """

    checkpoint: str
    title: str
    test_error: float
    nll: float
    ece: float
    ood_auroc: dict[str, float]
    ood_score: dict[str, str]
    ood_validation_auroc: dict[str, dict[str, float]]
    fgsm_accuracy: float
    fgsm_attack: str
    predict_ms: float
    train_seconds: float | None
    literature_error: float | None


def _predict_ms(model: torch.nn.Module, repeats: int = 20) -> float:
    x = torch.rand(1, 1, 28, 28)
    for _ in range(3):
        summarize(predictive_samples(model, x, N_SAMPLES))
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        summarize(predictive_samples(model, x, N_SAMPLES))
        times.append(time.perf_counter() - start)
    return 1e3 * statistics.median(times)


@dataclass(frozen=True)
class KeptTimes:
    """Prediction times of an earlier comparison, carried over instead of timed again.

    Attributes:
        predict_ms: Checkpoint → :attr:`MethodRow.predict_ms`, milliseconds.
        device: The device they were measured on, e.g. ``"cpu (2 threads)"``.
        date: When they were measured, ISO 8601.
    """

    predict_ms: dict[str, float]
    device: str
    date: str


def stored_times(result: dict) -> KeptTimes:
    """The prediction times of a saved comparison and where and when they were measured.

    Args:
        result: A saved comparison (:func:`load_comparison`).

    Returns:
        Its times; a comparison without a ``"times"`` record timed on its own device and date.
    """
    times = result.get("times", result)
    return KeptTimes(
        predict_ms={row["checkpoint"]: row["predict_ms"] for row in result["rows"]},
        device=times["device"],
        date=times["date"],
    )


def method_row(
    checkpoint: str,
    ood_sets: tuple[str, ...],
    progress: ProgressFn | None = None,
    predict_ms: float | None = None,
) -> MethodRow:
    """The :class:`MethodRow` of one registered checkpoint.

    Args:
        checkpoint: Registry name of a shipped checkpoint.
        ood_sets: The OOD datasets to rate (those available on this machine).
        progress: Called with the fraction done and a message.
        predict_ms: A time measured before, milliseconds; None to time the prediction now.

    Returns:
        The row; each expensive part is cached on disk by its study.

    Raises:
        CheckpointError: If the checkpoint does not load.
        DatasetUnavailable: If MNIST is missing.
    """
    model, meta = load_checkpoint(checkpoint, default_device())
    k = EOT_K if model.stochastic else 1
    settings = CurveSettings(
        eps=(0.0, ATTACK_EPS), n_inputs=ATTACK_INPUTS, n_attack_samples=k, n_eval_samples=20
    )
    parts = [
        Job(
            "MNIST",
            lambda p: evaluate_dataset(
                checkpoint, IN_DISTRIBUTION, n_samples=N_SAMPLES, progress=p
            ),
        ),
        *(
            Job(
                d,
                lambda p, d=d: evaluate_dataset(
                    checkpoint, d, n_samples=OOD_SAMPLES, n_inputs=OOD_INPUTS, progress=p
                ),
            )
            for d in (IN_DISTRIBUTION, *ood_sets)
        ),
        Job("FGSM", lambda p: cached_curve(checkpoint, settings, progress=p)),
    ]
    mnist, inside, *oods, curve = run_all(parts, progress)
    metrics = mnist.calibration()
    choices = {o.dataset: held_out_choice(inside.scores, o.scores, OOD_SPLIT_SEED) for o in oods}
    return MethodRow(
        checkpoint=checkpoint,
        title=REGISTRY[checkpoint].title,
        test_error=1.0 - metrics["accuracy"],
        nll=metrics["nll"],
        ece=metrics["ece"],
        ood_auroc={d: c.test_auroc for d, c in choices.items()},
        ood_score={d: c.score for d, c in choices.items()},
        ood_validation_auroc={d: c.validation_auroc for d, c in choices.items()},
        fgsm_accuracy=curve.accuracy[curve.eps.index(ATTACK_EPS)],
        fgsm_attack=f"EOT k={k}" if k > 1 else "white-box",
        predict_ms=_predict_ms(model) if predict_ms is None else predict_ms,
        train_seconds=meta.get("train_seconds"),
        literature_error=LITERATURE_ERROR.get(checkpoint),
    )


def comparison(
    checkpoints: list[str],
    ood_sets: tuple[str, ...],
    progress: ProgressFn | None = None,
    kept: KeptTimes | None = None,
) -> dict:
    """The comparison of ``checkpoints`` as a JSON-serialisable dict.

    Args:
        checkpoints: Registry names, in table order.
        ood_sets: The OOD datasets to rate.
        progress: Called with the fraction done and a message.
        kept: Prediction times to carry over (e.g. :func:`stored_times` of the saved
            comparison, when this machine is too busy to time); None to time every method.

    Returns:
        ``{"rows": [MethodRow as dict, ...], "device", "versions", "date", "times",
        "settings"}``; ``"times"`` is ``{"device", "date"}`` of the prediction times.

    Raises:
        ValueError: If ``kept`` has no time of one of ``checkpoints``.
    """
    missing = [c for c in checkpoints if kept is not None and c not in kept.predict_ms]
    if missing:
        raise ValueError(f"no kept prediction time of {', '.join(missing)}")
    jobs = [
        Job(
            c,
            lambda p, c=c: method_row(c, ood_sets, p, None if kept is None else kept.predict_ms[c]),
        )
        for c in checkpoints
    ]
    rows = run_all(jobs, progress)
    device = device_name(default_device())
    date = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
    return {
        "rows": [asdict(r) for r in rows],
        "device": device,
        "versions": library_versions(),
        "date": date,
        "times": {"device": device, "date": date}
        if kept is None
        else {"device": kept.device, "date": kept.date},
        "settings": {
            "n_samples": N_SAMPLES,
            "ood_inputs": OOD_INPUTS,
            "ood_samples": OOD_SAMPLES,
            "ood_split_seed": OOD_SPLIT_SEED,
            "ood_validation_inputs": OOD_INPUTS // 2,
            "ood_test_inputs": OOD_INPUTS - OOD_INPUTS // 2,
            "ood_protocol": (
                "the ood_inputs inputs of MNIST and of each set are split in halves by "
                "ood_split_seed; ood_score is the score with the highest AUROC on the "
                "validation halves (ood_validation_auroc); ood_auroc is that score's AUROC "
                "on the test halves"
            ),
            "attack_inputs": ATTACK_INPUTS,
            "attack_eps": ATTACK_EPS,
            "eot_k": EOT_K,
        },
    }


def save_comparison(result: dict, path: Path = RESULT_FILE) -> Path:
    """Write ``result`` atomically as JSON.

    Args:
        result: What :func:`comparison` returned.
        path: Target file (default ``benchmarks/comparison.json``).

    Returns:
        The path written.
    """
    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
    return path


def load_comparison(path: Path = RESULT_FILE) -> dict | None:
    """The saved comparison, or None when absent or unreadable.

    Args:
        path: The file (default ``benchmarks/comparison.json``).

    Returns:
        The dict written by :func:`save_comparison`, or None.
    """
    try:
        result = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return result if isinstance(result, dict) and "rows" in result else None


SET_TITLES = {
    "fashion_mnist": "Fashion",
    "kmnist": "KMNIST",
    "notmnist": "notMNIST",
    "omniglot": "Omniglot",
}
"""Short titles of :data:`OOD_SETS` for the table's column heads."""


def two_digits(value: float) -> str:
    """A positive number to two significant digits, without a trailing exponent.

    Args:
        value: The number, e.g. a time in milliseconds.

    Returns:
        e.g. ``"6.6"``, ``"0.21"``, ``"13"``, ``"950"``.
    """
    return f"{float(f'{value:.2g}'):g}" if value < 100 else f"{value:.0f}"


def table_cells(row: dict, sets: list[str]) -> dict[str, str]:
    """One method's row of the comparison table, each cell as the Home page shows it.

    Args:
        row: One of the saved comparison's ``rows``.
        sets: The OOD sets with a column (:data:`OOD_SETS` present in the comparison).

    Returns:
        Column head → text ("—" where nothing was measured).
    """
    auroc = row["ood_auroc"]
    minutes = row["train_seconds"]
    return {
        "test error (%)": f"{100 * row['test_error']:.2f}",
        "NLL": f"{row['nll']:.3f}",
        "ECE": f"{row['ece']:.3f}",
        **{
            f"OOD AUROC, {SET_TITLES[d]}": "—" if d not in auroc else f"{auroc[d]:.2f}"
            for d in sets
        },
        "FGSM ε=0.1 acc. (%)": f"{100 * row['fgsm_accuracy']:.0f}",
        "ms per image (100 passes)": two_digits(row["predict_ms"]),
        "training (min)": "—" if minutes is None else two_digits(minutes / 60),
    }


def row_title(row: dict) -> str:
    """The title a comparison row is shown under: its model's registered title now.

    The stored title is the one the model had when it was measured; a title changed since (a
    caveat added, e.g. that a sampler's samples barely differ) must show with the numbers.

    Args:
        row: A row of a saved comparison.

    Returns:
        The registered title of ``row["checkpoint"]``, or the stored title for a model no
        longer registered.
    """
    spec = REGISTRY.get(row["checkpoint"])
    return spec.title if spec else row["title"]


def comparison_table(result: dict) -> dict[str, dict[str, str]]:
    """The Home page's table of a saved comparison, every cell formatted.

    Args:
        result: A saved comparison (:func:`load_comparison`).

    Returns:
        Method title → column head → text, in the comparison's order.
    """
    sets = _rated_sets(result)
    return {row_title(row): table_cells(row, sets) for row in result["rows"]}


def score_table(result: dict) -> dict[str, dict[str, str]]:
    """Which uncertainty score each method's OOD AUROC in the Home page's table uses.

    Args:
        result: A saved comparison (:func:`load_comparison`).

    Returns:
        Method title → OOD set's short title → the chosen score's title ("—" where the set was
        not rated), in the comparison's order.
    """
    sets = _rated_sets(result)
    return {
        row_title(row): {
            SET_TITLES[d]: SCORES[row["ood_score"][d]].title if d in row["ood_score"] else "—"
            for d in sets
        }
        for row in result["rows"]
    }


def times_note(result: dict) -> str:
    """Where and when the prediction times were measured, when not with the rest.

    Args:
        result: A saved comparison (:func:`load_comparison`).

    Returns:
        e.g. ``"; the milliseconds per image on cpu (2 threads), 2026-11-27"``, or ``""`` when
        the times come from the same device and day as the rest of the table.
    """
    times = stored_times(result)
    if (times.device, times.date[:10]) == (result["device"], result["date"][:10]):
        return ""
    return f"; the milliseconds per image on {times.device}, {times.date[:10]}"


def _rated_sets(result: dict) -> list[str]:
    return [d for d in OOD_SETS if any(d in row["ood_auroc"] for row in result["rows"])]
