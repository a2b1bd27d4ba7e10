"""Training-speed benchmark of the three S-sample ELBO implementations (issue 3 item 9).

For each implementation and sample count S, a fixed number of training steps (objective,
backward and Adam step on a 784-400-400-10 :class:`~core.methods.BayesMLP`) is timed after a
few untimed warm-up steps and extrapolated to one epoch (60,000 examples at batch 128 → 469
steps). A plain MLP trained on the same batches gives the floor. Per implementation the epoch
times are fitted by ``time = a + b·S`` (:mod:`core.evaluation.linfit`); the slope b is the cost
of one extra sample per epoch.

The baseline and the Bayesian network are roles named in the catalogue
(:data:`~core.catalogue.BASELINE_KIND`, :data:`~core.catalogue.BAYESIAN_KIND`): the floor rows
carry the baseline's kind as their ``impl`` (:data:`FLOOR_IMPL`), the others one of the Bayesian
network's estimators.

Results are plain JSON-serialisable dicts (see :func:`run_benchmark`); what they say (fits,
speed-ups, goals) is :mod:`core.studies.training_speed_goals`, and they are saved among the lab's
stored results for comparison across machines by :mod:`core.studies.training_speed_runs`.
"""

from __future__ import annotations

import datetime
import math
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial

import torch

from core.catalogue import BASELINE_KIND, BAYESIAN_KIND, MIXTURE_PRIOR
from core.engine import native
from core.engine.device import (
    default_device,
    device_name,
    library_versions,
    processor,
    synchronize,
)
from core.engine.objective import (
    IMPLEMENTATIONS,
    LIKELIHOODS,
    ObjectiveTerms,
    minibatch_objective,
)
from core.methods import Model, ModelConfig, build_model, params_for
from core.progress import ProgressFn, report
from core.studies.training_speed_goals import fits, goals, speed_goals, speedups
from core.training import TrainStep, cuda_graphs_enabled, make_optimizer
from core.training.step import WARMUP_STEPS

SCHEMA = 1
BBB_IMPLEMENTATIONS = (*IMPLEMENTATIONS, "fused")
"""What can be timed: the three reference estimators and the fused one (issue 19)."""
TASKS = ("mnist", "regression")
FLOOR_IMPL = BASELINE_KIND
"""The ``impl`` of a floor row (the baseline network timed on the same batches), as stored."""
PRIORS = {"gaussian": {"prior": "gaussian", "prior_sigma": 1.0}, "mixture": MIXTURE_PRIOR}
"""The priors of the registered ``bbb_gaussian`` and ``bbb_mixture`` checkpoints, as a
method's prior parameters."""


@dataclass(frozen=True)
class BenchConfig:
    """What to time.

    The median per-step time over the rounds is used, so a load spike on a shared machine
    spoils one round, not a whole point.

    Attributes:
        impls: ELBO implementations to time, a subset of
            :data:`core.engine.objective.IMPLEMENTATIONS`.
        n_samples: Sample counts S to time (sorted and deduplicated).
        steps: Timed steps per (implementation, S) and round.
        warmup: Untimed steps before the first round.
        repeats: Rounds over all points.
        batch_size: Examples per step.
        train_size: Examples per epoch; an epoch is ``ceil(train_size / batch_size)`` steps.
        hidden: Hidden layer sizes of the network.
        prior: A key of :data:`PRIORS`.
        lr: Adam's learning rate.
        data: ``"mnist"`` (random tensors when MNIST is unavailable) or ``"random"``.
        task: ``"mnist"`` (784-…-10 classification) or ``"regression"`` (1-…-1 on
            Blundell's curve with a fixed-noise Gaussian likelihood; see
            :func:`regression_config`).
        include_mlp: Whether to time the plain-MLP floor too.
        seed: Seed of the batches and of the models' initialisation.
        graphs: On CUDA (unless ``BNN_CUDA_GRAPHS=0``), time every point twice: its steps
            replayed from a CUDA graph (the main rows) and eager (``result["eager"]``).
    """

    impls: tuple[str, ...] = IMPLEMENTATIONS
    n_samples: tuple[int, ...] = tuple(range(1, 11))
    steps: int = 20
    warmup: int = 3
    repeats: int = 1
    batch_size: int = 128
    train_size: int = 60_000
    hidden: tuple[int, ...] = (400, 400)
    prior: str = "gaussian"
    lr: float = 1e-3
    data: str = "mnist"
    task: str = "mnist"
    include_mlp: bool = True
    seed: int = 0
    graphs: bool = True

    def __post_init__(self) -> None:
        """Check the settings and normalise the sequences to tuples.

        Raises:
            ValueError: For an unknown implementation, prior or data, no sample counts or one
                below 1, ``steps`` or ``repeats`` below 1, or a negative ``warmup``.
        """
        bad = [i for i in self.impls if i not in BBB_IMPLEMENTATIONS]
        if bad or not self.impls:
            raise ValueError(
                f"impls must be a non-empty subset of {BBB_IMPLEMENTATIONS}, got {bad}"
            )
        if not self.n_samples or min(self.n_samples) < 1:
            raise ValueError("n_samples must be a non-empty list of counts ≥ 1")
        if self.steps < 1 or self.warmup < 0 or self.repeats < 1:
            raise ValueError("steps and repeats must be ≥ 1, warmup ≥ 0")
        if self.prior not in PRIORS:
            raise ValueError(f"prior must be one of {sorted(PRIORS)}, got {self.prior!r}")
        if self.task not in TASKS:
            raise ValueError(f"task must be one of {TASKS}, got {self.task!r}")
        if self.data not in ("mnist", "random"):
            raise ValueError("data must be 'mnist' or 'random'")
        object.__setattr__(self, "impls", tuple(self.impls))
        object.__setattr__(self, "n_samples", tuple(sorted({int(s) for s in self.n_samples})))
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))

    @property
    def epoch_steps(self) -> int:
        """Optimiser steps in one epoch (469 for 60,000 examples at batch 128)."""
        return math.ceil(self.train_size / self.batch_size)

    def to_dict(self) -> dict:
        """Give the settings as a JSON-ready dict.

        Returns:
            Field name → value, sequences as lists.
        """
        d = asdict(self)
        d.update(impls=list(self.impls), n_samples=list(self.n_samples), hidden=list(self.hidden))
        return d


def _mnist_pool(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    from core.data import load_dataset

    images, labels = load_dataset("mnist", "train")
    idx = torch.randperm(len(images), generator=gen)[:n]
    x = images[idx].float()
    return (x / 255.0 if x.max() > 1 else x), labels[idx].long()


def _regression_batches(config: BenchConfig, device: torch.device):
    """Batches of Blundell's 1-D curve: x uniform in [0, 0.5], targets ``(steps, B)``."""
    n = (config.warmup + config.steps) * config.batch_size
    gen = torch.Generator().manual_seed(config.seed)
    x = 0.5 * torch.rand(n, 1, generator=gen)
    eps = 0.02 * torch.randn(n, 1, generator=gen)
    y = x + 0.3 * torch.sin(2 * math.pi * (x + eps)) + 0.3 * torch.sin(4 * math.pi * (x + eps))
    shape = (config.warmup + config.steps, config.batch_size)
    source = "blundell curve (regression)"
    return x.reshape(*shape, 1).to(device), (y + eps).reshape(shape).to(device), source


def _batches(config: BenchConfig, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, str]:
    """A fixed pool of ``warmup + steps`` batches shared by every run, and its provenance."""
    if config.task == "regression":
        return _regression_batches(config, device)
    n = (config.warmup + config.steps) * config.batch_size
    gen = torch.Generator().manual_seed(config.seed)
    x = y = None
    source = "random"
    if config.data == "mnist":
        try:
            x, y = _mnist_pool(n, gen)
            source = "mnist"
        except Exception as error:  # any data problem: time on random tensors instead
            source = f"random (MNIST unavailable: {error})"
    if x is None:
        x = torch.rand(n, 1, 28, 28, generator=gen)
        y = torch.randint(0, 10, (n,), generator=gen)
    shape = (config.warmup + config.steps, config.batch_size)
    return x.reshape(*shape, 1, 28, 28).to(device), y.reshape(shape).to(device), source


Stepper = Callable[[torch.Tensor, torch.Tensor, int], None]


Objective = Callable[..., ObjectiveTerms]


def _network(kind: str, config: BenchConfig, device: torch.device) -> Model:
    """A network of ``kind`` of the benchmark's sizes and prior on ``device``, seeded."""
    torch.manual_seed(config.seed)
    sizes = {"in_features": 1, "num_classes": 1} if config.task == "regression" else {}
    params = params_for(kind, PRIORS[config.prior])
    model = build_model(ModelConfig(kind=kind, hidden=config.hidden, params=params, **sizes))
    return model.to(device)


def _floor_objective(model: Model, likelihood: str) -> Objective:
    """The baseline's objective: the summed NLL of one deterministic pass (no KL, any S)."""
    lik = LIKELIHOODS[likelihood]

    def plain(x: torch.Tensor, y: torch.Tensor, weight, n_samples: int) -> ObjectiveTerms:
        out = model(x)
        nll = lik.nll(out, y).sum()
        return ObjectiveTerms(nll, nll, nll.new_zeros(()), lik.predict(out.detach()))

    return plain


def _elbo_objective(model: Model, impl: str, likelihood: str) -> Objective:
    """The Bayesian network's S-sample minibatch ELBO by the estimator ``impl``."""

    def bayes(x: torch.Tensor, y: torch.Tensor, weight, n_samples: int) -> ObjectiveTerms:
        return minibatch_objective(
            model, x, y, n_samples=n_samples, weight=weight, impl=impl, likelihood=likelihood
        )

    return bayes


def _stepper(impl: str, config: BenchConfig, device: torch.device, graphs: bool) -> Stepper:
    """``step(x, y, n_samples)``: one seeded training step of ``impl`` (or the floor), any S.

    :data:`FLOOR_IMPL` steps the baseline network on its NLL, any other ``impl`` the Bayesian
    network on its ELBO by that estimator. The step is the training loop's own
    (:class:`~core.training.TrainStep`), one per S: with ``graphs`` on CUDA, its first
    :data:`~core.training.step.WARMUP_STEPS` calls are eager, the next captures the CUDA graph,
    and later ones replay it.
    """
    floor = impl == FLOOR_IMPL
    model = _network(BASELINE_KIND if floor else BAYESIAN_KIND, config, device)
    optimizer = make_optimizer(model, config.lr)
    weight = 1.0 / config.epoch_steps
    likelihood = "gaussian" if config.task == "regression" else "categorical"
    objective = (
        _floor_objective(model, likelihood) if floor else _elbo_objective(model, impl, likelihood)
    )
    by_samples: dict[int, TrainStep] = {}

    def step(xb: torch.Tensor, yb: torch.Tensor, n_samples: int) -> None:
        if n_samples not in by_samples:
            by_samples[n_samples] = TrainStep(
                partial(objective, n_samples=n_samples),
                lambda set_to_none: optimizer.zero_grad(set_to_none=set_to_none),
                optimizer.step,
                batch_size=config.batch_size,
                graphs=graphs,
            )
        by_samples[n_samples](xb, yb, weight)

    return step


def _time_block(step: Stepper, n_samples: int, config: BenchConfig, x, y) -> float:
    """Seconds per step over the ``steps`` timed batches (after the warm-up batches)."""
    synchronize(x.device)
    start = time.perf_counter()
    for i in range(config.warmup, config.warmup + config.steps):
        step(x[i], y[i], n_samples)
    synchronize(x.device)
    return (time.perf_counter() - start) / config.steps


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else 0.5 * (ordered[mid - 1] + ordered[mid])


def _row(impl: str, n_samples: int | None, per_step: list[float], epoch_steps: int) -> dict:
    step_seconds = _median(per_step)
    return {
        "impl": impl,
        "samples": n_samples,
        "step_seconds": step_seconds,
        "epoch_seconds": step_seconds * epoch_steps,
        "repeat_step_seconds": per_step,
    }


def run_benchmark(
    config: BenchConfig | None = None,
    *,
    device: torch.device | None = None,
    progress: ProgressFn | None = None,
) -> dict:
    """Time every (implementation, S) of ``config``.

    Rounds, then sample counts, are the outer loops, so load changes on a shared machine hit
    all implementations alike. It runs on the process's torch threads (the CLI's ``--threads``
    sets them once for its process; the app never changes them per request).

    Args:
        config: What to time; None for the defaults of :class:`BenchConfig`.
        device: Where to time; None for :func:`core.engine.device.default_device`.
        progress: Called with (fraction done, message); None for silence.

    Returns:
        A JSON-serialisable dict with keys ``schema``, ``reference`` (False), ``source``,
        ``task``, ``device``, ``device_type``, ``threads``, ``native_kernels`` (``"on"``, or
        why :mod:`core.engine.native` is off), ``cuda_graphs`` (whether the main rows'
        steps replayed CUDA graphs), ``versions``, ``date`` (ISO, UTC),
        ``config``, ``epoch_steps``, ``data``, ``timings`` (rows ``impl, samples,
        step_seconds, epoch_seconds, repeat_step_seconds``; ``samples`` is the row's S),
        ``mlp`` (the floor row, or None), ``fits`` (impl → ``intercept`` s, ``slope`` s per
        sample, ``r2``; None with a single S), ``speedups`` (rows ``impl, samples, speedup`` =
        sequential time / impl time), ``goals`` (see :func:`goals`), and with CUDA graphs
        ``eager``: the same points without graphs (``timings``, ``mlp``, ``fits``).
    """
    return _run(config or BenchConfig(), device or default_device(), progress)


def _run(config: BenchConfig, device: torch.device, progress: ProgressFn | None) -> dict:
    x, y, source = _batches(config, device)
    jobs = [(impl, s) for s in config.n_samples for impl in config.impls]
    if config.include_mlp:
        jobs.insert(0, (FLOOR_IMPL, None))
    modes = (True, False) if config.graphs and cuda_graphs_enabled(device) else (False,)
    steppers = {(impl, g): _stepper(impl, config, device, g) for impl, _ in jobs for g in modes}
    per_step: dict[tuple, list[float]] = {(*job, g): [] for job in jobs for g in modes}
    total = len(jobs) * len(modes) * config.repeats
    done = 0
    for r in range(config.repeats):
        for impl, s in jobs:
            for graphed in modes:  # interleaved, so load changes hit both alike
                label = "plain MLP" if s is None else f"{impl}, S={s}"
                label += ", CUDA graph" if graphed else ""
                report(progress, done / total, f"round {r + 1}: {label}")
                done += 1
                step = steppers[(impl, graphed)]
                if r == 0:  # a graph is captured in the warm-up, never in a timed block
                    for i in range(config.warmup + (WARMUP_STEPS + 1 if graphed else 0)):
                        step(x[i % len(x)], y[i % len(y)], s or 1)
                per_step[(impl, s, graphed)].append(_time_block(step, s or 1, config, x, y))
    report(progress, 1.0, "done")
    result = {
        "schema": SCHEMA,
        "reference": False,
        "source": "python -m core bench",
        "task": config.task,
        "device": device_name(device),
        "device_type": device.type,
        "threads": torch.get_num_threads(),
        "processor": processor(),
        "native_kernels": native.status() if device.type == "cpu" else "not used",
        "cuda_graphs": modes[0],
        "versions": library_versions(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "config": config.to_dict(),
        "epoch_steps": config.epoch_steps,
        "data": source,
    }
    for graphed in modes:
        rows = [_row(impl, s, per_step[(impl, s, graphed)], config.epoch_steps) for impl, s in jobs]
        part = {
            "timings": [row for row in rows if row["impl"] != FLOOR_IMPL],
            "mlp": next((row for row in rows if row["impl"] == FLOOR_IMPL), None),
        }
        part["fits"] = fits(part["timings"])
        if graphed is modes[0]:
            result |= part
        else:
            result["eager"] = part
    result["speedups"] = speedups(result["timings"])
    result["goals"] = goals(result)
    result["speed_goals"] = speed_goals(result)
    return result


def regression_config(**overrides) -> BenchConfig:
    """The regression column of the report seed's table 1: 1,000 points per epoch in one batch.

    A 1-100-1 network (the regression playground's default width) on Blundell's curve.

    Args:
        **overrides: Other :class:`BenchConfig` fields (e.g. ``n_samples``, ``steps``).

    Returns:
        The configuration.
    """
    settings = {"batch_size": 1000, "train_size": 1000, "hidden": (100,), "data": "random"}
    return BenchConfig(**{**settings, **overrides, "task": "regression"})
