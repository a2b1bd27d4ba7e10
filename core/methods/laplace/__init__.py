"""Last-layer Laplace (Daxberger et al. 2021): a Gaussian on the last layer, fitted post hoc.

The network trains as a plain MLP; :func:`~core.methods.laplace.model.fit_laplace` then fits the
posterior of its last layer on the training set (prior precision by marginal likelihood).
"""

from __future__ import annotations

import torch

from core.engine.interface import ModelConfig
from core.engine.mlp import MLP
from core.methods.base import Method, Setting
from core.methods.laplace.model import STRUCTURES, LastLayerLaplace, fit_laplace
from core.training import Procedure


class LaplaceProcedure(Procedure):
    """Adam steps on a plain MLP with the model's layers, then the post-hoc fit."""

    def network(self, model: torch.nn.Module) -> torch.nn.Module:
        """A plain MLP with the model's layers (and weights, when it starts from a base)."""
        mlp = MLP(ModelConfig.from_dict({**model.config.to_dict(), "kind": "mlp", "params": {}}))
        mlp.load_state_dict(model.state_dict(), strict=False)
        return mlp.to(next(model.parameters()).device)

    def finish(self, model, network, train_data) -> dict:
        """Copy the trained layers into the model and fit its last layer's posterior."""
        model.load_state_dict(network.state_dict(), strict=False)
        return {"posterior": fit_laplace(model.to(train_data[0].device), *train_data)}


METHOD = Method(
    kind="laplace",
    order=5,
    title="Laplace (last layer, post hoc)",
    summary="The network is trained as a plain MLP, then a Gaussian posterior is fitted to its "
    "last layer (Laplace approximation, prior precision by marginal likelihood).",
    model_class=LastLayerLaplace,
    procedure=LaplaceProcedure,
    trains_like="mlp",
    regression=False,  # its predictive is a probit-approximated softmax
    internal=(
        Setting(
            "structure",
            "Posterior structure",
            "The last layer's posterior precision: Kronecker-factored or full.",
            "kron",
            options=STRUCTURES,
        ),
    ),
)
