"""SWAG (Maddox et al. 2019): a Gaussian fitted to the iterates of SGD.

The network trains by SGD with momentum 0.9 at the constant learning rate ``lr`` on the
average NLL (plus ``weight_decay`` on the summed minibatch loss, as Adam's), as Maddox et al.
do; after ``burn_in`` of the steps, 2·K iterates at evenly spaced steps update SWAG's running
moments and its last K deviations. With ``precondition`` the iterates are Adam's at the constant
rate instead (the regression playground's sharp 1-D likelihoods defeat plain SGD);
(:class:`~core.methods.swag.moments.SWAG`). The model then holds the mean, the per-weight standard
deviation and the K deviations (:class:`~core.methods.swag.model.SWAGNetwork`); every pass draws
weights from N(θ̄, ½(diag σ² + D Dᵀ/(K − 1))).
"""

from __future__ import annotations

import math

import torch

from core.methods.base import Method, Setting, prior_precision
from core.methods.swag.model import SWAGNetwork
from core.methods.swag.moments import SWAG
from core.training import Procedure, make_optimizer

MOMENTUM = 0.9


class SWAGProcedure(Procedure):
    """SGD with momentum at a constant rate, collecting iterates into SWAG's moments."""

    graphable = False  # its own optimiser and per-step hooks stay eager

    def network(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model itself; plans the 2·K collection steps after the burn-in."""
        rank = self.params["rank"]
        start = int(self.params["burn_in"] * self.total_steps)
        span = self.total_steps - start
        self.kept = {start + math.ceil(span * (i + 1) / (2 * rank)) for i in range(2 * rank)}
        self.moments = SWAG.for_module(model, rank=rank)
        return model

    def optimizer(self, network: torch.nn.Module) -> torch.optim.Optimizer:
        """SGD with momentum on the average NLL at the constant learning rate.

        Preconditioned: Adam at that rate, for problems too ill-conditioned for plain SGD.
        """
        if self.params["precondition"]:
            optimizer = make_optimizer(network, self.config.lr, self.config.weight_decay)
        else:
            optimizer = torch.optim.SGD(
                network.parameters(),
                lr=self.config.lr / self.config.batch_size,  # the objective sums the minibatch
                momentum=MOMENTUM,
                weight_decay=self.config.weight_decay,
            )
        self.optimizers = [optimizer]
        return optimizer

    def after_step(self, network: torch.nn.Module, step: int) -> None:
        """Add the current weights to the moments at the planned steps."""
        if step in self.kept:
            self.moments.collect(network)

    def finish(self, model, network, train_data) -> dict:
        """Store the mean, σ and the deviations in the model (at least 2 iterates)."""
        m = self.moments
        if m.n >= 2:
            model.set_posterior(m.mean, m.variance, m.deviations, m.n)
        return {"swag_iterates": m.n}


METHOD = Method(
    kind="swag",
    order=8,
    title="SWAG (Gaussian from SGD)",
    summary="Plain SGD keeps moving near the bottom of the loss; a Gaussian fitted to where it "
    "went is the posterior (Maddox et al. 2019).",
    model_class=SWAGNetwork,
    procedure=SWAGProcedure,
    lr=0.05,
    prior_weight_decay=prior_precision,
    settings=(
        Setting(
            "burn_in",
            "Start collecting after",
            "Fraction of the run before SGD's weights are collected: first reach the bottom.",
            0.5,
            options=(0.0, 0.25, 0.5, 0.75, 0.9),
            low=0.0,
            high=0.99,
        ),
        Setting(
            "rank",
            "Rank K",
            "Directions of the low-rank part of the covariance (each about 1 MB).",
            6,
            low=2,
            high=20,
        ),
        Setting(
            "weight_decay",
            "Weight decay",
            "L2 penalty on the weights (a Gaussian prior).",
            0.01,
            options=(0.0, 1e-3, 1e-2, 0.1),
        ),
    ),
    internal=(
        Setting(
            "precondition",
            "Adam's iterates",
            "Collect Adam's iterates at the constant rate instead of SGD's (for sharp 1-D "
            "likelihoods that defeat plain SGD).",
            False,
        ),
    ),
)
