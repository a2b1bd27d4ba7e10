"""Training loop: minibatch steps on tensors held on the device, per-epoch metrics, cancel.

The whole training set lives on the device as one tensor and is shuffled with a seeded
permutation each epoch (no DataLoader workers). Every model kind trains through :func:`train`;
how its steps are taken is its :class:`Procedure`: by default Adam on the objective of
:mod:`core.engine.objective` with a per-epoch learning-rate decay (for MLP and dropout MLP the
complexity cost is 0 and the objective is the average NLL). A method with another recipe
(a sampler that keeps weight samples, SWAG's moments, a post-hoc fit) subclasses it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from functools import partial

import torch

from core.engine.device import default_device
from core.engine.objective import kl_weight, minibatch_objective
from core.evaluation.metrics import evaluate_model
from core.progress import ProgressFn, report
from core.training.step import TrainStep, cuda_graphs_enabled

OPTIMIZERS = ("adam", "sgd")
"""The optimisers a :class:`TrainConfig` names (:func:`make_optimizer` builds them)."""


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings every method shares.

    A method's own (its objective's, its sampler's) are its parameters,
    :attr:`~core.engine.interface.ModelConfig.params`.

    Attributes:
        epochs: Number of passes over the training set.
        batch_size: Images per minibatch.
        lr: The optimiser's learning rate.
        optimizer: How a step follows the gradient g, one of :data:`OPTIMIZERS`: ``"adam"``
            (Kingma & Ba 2015) or ``"sgd"``, plain gradient steps θ ← θ − lr·g, the update
            rule Blundell et al. (2015, §3.2) write for Bayes by Backprop.
        seed: Seed of the initial randomness and of the per-epoch shuffles.
        n_eval_samples: Monte-Carlo samples for the per-epoch test error.
        lr_decay: Multiplicative learning-rate decay per epoch.
        weight_decay: L2 coefficient of the optimiser (a Gaussian prior on the weights).

    Raises:
        ValueError: If ``optimizer`` is unknown, ``weight_decay`` is negative, ``epochs < 0``
            or ``batch_size`` is below 1.
    """

    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    optimizer: str = "adam"
    seed: int = 0
    n_eval_samples: int = 10
    lr_decay: float = 1.0  # multiplicative learning-rate decay per epoch
    weight_decay: float = 0.0  # L2 coefficient

    def __post_init__(self) -> None:
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {self.optimizer!r}")
        if self.weight_decay < 0:
            raise ValueError("weight_decay must be ≥ 0")
        if self.epochs < 0 or self.batch_size < 1:
            raise ValueError("epochs must be ≥ 0, batch_size ≥ 1")

    def to_dict(self) -> dict:
        """The settings as a JSON-serialisable dict.

        Returns:
            Every field by name.
        """
        return asdict(self)


@dataclass
class EpochStats:
    """Per-example averages over one epoch (nats), errors as fractions in [0, 1].

    Attributes:
        epoch: Epoch number, 1-based.
        elbo_loss: Training objective per training image (nats).
        nll: Training NLL per training image (nats).
        kl: Complexity cost, averaged over the epoch's minibatches (nats, without the KL
            weight).
        train_error: Fraction of training images misclassified by the mean prediction of
            their training step.
        test_error: Test error after the epoch, of the predictive mean of ``n_eval_samples``
            passes.
        test_nll: Test NLL per image after the epoch (nats).
        seconds: Wall-clock time of the epoch, evaluation included.
    """

    epoch: int
    elbo_loss: float
    nll: float
    kl: float
    train_error: float
    test_error: float
    test_nll: float
    seconds: float


@dataclass
class StepStats:
    """Running averages of the current epoch so far, reported every few steps.

    Attributes:
        epoch: Epoch number, 1-based.
        fraction: Fraction of all steps of the run done, in [0, 1].
        elbo_loss: Training objective per training image so far in this epoch (nats).
        nll: Training NLL per training image so far in this epoch (nats).
        kl: Complexity cost averaged over this epoch's minibatches so far (nats).
        train_error: Fraction of this epoch's training images so far misclassified.
    """

    epoch: int
    fraction: float
    elbo_loss: float
    nll: float
    kl: float
    train_error: float


@dataclass
class TrainResult:
    """What :func:`train` returns.

    Attributes:
        history: The stats of every finished epoch.
        cancelled: Whether ``cancel`` stopped the run before the last epoch finished.
        seconds: Wall-clock time of the run.
        info: What the procedure's :meth:`Procedure.finish` reports (e.g. a post-hoc fit's
            prior precision), stored in the checkpoint metadata.
        cuda_graphs: Whether the steps were replayed from a CUDA graph.
    """

    history: list[EpochStats] = field(default_factory=list)
    cancelled: bool = False
    seconds: float = 0.0
    info: dict = field(default_factory=dict)
    cuda_graphs: bool = False


def make_optimizer(
    model: torch.nn.Module, lr: float, weight_decay: float = 0.0, optimizer: str = "adam"
) -> torch.optim.Optimizer:
    """The optimiser used by training and by the speed benchmark.

    Adam uses the fused kernels; on CUDA it is capturable (its step count and learning rate
    are device tensors, the decay updates the rate in place), so a CUDA graph can hold its
    step (:mod:`core.training.step`). SGD is plain gradient steps, no momentum.

    Args:
        model: The network whose parameters are optimised (already on their device).
        lr: Learning rate.
        weight_decay: L2 coefficient.
        optimizer: One of :data:`OPTIMIZERS`.

    Returns:
        The optimiser.

    Raises:
        ValueError: If ``optimizer`` is unknown.
    """
    params = list(model.parameters())
    if optimizer == "sgd":
        return torch.optim.SGD(params, lr=lr, weight_decay=weight_decay)
    if optimizer != "adam":
        raise ValueError(f"optimizer must be one of {OPTIMIZERS}, got {optimizer!r}")
    if params and params[0].is_cuda:
        rate = torch.tensor(lr, device=params[0].device)
        return torch.optim.Adam(
            params, lr=rate, weight_decay=weight_decay, fused=True, capturable=True
        )
    return torch.optim.Adam(params, lr=lr, weight_decay=weight_decay, fused=True)


OBJECTIVE_DEFAULTS = {"n_samples": 1, "impl": "vmap", "alpha": 0.0, "adversarial_eps": 0.0}
"""The options of :func:`~core.engine.objective.minibatch_objective` a method's parameters
may set (a parameter of that name), and their values otherwise."""
KL_DEFAULTS = {"beta": 1.0, "kl_schedule": "uniform"}
"""The KL weight β and its schedule over an epoch's minibatches (a method's parameters of
those names), and their values otherwise."""

PLAIN = (bool, int, float, str, tuple, list, torch.Tensor, type(None))
"""Values of an optimiser's parameter group that :meth:`Procedure.state_dict` keeps."""


class Procedure:
    """How a method's training steps are taken: by default Adam on the objective.

    :func:`train` calls, in this order: :meth:`network` and :meth:`optimizer` once; for every
    step k = 1..K :meth:`before_step`, :meth:`zero_grad`, the backward pass of the minibatch
    objective, :meth:`step` and :meth:`after_step`; :meth:`end_epoch` after each epoch's steps
    (before its evaluation); :meth:`finish` once after the last epoch (not when cancelled).
    An online learner whose data grows (the bandit agents) calls :meth:`resize` before a step.
    Methods whose steps differ subclass it (their module in :mod:`core.methods`).

    Args:
        config: The optimisation settings every method shares.
        num_data: N, the number of training images.
        total_steps: K, the number of steps of the run.
        params: The method's own parameters (the model's ``config.params``): those named
            in :data:`OBJECTIVE_DEFAULTS` and :data:`KL_DEFAULTS` set the objective, a
            subclass reads its own.

    Attributes:
        graphable: Whether a step (objective, backward, :meth:`step`) may be captured in a
            CUDA graph (:mod:`core.training.step`): True for Adam, whose step is capturable;
            False for SGD, and for a procedure whose optimiser is not capturable or whose
            hooks change the step from Python (it sets it False).
    """

    graphable = True

    def __init__(
        self, config: TrainConfig, num_data: int, total_steps: int, params: dict | None = None
    ) -> None:
        self.config = config
        self.params = dict(params or {})
        self.num_data = num_data
        self.total_steps = total_steps
        self.scheduler: torch.optim.lr_scheduler.LRScheduler | None = None
        self.optimizers: list[torch.optim.Optimizer] = []
        if config.optimizer != "adam":
            self.graphable = False  # SGD's learning rate is not a device tensor

    def objective_options(self) -> dict:
        """The keywords of :func:`~core.engine.objective.minibatch_objective` for this run.

        Returns:
            :data:`OBJECTIVE_DEFAULTS`, with the method's parameters of those names.
        """
        return {k: self.params.get(k, v) for k, v in OBJECTIVE_DEFAULTS.items()}

    def kl_weight(self, i: int, num_batches: int) -> float:
        """The weight of the complexity cost on minibatch ``i`` (1-based) of an epoch.

        Args:
            i: The minibatch's position in the epoch.
            num_batches: M, the minibatches of an epoch.

        Returns:
            β times the schedule's share of minibatch ``i``.
        """
        options = {k: self.params.get(k, v) for k, v in KL_DEFAULTS.items()}
        return options["beta"] * kl_weight(i, num_batches, options["kl_schedule"])

    def network(self, model: torch.nn.Module) -> torch.nn.Module:
        """The network the steps train (the model itself by default).

        Args:
            model: The model being trained.

        Returns:
            The network; the per-epoch evaluation also uses it.
        """
        return model

    def optimizer(self, network: torch.nn.Module) -> torch.optim.Optimizer:
        """The optimiser of the run (:func:`make_optimizer`), its rate decayed every epoch.

        Args:
            network: What :meth:`network` returned.

        Returns:
            The optimiser.
        """
        config = self.config
        optimizer = make_optimizer(network, config.lr, config.weight_decay, config.optimizer)
        self.scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, self.config.lr_decay)
        self.optimizers = [optimizer]
        return optimizer

    def resize(self, num_data: int) -> None:
        """The training set now holds ``num_data`` points (online learning: a bandit's buffer).

        Args:
            num_data: The new N.
        """
        self.num_data = num_data

    def state_dict(self) -> dict:
        """What continues the steps elsewhere: N and the optimisers' and schedule's state.

        Returns:
            Tensors and plain values (for ``torch.save`` and a ``weights_only`` load).
        """
        optimizers = []
        for optimizer in self.optimizers:
            saved = optimizer.state_dict()
            groups = [  # objects set at construction (e.g. SGLD's prior) stay with the optimiser
                {k: v for k, v in group.items() if isinstance(v, PLAIN)}
                for group in saved["param_groups"]
            ]
            optimizers.append({**saved, "param_groups": groups})
        return {
            "num_data": self.num_data,
            "optimizers": optimizers,
            "scheduler": None if self.scheduler is None else self.scheduler.state_dict(),
        }

    def load_state_dict(self, state: dict) -> None:
        """Continue from :meth:`state_dict` of a procedure built alike (after :meth:`optimizer`).

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.resize(state["num_data"])
        for optimizer, saved in zip(self.optimizers, state["optimizers"], strict=True):
            groups = [
                {**{k: v for k, v in group.items() if k != "params"}, **kept}
                for group, kept in zip(optimizer.param_groups, saved["param_groups"], strict=True)
            ]
            optimizer.load_state_dict({**saved, "param_groups": groups})
        if self.scheduler is not None and state["scheduler"] is not None:
            self.scheduler.load_state_dict(state["scheduler"])

    def before_step(self, step: int) -> None:
        """Called before step ``step`` (1..K), e.g. to set its step size."""

    def zero_grad(self, set_to_none: bool = True) -> None:
        """Clear the gradients of every optimiser's parameters (to None, or zeros in place)."""
        for optimizer in self.optimizers:
            optimizer.zero_grad(set_to_none=set_to_none)

    def step(self) -> None:
        """Take the step with the gradients of the objective (the optimiser's by default)."""
        self.optimizers[0].step()

    def after_step(self, network: torch.nn.Module, step: int) -> None:
        """Called after step ``step`` (1..K), e.g. to collect a weight sample."""

    def end_epoch(self, network: torch.nn.Module, epoch: int) -> None:
        """Called after the steps of epoch ``epoch`` (1-based): decays the learning rate."""
        if self.scheduler is not None:
            self.scheduler.step()

    def finish(
        self,
        model: torch.nn.Module,
        network: torch.nn.Module,
        train_data: tuple[torch.Tensor, torch.Tensor],
    ) -> dict:
        """Called once after the last epoch: turn the trained network into the model.

        Args:
            model: The model being trained.
            network: What :meth:`network` returned, trained.
            train_data: The training images and labels, on the training device.

        Returns:
            Facts for the checkpoint metadata ({} by default).
        """
        return {}


def _objective(network, x, y, weight, **options):
    return minibatch_objective(network, x, y, weight=weight, **options)


def train(
    model: torch.nn.Module,
    config: TrainConfig,
    train_data: tuple[torch.Tensor, torch.Tensor],
    test_data: tuple[torch.Tensor, torch.Tensor],
    *,
    device: torch.device | str | None = None,
    progress: ProgressFn | None = None,
    on_epoch: Callable[[EpochStats], None] | None = None,
    cancel: threading.Event | None = None,
    on_step: Callable[[StepStats], None] | None = None,
    procedure: type[Procedure] = Procedure,
) -> TrainResult:
    """Train ``model`` in place.

    Args:
        model: The model; moved to ``device``.
        config: Optimisation settings.
        train_data: Training images ``(N, 1, 28, 28)`` in [0, 1] and labels ``(N,)``.
        test_data: Test images ``(N, 1, 28, 28)`` in [0, 1] and labels ``(N,)``, evaluated
            after each epoch.
        device: Where to train (a device or its name, e.g. ``"cpu"``); None for
            :func:`~core.engine.device.default_device`.
        progress: Gets the fraction of all steps done.
        on_epoch: Gets each epoch's stats.
        cancel: Setting it stops after the current step (the model keeps its last weights
            and ``TrainResult.cancelled`` is True).
        on_step: Gets the epoch's running averages every 20 steps and at its end (for live
            curves; each call waits for the device).
        procedure: How the steps are taken: the method's :class:`Procedure` class (Adam by
            default), built with ``(config, N, K, model.config.params)``.

    Returns:
        The per-epoch history, whether the run was cancelled, its duration and what the
        procedure reported.
    """
    device = torch.device(device) if device is not None else default_device()
    torch.manual_seed(config.seed)
    generator = torch.Generator(device="cpu").manual_seed(config.seed)
    model.to(device)
    x_train, y_train = (t.to(device) for t in train_data)
    x_test, y_test = (t.to(device) for t in test_data)
    n_train = len(x_train)
    num_batches = (n_train + config.batch_size - 1) // config.batch_size
    result, start = TrainResult(), time.perf_counter()
    total_steps = config.epochs * num_batches
    steps = procedure(config, n_train, total_steps, model.config.params)
    network = steps.network(model).to(device)
    steps.optimizer(network)
    objective = partial(_objective, network, **steps.objective_options())
    take_step = TrainStep(
        objective,
        steps.zero_grad,
        steps.step,
        batch_size=config.batch_size,
        graphs=steps.graphable and cuda_graphs_enabled(device),
    )
    for epoch in range(1, config.epochs + 1):
        epoch_start = time.perf_counter()
        order = torch.randperm(n_train, generator=generator).to(device)
        sums = torch.zeros(4, device=device)  # loss, nll, kl·weight-free, errors
        for i in range(1, num_batches + 1):
            if cancel is not None and cancel.is_set():
                result.cancelled = True
                result.seconds = time.perf_counter() - start
                result.cuda_graphs = take_step.graphed
                return result
            idx = order[(i - 1) * config.batch_size : i * config.batch_size]
            step = (epoch - 1) * num_batches + i
            steps.before_step(step)
            weight = steps.kl_weight(i, num_batches)
            sums += take_step(x_train[idx], y_train[idx], weight)
            steps.after_step(network, step)
            if i % 20 == 0 or i == num_batches:
                report(progress, step / total_steps, f"epoch {epoch}/{config.epochs}")
                if on_step is not None:
                    seen = min(i * config.batch_size, n_train)
                    loss, nll, kl, wrong = sums.tolist()
                    on_step(
                        StepStats(
                            epoch, step / total_steps, loss / seen, nll / seen, kl / i, wrong / seen
                        )
                    )
        steps.end_epoch(network, epoch)
        network.eval()
        test = evaluate_model(network, x_test, y_test, config.n_eval_samples)
        network.train()
        loss, nll, kl, wrong = sums.tolist()
        stats = EpochStats(
            epoch=epoch,
            elbo_loss=loss / n_train,
            nll=nll / n_train,
            kl=kl / num_batches,
            train_error=wrong / n_train,
            test_error=test["test_error"],
            test_nll=test["nll"],
            seconds=time.perf_counter() - epoch_start,
        )
        result.history.append(stats)
        if on_epoch is not None:
            on_epoch(stats)
    result.info = steps.finish(model, network, (x_train, y_train))
    result.cuda_graphs = take_step.graphed
    result.seconds = time.perf_counter() - start
    return result
