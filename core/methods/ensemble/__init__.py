"""Deep ensembles (Lakshminarayanan et al. 2017): M networks from independent random starts.

The members' stacked parameters train in one vectorised loop (the ``members`` estimator).
"""

from __future__ import annotations

from core.methods.base import BanditRole, Method, Setting
from core.methods.ensemble.model import DeepEnsemble
from core.training import Procedure


class EnsembleProcedure(Procedure):
    """Adam on the members' summed objective, one vectorised loop (the ``members`` estimator)."""

    def objective_options(self) -> dict:
        """The base options with the ``members`` estimator."""
        return super().objective_options() | {"impl": "members"}


METHOD = Method(
    kind="ensemble",
    order=4,
    title="Deep ensemble",
    summary="Several networks from different random starts; their votes are averaged.",
    model_class=DeepEnsemble,
    settings=(
        Setting(
            "members",
            "Networks in the ensemble",
            "Each network starts from its own random weights; training costs about as much as "
            "that many MLPs.",
            5,
            low=2,
            high=20,
        ),
    ),
    procedure=EnsembleProcedure,
    internal=(
        Setting(
            "adversarial_eps",
            "Adversarial step",
            "FGSM step (pixel units) of adversarial training on each member's examples; 0: off.",
            0.0,
            low=0.0,
            high=1.0,
        ),
    ),
    bandit=BanditRole(agent="Ensemble Thompson", draws=True),
)
