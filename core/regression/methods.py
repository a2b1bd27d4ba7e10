"""The regression methods: small networks of :mod:`core.engine`, trained full-batch in seconds.

Every playground method (:data:`~core.regression.variants.VARIANTS`) is a network of a method of
:mod:`core.methods` (:func:`core.methods.build_model`) with one input and one output (two for
the heteroscedastic likelihood), plus the likelihood's noise parameter. Its parameters are its
method's settings (:class:`~core.regression.settings.FitSettings`), the prior N(0, σp²) is the
one every method shares with the HMC reference (:mod:`core.regression.hmc`):

* Bayes by Backprop (:class:`~core.methods.bbb.model.BayesMLP`) with a Gaussian prior, Blundell's
  scale mixture ½·N(0, σp²) + ½·N(0, e⁻¹²) (Monte-Carlo complexity cost) or local
  reparameterisation. The loss is the negative ELBO Σₙ NLLₙ + β·KL(q‖p), its NLL averaged over
  S weight draws that are vmapped (``randomness="different"``) like
  :mod:`core.engine.objective`;
* MC dropout (:class:`~core.methods.dropout.model.DropoutMLP`), weight decay (1 − p)/σp² (Gal &
  Ghahramani 2016: the dropout objective with a N(0, σp²) prior);
* a deep ensemble (:class:`~core.methods.ensemble.model.DeepEnsemble`): M MLPs whose stacked
  parameters are trained in one vmapped loop, each a maximum-likelihood estimate with its own
  noise parameter and no weight decay, as in Lakshminarayanan et al. (2017): their random
  initialisations are the only source of diversity (with weight decay 1/σp² the members of a
  1-100-1 network collapsed onto nearly one function outside the data);
* the plain MLP, one MAP network (weight decay 1/σp²): the aleatoric band only;
* SGLD and cyclical SG-MCMC: Langevin dynamics on the whole training set with the N(0, σp²)
  prior (:mod:`core.methods.sgld`, :mod:`core.methods.cyclical`), keeping ``members`` networks
  after the burn-in;
* SWAG: Adam iterates at a constant rate with weight decay 1/σp², a Gaussian fitted to them in
  the second half (:mod:`core.methods.swag`);
* any other method package that can fit a regression, with its own settings.

Training is full-batch: one "epoch" is one step on the whole training set, taken by the
method's own procedure (:class:`~core.training.Procedure`: Adam, the samplers or SWAG's
iterates) with a cosine learning-rate decay to 5 % where the procedure decays its rate; a
learned noise level is fitted alongside by Adam. No branch on the method here: its variant
names its kind and fixed values, its settings come from its method.

Sampled *functions* share their randomness across inputs: BBB draws one weight matrix per
pass (weight sampling, also for a model trained with LRT, whose per-input noise would give
jagged curves), MC dropout one mask per hidden unit per pass. Each input's predictive is the
same as with per-input noise; only the joint over inputs differs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch import nn

from core.engine.interface import ModelConfig
from core.engine.objective import alpha_energy
from core.engine.seeding import seeded
from core.methods import build_model, check_config, params_for
from core.methods import method as lab_method
from core.methods.base import TRAIN_FIELDS
from core.progress import ProgressFn, report
from core.regression.data import RegressionData
from core.regression.likelihood import gaussian_nll, mean_and_log_var, output_width
from core.regression.settings import FitSettings
from core.regression.variants import check_method
from core.training import TrainConfig
from core.training.loop import KL_DEFAULTS, OBJECTIVE_DEFAULTS

FINAL_LR_FRACTION = 0.05
"""The learning rate decays from ``lr`` to this fraction of it (cosine schedule)."""
LEARNED_NOISE_INIT = 0.1
"""Initial σ of the learned homoscedastic noise, as a fraction of the targets' std."""


def model_config(name: str, settings: FitSettings) -> ModelConfig:
    """The :class:`~core.engine.interface.ModelConfig` of a playground method's network.

    Args:
        name: A key of :data:`~core.regression.variants.VARIANTS`.
        settings: The hyperparameters.

    Returns:
        A 1-input network with the likelihood's output width, its method's parameters from
        :meth:`~core.regression.settings.FitSettings.method_values`.
    """
    variant = check_method(name)
    return check_config(
        ModelConfig(
            kind=variant.kind,
            hidden=settings.hidden,
            in_features=1,
            num_classes=output_width(settings.noise_model),
            params=params_for(variant.kind, settings.method_values(variant)),
        )
    )


class RegressionNet(nn.Module):
    """A method's network and its likelihood's noise parameter.

    Attributes:
        method: The key of :data:`~core.regression.variants.VARIANTS`.
        noise_model: The likelihood.
        body: The :mod:`core.engine` network, 1 input.
        log_noise: log σ: a learned parameter (``(M,)`` for M networks that are the passes,
            :attr:`~core.regression.variants.Variant.members_are_passes`, a scalar otherwise)
            for ``"learned"``, a fixed buffer for ``"fixed"``, unused for
            ``"heteroscedastic"``.
    """

    def __init__(self, method: str, settings: FitSettings, data: RegressionData) -> None:
        """Build the network of ``method`` (initialised from the global torch RNG).

        Args:
            method: A key of :data:`~core.regression.variants.VARIANTS` that is trained (not
                NUTS).
            settings: The hyperparameters.
            data: The training set (sets the noise's scale).
        """
        super().__init__()
        self.method, self.noise_model = method, settings.noise_model
        self.body = build_model(model_config(method, settings))
        members = self.body.config.params.get("members")
        shape = (members,) if check_method(method).members_are_passes else ()
        if settings.noise_model == "learned":
            scale = float(data.y_train.std()) if len(data) > 1 else 1.0
            start = math.log(max(LEARNED_NOISE_INIT * scale, 1e-3))
            self.log_noise = nn.Parameter(torch.full(shape, start))
        else:
            self.register_buffer(
                "log_noise", torch.full(shape, math.log(settings.noise_sigma(data)))
            )

    def _log_noise(self) -> torch.Tensor:
        """The noise level log σ, broadcastable to ``(passes, B)``."""
        return self.log_noise[:, None] if self.log_noise.dim() else self.log_noise

    def outputs(
        self, x: torch.Tensor, n_samples: int, *, training: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Means and log-variances of the passes on ``x``.

        Training passes are the network's own (:meth:`~core.engine.interface.MonteCarloModule.
        training_passes`: BBB's S weight or LRT draws with their KL, MC dropout's masks per
        input, an ensemble's members); prediction passes are sampled functions, one network
        per pass shared by all inputs (:meth:`~core.engine.interface.MonteCarloModule.
        sample_functions`).

        Args:
            x: Inputs ``(B,)``.
            n_samples: Passes (for the kinds that sample; an ensemble gives its M members).
            training: Whether this is a training pass (with the complexity cost).

        Returns:
            ``(mean, log_var, kl)``: ``(P, B)`` each for P passes, and the complexity cost
            per pass ``(P,)`` in nats (zeros without a weight posterior).
        """
        xs = x[:, None]
        if training:
            out, kl = self.body.training_passes(xs, n_samples)
        else:
            out = self.body.sample_functions(xs, n_samples)
            kl = torch.zeros(out.shape[0], device=x.device)
        mean, log_var = mean_and_log_var(out, self.noise_model, self._log_noise())
        return mean, log_var, kl

    def learned_noise(self) -> list[float] | None:
        """The learned σ (one per ensemble member).

        Returns:
            σ values, or None unless the noise model is ``"learned"``.
        """
        if self.noise_model != "learned":
            return None
        return torch.exp(self.log_noise.detach()).flatten().tolist()


def training_loss(net: RegressionNet, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The method's full-batch objective (nats, summed over the training points).

    (1/P)·Σₚ Σₙ NLLₙₚ + β·(1/P)·Σₚ KLₚ over the network's training passes: BBB's −ELBO over S
    weight draws (its ``n_samples`` and ``beta`` parameters; Monte Carlo KL for the mixture
    prior), an ensemble's members (whose parameters are disjoint, so each gets its own
    gradient, scaled by 1/M, to which Adam is invariant), one pass otherwise. The prior of a
    point estimate is its weight decay, a sampler's is in its update.

    Args:
        net: The network.
        x: Training inputs ``(N,)``.
        y: Training targets ``(N,)``.

    Returns:
        The scalar loss.
    """
    params = net.body.config.params
    n_samples = params.get("n_samples", OBJECTIVE_DEFAULTS["n_samples"])
    beta = params.get("beta", KL_DEFAULTS["beta"])
    mean, log_var, kl = net.outputs(x, n_samples, training=True)
    nll = gaussian_nll(y, mean, log_var)  # (P, N)
    return alpha_energy(nll, 0.0) + beta * kl.mean()


@dataclass
class Training:
    """What :func:`train_network` returns.

    Attributes:
        net: The trained network.
        losses: Loss per training point after each step (nats; for an ensemble, per point
            and member).
        seconds: Wall-clock time of the training loop, without the time spent in the
            ``progress`` and ``on_loss`` callbacks (drawing a live chart is not training).
        cpu_seconds: CPU time of the training thread over the same steps (callbacks
            excluded): unlike wall-clock time it does not grow when other processes share the
            cores; torch's intra-op helper threads are not counted (with one thread, as in
            ``OMP_NUM_THREADS=1``, there are none).
    """

    net: RegressionNet
    losses: list[float]
    seconds: float
    cpu_seconds: float


def train_network(
    method: str,
    data: RegressionData,
    settings: FitSettings,
    *,
    progress: ProgressFn | None = None,
    on_loss: Callable[[list[float]], None] | None = None,
    report_every: int | None = None,
) -> Training:
    """Build and train a method's network, seeded by ``settings.seed``.

    The global torch RNG is used inside :func:`torch.random.fork_rng`, so the caller's random
    state is unchanged.

    Args:
        method: A key of :data:`~core.regression.variants.VARIANTS` that is trained (not
            NUTS).
        data: The training set.
        settings: The hyperparameters.
        progress: Gets the fraction of steps done.
        on_loss: Gets the loss history so far, every ``report_every`` steps and at the end.
        report_every: Steps between reports; None for about 10 reports.

    Returns:
        The trained network, its loss history and the training time.

    Raises:
        ValueError: If ``method`` is unknown or sampled by NUTS.
    """
    variant = check_method(method)
    if variant.nuts:
        raise ValueError(f"{method} is sampled by NUTS: use core.regression.hmc.run_nuts")
    report_every = report_every or max(1, settings.epochs // 10)
    x, y = data.x_train, data.y_train
    losses: list[float] = []
    values = settings.method_values(variant)
    with seeded(settings.seed, cuda=False):
        net = RegressionNet(method, settings, data)
        unit = lab_method(variant.kind)
        common = {
            "epochs": settings.epochs,
            "batch_size": len(data),
            "lr": settings.lr,
            "weight_decay": unit.prior_weight_decay(net.body.config, settings.prior_scale),
        }
        training = {k: v for k, v in values.items() if k in TRAIN_FIELDS}
        config = TrainConfig(**common | training)
        steps = unit.procedure(config, len(data), settings.epochs, net.body.config.params)
        body = steps.network(net.body)
        first = steps.optimizer(body)
        decayed = [first] if steps.scheduler is not None else []
        steps.scheduler = None  # replaced by the cosine schedule below
        noise = []
        if isinstance(net.log_noise, nn.Parameter):
            noise = [torch.optim.Adam([net.log_noise], lr=settings.lr)]
        schedules = [
            torch.optim.lr_scheduler.CosineAnnealingLR(
                o, settings.epochs, eta_min=o.param_groups[0]["lr"] * FINAL_LR_FRACTION
            )
            for o in decayed + noise
        ]
        start, cpu_start, display, cpu_display = time.perf_counter(), time.thread_time(), 0.0, 0.0
        history = torch.empty(settings.epochs)
        for step in range(1, settings.epochs + 1):
            steps.before_step(step)
            loss = training_loss(net, x, y)
            steps.zero_grad()
            for optimizer in noise:
                optimizer.zero_grad(set_to_none=True)
            loss.backward()
            steps.step()
            for optimizer in noise:
                optimizer.step()
            for schedule in schedules:
                schedule.step()
            steps.after_step(body, step)
            history[step - 1] = loss.detach()
            if step % report_every == 0 or step == settings.epochs:
                shown, cpu_shown = time.perf_counter(), time.thread_time()
                losses = (history[:step] / len(data)).tolist()
                report(progress, step / settings.epochs, f"step {step}/{settings.epochs}")
                if on_loss is not None:
                    on_loss(losses)
                display += time.perf_counter() - shown
                cpu_display += time.thread_time() - cpu_shown
        steps.finish(net.body, body, (x[:, None], y))
        net.eval()
        seconds = time.perf_counter() - start - display
        cpu_seconds = time.thread_time() - cpu_start - cpu_display
    return Training(net, losses, seconds, cpu_seconds)


@torch.no_grad()
def predict(
    net: RegressionNet, x: torch.Tensor, n_samples: int, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Sampled functions of a trained network on ``x``.

    Args:
        net: The trained network.
        x: Inputs ``(B,)``.
        n_samples: Passes for BBB and MC dropout (the ensemble gives its M members, the MLP
            its one network).
        seed: Seed of the prediction noise (the caller's RNG state is unchanged).

    Returns:
        ``(mean, log_var)``, each ``(P, B)``: each pass's function f(x) and its noise
        log-variance.
    """
    with seeded(seed, cuda=False):
        mean, log_var, _ = net.outputs(x, n_samples)
    return mean, log_var
