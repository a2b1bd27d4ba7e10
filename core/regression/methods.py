"""The regression methods: small networks of :mod:`core.engine`, trained full-batch in seconds.

Every method is a network of the lab's model kinds (:func:`core.methods.build_model`)
with one input and one output (two for the heteroscedastic likelihood), plus the likelihood's
noise parameter:

* ``"bbb"``, ``"bbb_mixture"``, ``"bbb_lrt"``: Bayes by Backprop
  (:class:`~core.methods.bbb.model.BayesMLP` of :class:`~core.engine.layers.BayesLinear`
  layers) with a Gaussian prior N(0, σp²), Blundell's scale mixture ½·N(0, σp²) + ½·N(0, e⁻¹²)
  (Monte-Carlo
  complexity cost), or a Gaussian prior trained with local reparameterisation. The loss is the
  negative ELBO Σₙ NLLₙ + β·KL(q‖p), its NLL averaged over S weight draws that are vmapped
  (``randomness="different"``) exactly like :mod:`core.engine.objective`;
* ``"dropout"``: MC dropout (:class:`~core.methods.dropout.model.DropoutMLP`), weight decay
  (1 − p)/σp²
  (Gal & Ghahramani 2016: the dropout objective with a N(0, σp²) prior);
* ``"ensemble"``: a deep ensemble (:class:`~core.methods.ensemble.model.DeepEnsemble`): M MLPs whose
  stacked parameters (``torch.func.stack_module_state``) are trained in one vmapped loop, each
  a maximum-likelihood estimate with its own noise parameter and no weight decay, as in
  Lakshminarayanan et al. (2017): their random initialisations are the only source of
  diversity (with weight decay 1/σp² the members of a 1-100-1 network collapsed onto nearly
  one function outside the data);
* ``"mlp"``: one MAP network (weight decay 1/σp²): the aleatoric band only;
* ``"sgld"``, ``"sgmcmc_cyclic"``: Langevin dynamics on the whole training set with the
  N(0, σp²) prior (:mod:`core.methods.sgld`, :mod:`core.methods.cyclical`), keeping
  ``chain_samples`` networks after the burn-in;
* ``"swag"``: SGD with momentum and weight decay 1/σp², a Gaussian fitted to its iterates in
  the second half (:mod:`core.methods.swag`);
* ``"hmc"``: the reference posterior of the same MLP by NUTS (:mod:`core.regression.hmc`).

Training is full-batch: one "epoch" is one step on the whole training set, taken by the
method's own procedure (:class:`~core.training.Procedure`: Adam for the first five, the
samplers and SGD for the others) with a cosine learning-rate decay to 5 % where the procedure
decays its rate; a learned noise level is fitted alongside by Adam. No branch on the method
here: its table entry (:data:`METHODS`) names its kind, its variant and its settings.

Sampled *functions* share their randomness across inputs: BBB draws one weight matrix per
pass (weight sampling, also for a model trained with LRT, whose per-input noise would give
jagged curves), MC dropout one mask per hidden unit per pass. Each input's predictive is the
same as with per-input noise; only the joint over inputs differs.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields

import torch
from torch import nn

from core.engine.interface import ModelConfig
from core.engine.objective import alpha_energy
from core.engine.seeding import seeded
from core.methods import build_model, check_config, params_for
from core.methods import method as lab_method
from core.methods.base import MIXTURE_SIGMA2, TRAIN_FIELDS
from core.progress import ProgressFn, report
from core.regression.data import RegressionData
from core.regression.likelihood import (
    check_noise_model,
    gaussian_nll,
    mean_and_log_var,
    output_width,
)
from core.training import TrainConfig


@dataclass(frozen=True)
class MethodInfo:
    """One playground method: a method of :mod:`core.methods` with its variant and settings.

    Attributes:
        title: Human name.
        kind: The method of its network, a key of :data:`core.methods.METHODS`.
        notice: What to look for in its picture.
        keys: The :class:`FitSettings` fields its result depends on (its cache key).
        model: Variant parameters of its method, from the settings (e.g. the mixture prior,
            local reparameterisation).
        training: Its training: fields of :class:`~core.training.TrainConfig` and
            parameters of its method, from the settings (e.g. a sampler's step size).
        per_member_noise: Whether each of its networks learns its own noise level (an
            ensemble's members are separate maximum-likelihood fits).
        nuts: Whether it is sampled by NUTS (:mod:`core.regression.hmc`) instead of trained.
    """

    title: str
    kind: str
    notice: str
    keys: tuple[str, ...] = ()
    model: Callable[[FitSettings], dict] = lambda settings: {}
    training: Callable[[FitSettings], dict] = lambda settings: {}
    per_member_noise: bool = False
    nuts: bool = False


GRADIENT_KEYS = ("prior_sigma", "epochs", "lr")
BBB_KEYS = (*GRADIENT_KEYS, "n_samples", "beta", "init_sigma", "n_predict")
SAMPLER_KEYS = ("prior_sigma", "epochs", "sampler_lr", "temperature", "chain_samples", "n_predict")


def _mixture(settings: FitSettings) -> dict:
    return {"prior": "mixture", "pi": 0.5, "sigma1": settings.prior_sigma, "sigma2": MIXTURE_SIGMA2}


def _chain(settings: FitSettings) -> dict:
    return {"members": settings.chain_samples}


def _langevin(settings: FitSettings) -> dict:
    return {
        "lr": settings.sampler_lr,
        "temperature": settings.temperature,
        "burn_in": 0.5,
        "precondition": True,
    }


METHODS: dict[str, MethodInfo] = {
    "bbb": MethodInfo(
        "BBB, Gaussian prior",
        "bbb",
        "Mean-field VI: the band widens away from the data, but is often too narrow between "
        "clusters and too wide on the data when β = 1 (the KL pulls the weights to the prior).",
        BBB_KEYS,
    ),
    "bbb_mixture": MethodInfo(
        "BBB, scale-mixture prior",
        "bbb",
        "Blundell's spike-and-slab-like prior lets many weights sit at zero with tiny σ: "
        "compare its band with the Gaussian prior's.",
        BBB_KEYS,
        model=_mixture,
    ),
    "bbb_lrt": MethodInfo(
        "BBB + local reparameterisation",
        "bbb",
        "The same posterior as BBB with a Gaussian prior, trained with lower-variance "
        "gradients: the picture should match BBB's, in similar time.",
        BBB_KEYS,
        model=lambda settings: {"impl": "vmap_lrt"},
    ),
    "dropout": MethodInfo(
        "MC dropout",
        "dropout",
        "Dropout's band grows roughly linearly away from the data but does not widen between "
        "the clusters; its width is set by p, not by the data.",
        (*GRADIENT_KEYS, "dropout", "n_predict"),
    ),
    "ensemble": MethodInfo(
        "Deep ensemble",
        "ensemble",
        "M independently initialised networks agree on the data and disagree away from it: "
        "often the closest to HMC in shape, with only M distinct curves.",
        ("epochs", "lr", "members"),
        per_member_noise=True,
    ),
    "mlp": MethodInfo(
        "Plain MLP",
        "mlp",
        "One network, no epistemic uncertainty: the band is the noise only and does not widen "
        "anywhere, however far from the data.",
        GRADIENT_KEYS,
    ),
    "sgld": MethodInfo(
        "SGLD (Langevin samples)",
        "sgld",
        "Gradient steps plus noise, on the whole data set: with a small enough step the kept "
        "networks are posterior samples of the same network and prior as HMC's, so its band "
        "should approach HMC's; with too few steps it stays too narrow.",
        SAMPLER_KEYS,
        model=_chain,
        training=_langevin,
    ),
    "sgmcmc_cyclic": MethodInfo(
        "Cyclical SG-MCMC",
        "sgmcmc_cyclic",
        "The step size restarts large in every cycle, so the chain can leave one mode for "
        "another before sampling at small steps: compare its band with SGLD's and HMC's.",
        (*SAMPLER_KEYS, "cycles"),
        model=_chain,
        training=lambda settings: (
            _langevin(settings)
            | {"lr": 4 * settings.sampler_lr, "cycles": settings.cycles, "exploration": 0.5}
        ),
    ),
    "swag": MethodInfo(
        "SWAG",
        "swag",
        "A Gaussian fitted to the weights SGD visits in the second half of training: the band "
        "reflects how far SGD wanders, not the posterior itself.",
        (*GRADIENT_KEYS, "swag_lr", "rank", "n_predict"),
        model=lambda settings: {"rank": settings.rank},
        training=lambda settings: {"lr": settings.swag_lr, "burn_in": 0.5, "precondition": True},
    ),
    "hmc": MethodInfo(
        "HMC (NUTS) reference",
        "mlp",
        "Samples from the exact posterior of the same network and prior (up to Monte-Carlo "
        "error): the picture the approximations try to match.",
        ("prior_sigma", "hmc_samples", "hmc_warmup", "hmc_tree_depth"),
        nuts=True,
    ),
}
"""Method name → its description, in display order."""

DEFAULT_METHODS = ["bbb", "dropout", "ensemble", "hmc"]
"""The methods the playground shows first; their fits of every preset's default data ship with
the lab (:mod:`core.regression.study`)."""

FINAL_LR_FRACTION = 0.05
"""The learning rate decays from ``lr`` to this fraction of it (cosine schedule)."""
LEARNED_NOISE_INIT = 0.1
"""Initial σ of the learned homoscedastic noise, as a fraction of the targets' std."""


@dataclass(frozen=True)
class FitSettings:
    """Hyperparameters of every method; each method uses the fields of :meth:`for_method`.

    Attributes:
        hidden: Hidden layer widths (ReLU), e.g. ``(100,)`` for a 1-100-1 network.
        noise_model: One of :data:`core.regression.likelihood.NOISE_MODELS`.
        fixed_noise: σ of the ``"fixed"`` likelihood; None for the data's own noise level
            (0.1 for user data).
        epochs: Full-batch Adam steps.
        lr: Adam's learning rate.
        n_samples: BBB: Monte-Carlo weight draws S per step.
        prior_sigma: σp of the N(0, σp²) weight prior (the wide component of the mixture);
            the MLP gets weight decay 1/σp², MC dropout (1 − p)/σp², the ensemble none.
        beta: BBB: multiplies the KL term.
        init_sigma: BBB: initial posterior σ of every weight.
        dropout: MC dropout probability p.
        members: Ensemble size M.
        sampler_lr: SGLD and cyclical SG-MCMC (both preconditioned, pSGLD): the step size,
            about each weight's step as with Adam (ε = 2·lr/N; cyclical SG-MCMC starts its
            cycles at 4× this).
        temperature: SGLD and cyclical SG-MCMC: T of the sampled posterior.
        chain_samples: SGLD and cyclical SG-MCMC: networks of the chain kept.
        cycles: Cyclical SG-MCMC: step-size cycles.
        swag_lr: SWAG: the constant learning rate of its (Adam) iterates.
        rank: SWAG: deviation columns K of the low-rank covariance.
        n_predict: Monte-Carlo passes per prediction (BBB, MC dropout).
        seed: Seed of the initialisation and of all training and prediction noise.
        hmc_samples: HMC: kept NUTS samples.
        hmc_warmup: HMC: adaptation steps (discarded).
        hmc_tree_depth: HMC: NUTS's maximum tree depth (at most 2^depth leapfrog steps per
            sample).

    Raises:
        ValueError: If a value is out of range.
    """

    hidden: tuple[int, ...] = (100,)
    noise_model: str = "learned"
    fixed_noise: float | None = None
    epochs: int = 2000
    lr: float = 1e-2
    n_samples: int = 4
    prior_sigma: float = 1.0
    beta: float = 1.0
    init_sigma: float = 1e-2
    dropout: float = 0.1
    members: int = 5
    sampler_lr: float = 2e-3
    temperature: float = 1.0
    chain_samples: int = 50
    cycles: int = 4
    swag_lr: float = 1e-2
    rank: int = 10
    n_predict: int = 100
    seed: int = 0
    hmc_samples: int = 300
    hmc_warmup: int = 300
    hmc_tree_depth: int = 7

    def __post_init__(self) -> None:
        check_noise_model(self.noise_model)
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        if any(h < 1 for h in self.hidden):
            raise ValueError(f"hidden widths must be ≥ 1, got {self.hidden}")
        positive = {
            "lr": self.lr,
            "prior_sigma": self.prior_sigma,
            "init_sigma": self.init_sigma,
            "sampler_lr": self.sampler_lr,
            "swag_lr": self.swag_lr,
        }
        if self.fixed_noise is not None:
            positive["fixed_noise"] = self.fixed_noise
        for name, value in positive.items():
            if not value > 0:
                raise ValueError(f"{name} must be > 0, got {value}")
        if self.beta < 0:
            raise ValueError(f"beta must be ≥ 0, got {self.beta}")
        if not 0 <= self.dropout < 1:
            raise ValueError(f"dropout must be in [0, 1), got {self.dropout}")
        counts = {
            "epochs": self.epochs,
            "n_samples": self.n_samples,
            "members": self.members,
            "chain_samples": self.chain_samples,
            "cycles": self.cycles,
            "n_predict": self.n_predict,
            "hmc_samples": self.hmc_samples,
            "hmc_tree_depth": self.hmc_tree_depth,
        }
        for name, value in counts.items():
            if value < 1:
                raise ValueError(f"{name} must be ≥ 1, got {value}")
        if self.temperature < 0 or self.rank < 2:
            raise ValueError("temperature must be ≥ 0 and rank ≥ 2")
        if self.hmc_warmup < 0:
            raise ValueError(f"hmc_warmup must be ≥ 0, got {self.hmc_warmup}")

    def to_dict(self) -> dict:
        """Every field by name, JSON-serialisable (``hidden`` as a list).

        Returns:
            The settings.
        """
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> FitSettings:
        """Settings from :meth:`to_dict` (unknown keys are ignored).

        Args:
            d: Field values by name; missing fields take their defaults.

        Returns:
            The validated settings.
        """
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})

    def noise_sigma(self, data: RegressionData) -> float:
        """σ of the ``"fixed"`` likelihood for ``data``.

        Args:
            data: The training set.

        Returns:
            ``fixed_noise``, else the preset's noise level (its largest σ for a varying one),
            else 0.1; never below 10⁻³.
        """
        if self.fixed_noise is not None:
            return float(self.fixed_noise)
        return max(float(data.key.get("noise", 0.1)), 1e-3)

    def for_method(self, method: str, data: RegressionData) -> dict:
        """The settings ``method`` depends on, its cache key.

        Changing any other setting leaves the method's stored result valid.

        Args:
            method: A key of :data:`METHODS`.
            data: The training set (resolves the fixed noise level).

        Returns:
            Field name → value, JSON-serialisable.

        Raises:
            ValueError: If ``method`` is unknown.
        """
        check_method(method)
        keys = ["hidden", "noise_model", "seed", *METHODS[method].keys]
        d = self.to_dict()
        out = {k: d[k] for k in keys}
        if self.noise_model == "fixed":
            out["fixed_noise"] = self.noise_sigma(data)
        return out


def check_method(method: str) -> None:
    """Reject an unknown method.

    Args:
        method: The name to check.

    Raises:
        ValueError: If ``method`` is not a key of :data:`METHODS`.
    """
    if method not in METHODS:
        raise ValueError(f"method must be one of {tuple(METHODS)}, got {method!r}")


def model_config(method: str, settings: FitSettings) -> ModelConfig:
    """The :class:`~core.engine.interface.ModelConfig` of a method's network.

    Args:
        method: A key of :data:`METHODS`.
        settings: The hyperparameters.

    Returns:
        A 1-input network with the likelihood's output width.
    """
    check_method(method)
    info = METHODS[method]
    values = {
        "prior": "gaussian",
        "prior_sigma": settings.prior_sigma,
        "init_sigma": settings.init_sigma,
        "impl": "vmap",
        "dropout": settings.dropout,
        "members": settings.members,
    }
    values |= info.model(settings) | info.training(settings)
    return check_config(
        ModelConfig(
            kind=info.kind,
            hidden=settings.hidden,
            in_features=1,
            num_classes=output_width(settings.noise_model),
            params=params_for(info.kind, values),
        )
    )


class RegressionNet(nn.Module):
    """A method's network and its likelihood's noise parameter.

    Attributes:
        method: The key of :data:`METHODS`.
        noise_model: The likelihood.
        body: The :mod:`core.engine` network, 1 input.
        log_noise: log σ: a learned parameter (``(M,)`` for an ensemble, a scalar otherwise)
            for ``"learned"``, a fixed buffer for ``"fixed"``, unused for
            ``"heteroscedastic"``.
    """

    def __init__(self, method: str, settings: FitSettings, data: RegressionData) -> None:
        """Build the network of ``method`` (initialised from the global torch RNG).

        Args:
            method: A key of :data:`METHODS` that is trained (not NUTS).
            settings: The hyperparameters.
            data: The training set (sets the noise's scale).
        """
        super().__init__()
        self.method, self.noise_model = method, settings.noise_model
        self.body = build_model(model_config(method, settings))
        shape = (settings.members,) if METHODS[method].per_member_noise else ()
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


def training_loss(
    net: RegressionNet, x: torch.Tensor, y: torch.Tensor, settings: FitSettings
) -> torch.Tensor:
    """The method's full-batch objective (nats, summed over the training points).

    (1/P)·Σₚ Σₙ NLLₙₚ + β·(1/P)·Σₚ KLₚ over the network's training passes: BBB's −ELBO over S
    weight draws (Monte Carlo KL for the mixture prior), an ensemble's members (whose
    parameters are disjoint, so each gets its own gradient, scaled by 1/M, to which Adam is
    invariant), one pass otherwise. The prior of a point estimate is its weight decay, a
    sampler's is in its update.

    Args:
        net: The network.
        x: Training inputs ``(N,)``.
        y: Training targets ``(N,)``.
        settings: The hyperparameters.

    Returns:
        The scalar loss.
    """
    mean, log_var, kl = net.outputs(x, settings.n_samples, training=True)
    nll = gaussian_nll(y, mean, log_var)  # (P, N)
    return alpha_energy(nll, 0.0) + settings.beta * kl.mean()


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
        method: A key of :data:`METHODS` that is trained (not NUTS).
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
    check_method(method)
    if METHODS[method].nuts:
        raise ValueError(f"{method} is sampled by NUTS: use core.regression.hmc.run_nuts")
    report_every = report_every or max(1, settings.epochs // 10)
    x, y = data.x_train, data.y_train
    losses: list[float] = []
    info = METHODS[method]
    with seeded(settings.seed, cuda=False):
        net = RegressionNet(method, settings, data)
        unit = lab_method(info.kind)
        common = {
            "epochs": settings.epochs,
            "batch_size": len(data),
            "lr": settings.lr,
            "weight_decay": unit.prior_weight_decay(net.body.config, settings.prior_sigma),
        }
        training = {k: v for k, v in info.training(settings).items() if k in TRAIN_FIELDS}
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
            loss = training_loss(net, x, y, settings)
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
