"""Training loop: Adam on tensors held on the device, per-epoch metrics, progress, cancel.

The whole training set lives on the device as one tensor and is shuffled with a seeded
permutation each epoch (no DataLoader workers). Works for all model kinds: for MLP and
dropout MLP the complexity cost is 0 and the objective is the summed NLL.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import torch

from core.engine.device import default_device
from core.engine.objective import ESTIMATORS, KL_SCHEDULES, kl_weight, minibatch_objective
from core.evaluation.metrics import evaluate_model
from core.progress import ProgressFn, report


@dataclass(frozen=True)
class TrainConfig:
    """Optimisation settings.

    Attributes:
        epochs: Number of passes over the training set.
        batch_size: Images per minibatch.
        lr: Adam's learning rate.
        n_samples: Monte-Carlo samples S per training step.
        impl: The S-sample estimator, a key of :data:`core.engine.objective.ESTIMATORS`.
        kl_schedule: KL weighting over minibatches, one of
            :data:`core.engine.objective.KL_SCHEDULES`.
        beta: Multiplies the KL term.
        seed: Seed of the initial randomness and of the per-epoch shuffles.
        n_eval_samples: Monte-Carlo samples for the per-epoch test error.
        lr_decay: Multiplicative learning-rate decay per epoch.
        alpha: When > 0, the α-divergence energy instead of the average NLL.
        weight_decay: L2 coefficient of Adam (the complexity term of MC dropout).
        adversarial_eps: Ensembles: FGSM step (pixel units) of adversarial training, 0 = off.

    Raises:
        ValueError: If ``impl`` or ``kl_schedule`` is unknown, ``alpha`` or ``weight_decay``
            is negative, ``epochs < 0``, or ``batch_size`` or ``n_samples`` is below 1.
    """

    epochs: int = 10
    batch_size: int = 128
    lr: float = 1e-3
    n_samples: int = 1
    impl: str = "vmap"
    kl_schedule: str = "uniform"
    beta: float = 1.0
    seed: int = 0
    n_eval_samples: int = 10
    lr_decay: float = 1.0  # multiplicative learning-rate decay per epoch
    alpha: float = 0.0  # α-divergence energy instead of the average NLL when > 0
    weight_decay: float = 0.0  # L2 coefficient of Adam (the complexity term of MC dropout)
    adversarial_eps: float = 0.0  # ensembles: also train on each member's FGSM examples

    def __post_init__(self) -> None:
        if self.impl not in ESTIMATORS:
            raise ValueError(f"impl must be one of {tuple(ESTIMATORS)}")
        if self.alpha < 0 or self.weight_decay < 0:
            raise ValueError("alpha and weight_decay must be ≥ 0")
        if self.kl_schedule not in KL_SCHEDULES:
            raise ValueError(f"kl_schedule must be one of {KL_SCHEDULES}")
        if self.epochs < 0 or self.batch_size < 1 or self.n_samples < 1:
            raise ValueError("epochs must be ≥ 0, batch_size and n_samples ≥ 1")

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
    """

    history: list[EpochStats] = field(default_factory=list)
    cancelled: bool = False
    seconds: float = 0.0


def make_optimizer(
    model: torch.nn.Module, lr: float, weight_decay: float = 0.0
) -> torch.optim.Adam:
    """The Adam optimiser used by training and by the speed benchmark (fused kernels).

    Args:
        model: The network whose parameters are optimised.
        lr: Learning rate.
        weight_decay: L2 coefficient.

    Returns:
        The optimiser.
    """
    return torch.optim.Adam(model.parameters(), lr=lr, weight_decay=weight_decay, fused=True)


def train(
    model: torch.nn.Module,
    config: TrainConfig,
    train_data: tuple[torch.Tensor, torch.Tensor],
    test_data: tuple[torch.Tensor, torch.Tensor],
    *,
    device: torch.device | None = None,
    progress: ProgressFn | None = None,
    on_epoch: Callable[[EpochStats], None] | None = None,
    cancel: threading.Event | None = None,
    on_step: Callable[[StepStats], None] | None = None,
) -> TrainResult:
    """Train ``model`` in place.

    Args:
        model: The network; moved to ``device``.
        config: Optimisation settings.
        train_data: Training images ``(N, 1, 28, 28)`` in [0, 1] and labels ``(N,)``.
        test_data: Test images ``(N, 1, 28, 28)`` in [0, 1] and labels ``(N,)``, evaluated
            after each epoch.
        device: Where to train; None for :func:`~core.engine.device.default_device`.
        progress: Gets the fraction of all steps done.
        on_epoch: Gets each epoch's stats.
        cancel: Setting it stops after the current step (the model keeps its last weights
            and ``TrainResult.cancelled`` is True).
        on_step: Gets the epoch's running averages every 20 steps and at its end (for live
            curves; each call waits for the device).

    Returns:
        The per-epoch history, whether the run was cancelled and its duration.
    """
    device = device or default_device()
    torch.manual_seed(config.seed)
    generator = torch.Generator(device="cpu").manual_seed(config.seed)
    model.to(device)
    x_train, y_train = (t.to(device) for t in train_data)
    x_test, y_test = (t.to(device) for t in test_data)
    n_train = len(x_train)
    num_batches = (n_train + config.batch_size - 1) // config.batch_size
    optimizer = make_optimizer(model, config.lr, config.weight_decay)
    scheduler = torch.optim.lr_scheduler.ExponentialLR(optimizer, gamma=config.lr_decay)
    result, start = TrainResult(), time.perf_counter()
    total_steps = config.epochs * num_batches
    for epoch in range(1, config.epochs + 1):
        epoch_start = time.perf_counter()
        order = torch.randperm(n_train, generator=generator).to(device)
        sums = torch.zeros(4, device=device)  # loss, nll, kl·weight-free, errors
        for i in range(1, num_batches + 1):
            if cancel is not None and cancel.is_set():
                result.cancelled = True
                result.seconds = time.perf_counter() - start
                return result
            idx = order[(i - 1) * config.batch_size : i * config.batch_size]
            xb, yb = x_train[idx], y_train[idx]
            weight = config.beta * kl_weight(i, num_batches, config.kl_schedule)
            terms = minibatch_objective(
                model,
                xb,
                yb,
                n_samples=config.n_samples,
                weight=weight,
                impl=config.impl,
                alpha=config.alpha,
                adversarial_eps=config.adversarial_eps,
            )
            optimizer.zero_grad(set_to_none=True)
            terms.loss.backward()
            optimizer.step()
            with torch.no_grad():
                wrong = (terms.probs.argmax(-1) != yb).sum()
                sums += torch.stack(
                    [terms.loss.detach(), terms.nll.detach(), terms.kl.detach(), wrong]
                )
            step = (epoch - 1) * num_batches + i
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
        scheduler.step()
        model.eval()
        test = evaluate_model(model, x_test, y_test, config.n_eval_samples)
        model.train()
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
    result.seconds = time.perf_counter() - start
    return result
