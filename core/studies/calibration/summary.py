"""Every part of the calibration study at once, for the command line."""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path

from core.evaluation.shift import SHIFTS
from core.progress import Job, ProgressFn, run_all
from core.studies.calibration.rejection import (
    CalibrationResult,
    calibration_result,
)
from core.studies.calibration.shift import ShiftSettings, shift_curve


def calibration_summary(
    checkpoints: list[str],
    *,
    n_samples: int = 100,
    shifts: list[str] | None = None,
    settings: ShiftSettings | None = None,
    progress: ProgressFn | None = None,
) -> dict:
    """Compute the calibration, rejection and shift numbers of several checkpoints.

    Args:
        checkpoints: Registry names or ``.pt`` paths.
        n_samples: Passes per prediction on the clean test set and the temperature fit.
        shifts: :data:`~core.evaluation.shift.SHIFTS` names; None for all.
        settings: Subset, passes and seeds of the shifted sets; None for the defaults.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        A JSON-ready dict: ``n_samples``, ``shift_settings`` and ``models``, one entry per
        checkpoint with ``checkpoint``, ``dataset`` (its task), ``accuracy``, ``ece``,
        ``ece_chance``, ``ece_floor`` and ``ece_p_value`` (the ECE against chance,
        :class:`CalibrationResult`), ``mce``, ``nll``, ``brier``, ``temperature``,
        ``temperature_at_bound``, ``ece_tempered``, ``ece_floor_tempered``,
        ``ece_chance_tempered``, ``ece_p_value_tempered``, ``nll_tempered``, ``scaling_effect``
        (``"helps"``, ``"harms"`` or ``"none"``), ``scaling_change`` and ``scaling_interval``
        (its 95 % interval),
        ``validation_nll_ratio``, ``validation_seen``, ``validation_evidence``, ``rejection``
        (score → AUC and the
        99th-percentile rule's coverage and accuracy) and ``shifts`` (shift → one
        ``{"severity", "accuracy", "ece", "ece_tempered", "entropy"}`` per severity).
    """
    settings = settings or ShiftSettings()
    shifts = list(SHIFTS) if shifts is None else shifts
    split = {"validation_size": settings.validation_size, "split_seed": settings.split_seed}
    jobs = []
    for name in checkpoints:
        stem = Path(name).stem
        jobs.append(
            Job(
                stem,
                lambda p, name=name: calibration_result(
                    name, n_samples=n_samples, progress=p, **split
                ),
            )
        )
        jobs += [
            Job(
                f"{stem}, {s}", lambda p, name=name, s=s: shift_curve(name, s, settings, progress=p)
            )
            for s in shifts
        ]
    results = iter(run_all(jobs, progress))
    models = []
    for _ in checkpoints:
        result: CalibrationResult = next(results)
        curves = {s: next(results) for s in shifts}
        models.append(
            {
                "checkpoint": result.checkpoint,
                "dataset": result.dataset,
                **result.metrics,
                "temperature": result.fit.temperature,
                "temperature_at_bound": result.fit.at_bound,
                "ece_tempered": result.tempered["ece"],
                "ece_floor_tempered": result.tempered["ece_floor"],
                "ece_chance_tempered": result.tempered["ece_chance"],
                "ece_p_value_tempered": result.tempered["ece_p_value"],
                "scaling_effect": result.scaling.effect,
                "scaling_change": result.scaling.change,
                "scaling_interval": [result.scaling.low, result.scaling.high],
                "nll_tempered": result.tempered["nll"],
                "validation_nll_ratio": result.validation_nll_ratio,
                "validation_seen": result.validation_seen,
                "validation_evidence": result.validation_evidence,
                "rejection": result.rejection,
                "shifts": {
                    s: [
                        {
                            "severity": level.severity,
                            "accuracy": level.accuracy,
                            "ece": level.ece,
                            "ece_tempered": level.ece_tempered,
                            "entropy": level.mean_scores["predictive_entropy"],
                        }
                        for level in levels
                    ]
                    for s, levels in curves.items()
                },
            }
        )
    return {"n_samples": n_samples, "shift_settings": asdict(settings), "models": models}
