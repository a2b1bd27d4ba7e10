"""SGLD (Welling & Teh 2011), with the pSGLD preconditioner (Li et al. 2016) as an option.

The network takes Langevin steps θ ← θ − (ε/2)·∇Ũ(θ) + N(0, ε·T) on minibatches
(:class:`~core.methods.sgld.sampler.SGLD`, prior from the method's parameters). The learning rate
``lr`` is that of plain SGD on the average NLL: ε = 2·lr/N, so lr = 0.1 moves the weights as
far per step as SGD with 0.1 (plus the noise). Preconditioned (pSGLD), each weight's step is
about ``lr`` itself, as with Adam. After ``burn_in`` of the steps, ``members``
weight samples are kept at evenly spaced steps; the model predicts from them
(:class:`~core.engine.samples.WeightSamples`).
"""

from __future__ import annotations

import math

import torch

from core.engine.priors import prior_from_dict
from core.engine.samples import WeightSamples
from core.methods.base import PRIOR_SETTINGS, BanditRole, Method, Setting, prior_config
from core.methods.sgld.sampler import SGLD
from core.training import Procedure

SAMPLES_KEPT = Setting(
    "members",
    "Weight samples kept",
    "How many networks of the chain the model keeps and averages (each about 1 MB).",
    8,
    low=2,
    high=50,
)
TEMPERATURE = Setting(
    "temperature",
    "Temperature T",
    "1 samples the posterior; below 1 a 'cold' posterior, less noise and often more accurate.",
    1.0,
    options=(0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0),
    low=0.0,
    high=100.0,
)


PRECONDITION = Setting(
    "precondition",
    "Preconditioned (pSGLD)",
    "Scale each weight's step by its recent gradient size, like RMSprop (Li et al. 2016); the "
    "learning rate is then Adam's (about 10⁻³), not SGD's.",
    False,
)


class LangevinProcedure(Procedure):
    """Langevin steps on the model's own parameters; keeps samples at :meth:`marks`."""

    graphable = False  # its own optimiser and per-step hooks stay eager

    def network(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model itself (it trains as its MLP); reads its prior and sample capacity."""
        self.prior = prior_from_dict(prior_config(self.params))
        self.capacity = self.params["members"]
        self.kept = self.marks()
        return model

    def step_size(self) -> float:
        """ε = 2·lr/N."""
        return 2 * self.config.lr / self.num_data

    def optimizer(self, network: torch.nn.Module) -> torch.optim.Optimizer:
        """The Langevin sampler with ε = 2·lr/N, decayed every epoch by ``lr_decay``."""
        optimizer = SGLD(
            network.parameters(),
            lr=self.step_size(),
            num_data=self.num_data,
            batch_sum=self.config.batch_size,  # the objective sums the minibatch's NLL
            prior=self.prior,
            temperature=self.params["temperature"],
            precondition=self.params["precondition"],
        )
        self.scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, self.config.lr_decay)
        self.optimizers = [optimizer]
        return optimizer

    def resize(self, num_data: int) -> None:
        """A new N: the likelihood's weight N/B and the step ε = 2·lr/N follow it."""
        super().resize(num_data)
        for group in self.optimizers[0].param_groups:
            group.update(num_data=num_data, lr=self.step_size())

    def marks(self) -> set[int]:
        """The steps after which a sample is kept: ``members`` evenly after the burn-in."""
        start = int(self.params["burn_in"] * self.total_steps)
        span = self.total_steps - start
        return {start + math.ceil(span * (i + 1) / self.capacity) for i in range(self.capacity)}

    def after_step(self, network: torch.nn.Module, step: int) -> None:
        """Keep the current weights as a sample at the steps of :meth:`marks`."""
        if step in self.kept:
            network.add_sample()


METHOD = Method(
    kind="sgld",
    order=6,
    title="SGLD (Langevin samples)",
    summary="Gradient steps plus just enough noise to wander over the posterior; the networks "
    "visited after the burn-in are averaged (Welling & Teh 2011).",
    model_class=WeightSamples,
    procedure=LangevinProcedure,
    lr=0.1,
    settings=(
        *PRIOR_SETTINGS,
        TEMPERATURE,
        PRECONDITION,
        Setting(
            "burn_in",
            "Burn-in",
            "Fraction of the run before samples are kept: the chain first has to reach the "
            "posterior.",
            0.5,
            options=(0.0, 0.25, 0.5, 0.75, 0.9),
            low=0.0,
            high=0.99,
        ),
        SAMPLES_KEPT,
    ),
    bandit=BanditRole(agent="SGLD Thompson"),
)
