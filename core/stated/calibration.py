"""Stated values of the Calibration page: what temperature scaling did to every shipped model."""

from __future__ import annotations

from core.catalogue import REGISTRY
from core.stated.registry import stated
from core.studies.calibration import MISCALIBRATED_P, calibration_result, scaling_counts


def _results() -> dict:
    return {name: calibration_result(name) for name in REGISTRY}


@stated("calibration_scaling")
def calibration_scaling(effect: str) -> str:
    """How many shipped models' ECE scaling ``helps``, ``harms`` or leaves (``none``).

    As the Calibration page's table says (a paired bootstrap of the change, 95 %).
    """
    effects = {name: r.scaling.effect for name, r in _results().items()}
    return str(len(scaling_counts(effects)[effect]))


@stated("calibration_miscalibrated")
def calibration_miscalibrated(when: str = "before") -> str:
    """How many shipped models' ECE is measurably above chance (p < 0.05).

    ``when``: ``before`` or ``after`` temperature scaling.
    """
    key = {"before": "metrics", "after": "tempered"}[when]
    return str(sum(getattr(r, key)["ece_p_value"] < MISCALIBRATED_P for r in _results().values()))


@stated("shipped_models")
def shipped_models() -> str:
    """How many models ship with the lab."""
    return str(len(REGISTRY))
