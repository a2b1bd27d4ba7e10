"""Stated values of the FGSM table: ``python -m core attack`` at its defaults.

:data:`~core.studies.robustness.EPS_GRID`, 1,000 seeded test images, 20 passes per prediction,
EOT with k = 20 passes per gradient; the transfer attack is crafted on the MLP.
"""

from __future__ import annotations

from core.stated.registry import stated
from core.studies.robustness import EPS_GRID, CurveSettings, cached_curve

ATTACKS = {"naive": (1, None), "eot": (20, None), "transfer": (1, "mlp")}
"""Attack name → (passes per gradient, the checkpoint FGSM is crafted on; None: white-box)."""


@stated("attack_accuracy")
def attack_accuracy(checkpoint: str, attack: str, eps: str) -> str:
    """A model's accuracy (%) on FGSM examples of size ``eps`` (pixel units), e.g. ``65.6``.

    ``attack``: ``naive`` (one pass per gradient), ``eot`` (20) or ``transfer`` (from the MLP).
    """
    k, source = ATTACKS[attack]
    curve = cached_curve(checkpoint, CurveSettings(EPS_GRID, 1000, k, 20), source)
    return f"{100 * curve.accuracy[EPS_GRID.index(float(eps))]:.1f}"
