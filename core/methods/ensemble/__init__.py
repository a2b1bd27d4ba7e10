"""Deep ensembles (Lakshminarayanan et al. 2017): M networks from independent random starts.

The members' stacked parameters train in one vectorised loop (the ``members`` estimator).
"""

from __future__ import annotations

from core.methods.base import Method, Setting
from core.methods.ensemble.model import DeepEnsemble

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
            high=10,
        ),
    ),
    assemble=lambda values: dict(values, impl="members"),
)
