"""The plain network: one point estimate of the weights, trained by Adam on the average NLL."""

from __future__ import annotations

from core.engine.mlp import MLP
from core.methods.base import BanditRole, Method, prior_precision

METHOD = Method(
    kind="mlp",
    order=2,
    convolutional=True,
    title="Plain MLP",
    summary="One set of weights (a point estimate): the baseline without weight uncertainty.",
    model_class=MLP,
    prior_weight_decay=prior_precision,
    bandit=BanditRole(native=True),
)
