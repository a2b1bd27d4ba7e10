"""Stated values of the Calibration page: what temperature scaling did to every shipped model."""

from __future__ import annotations

from core.catalogue import REGISTRY
from core.stated.registry import stated
from core.studies.calibration.rejection import MISCALIBRATED_P, calibration_result, scaling_counts


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


def _p(value: float) -> str:
    """A p-value as the Calibration page writes it (at the resampling's resolution)."""
    return "< 0.001" if value < 0.001 else f"{value:.3f}"


@stated("calibration_markdown")
def calibration_markdown() -> str:
    """Every shipped model's calibration before and after temperature scaling, in Markdown.

    Accuracy, the ECE beside the ECE a perfectly calibrated model reaches by chance (its mean
    and 95 % quantile) and the p-value, MCE, NLL, Brier score, the fitted T, the same after
    scaling, and what scaling did to the ECE; blank lines around the table.
    """
    heads = (
        "model | accuracy | ECE | by chance: mean / 95 % | p | MCE | NLL | Brier | T "
        "| ECE after T | by chance after T | p after T | NLL after T | scaling"
    )
    lines = [f"| {heads} |", "|---" * (heads.count("|") + 1) + "|"]
    for name, r in _results().items():
        m, t = r.metrics, r.tempered
        cells = (
            REGISTRY[name].title,
            f"{m['accuracy']:.2%}",
            f"{m['ece']:.4f}",
            f"{m['ece_chance']:.4f} / {m['ece_floor']:.4f}",
            _p(m["ece_p_value"]),
            f"{m['mce']:.3f}",
            f"{m['nll']:.4f}",
            f"{m['brier']:.4f}",
            f"{r.fit.temperature:.2f}",
            f"{t['ece']:.4f}",
            f"{t['ece_chance']:.4f} / {t['ece_floor']:.4f}",
            _p(t["ece_p_value"]),
            f"{t['nll']:.4f}",
            {"helps": "helps", "harms": "**harms**", "none": "no measurable change"}[
                r.scaling.effect
            ],
        )
        lines.append("| " + " | ".join(cells) + " |")
    return "\n\n" + "\n".join(lines) + "\n\n"


@stated("calibration_models")
def calibration_models(effect: str) -> str:
    """The shipped models whose ECE scaling ``helps``, ``harms`` or leaves (``none``), by title."""
    effects = {name: r.scaling.effect for name, r in _results().items()}
    names = scaling_counts(effects)[effect]
    return ", ".join(REGISTRY[name].title for name in names) or "none"


@stated("calibration_p")
def calibration_p(name: str, when: str = "before") -> str:
    """A shipped model's ECE p-value against chance, ``before`` or ``after`` scaling."""
    key = {"before": "metrics", "after": "tempered"}[when]
    return _p(getattr(calibration_result(name), key)["ece_p_value"])
