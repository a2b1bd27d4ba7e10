"""The pool-based active-learning loop, resumable one round at a time.

Start from a few labelled MNIST training images (two per class, seeded), keep a pool of
unlabelled ones, and repeat: train a fresh network on the labelled set, measure its test
accuracy, score a random subset of the pool with ``n_samples`` Monte-Carlo passes (vectorised by
the project's sampler) and label the ``acquire`` highest-scoring inputs. Everything is seeded, so
a run is reproducible; :func:`core.active.study.cached_run` stores finished runs in the disk
cache and saves an unfinished one after every round, so that it resumes where it stopped.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field

import torch

from core.active.acquisition import ACQUISITIONS, MODEL_FREE, acquire
from core.active.minibatch import minibatch_terms
from core.engine.initialisation import INITIALISATIONS
from core.engine.interface import LabModel, ModelConfig
from core.engine.sampler import predictive_samples
from core.engine.seeding import seeded
from core.evaluation.uncertainty import summarize
from core.methods import METHODS, build_model, check_config, method, model_class, params_for
from core.progress import ProgressFn, report
from core.storage.cache import CacheEntry
from core.training import TrainConfig, train

CACHE_VERSION = 4  # 2: random draws its scores once; 3: the L2 of gal2017 on one layer;
# 4: channels-last convolutions, MC passes masked by bit_dropout
MODEL_KINDS = tuple(
    kind
    for kind, unit in METHODS.items()
    if model_class(kind).stochastic and unit.trains_like is None
)
"""Methods whose passes differ (a point estimate has no epistemic score to acquire by) and
that train their own posterior: a post-hoc fit on a few dozen labels is nearly its prior
(last-layer Laplace at 20 labels: prior precision 0.39 by marginal likelihood, sampled
predictions at chance, 11.8 % test accuracy)."""


MINIBATCH_LOSSES = ("sum", "mean")
"""What a round's optimiser steps on (:attr:`ActiveConfig.minibatch_loss`)."""

ACTIVE_MODEL_FIELDS = frozenset(
    {"kind", "hidden", "conv", "conv_layout", "conv_dropout", "dropout", "init_sigma"}
)
"""The :class:`~core.engine.interface.ModelConfig` fields an :class:`ActiveConfig` sets."""


@dataclass(frozen=True)
class ActiveConfig:
    """One active-learning run.

    Attributes:
        acquisition: A key of :data:`core.active.acquisition.ACQUISITIONS`.
        kind: A method of :data:`MODEL_KINDS` (e.g. ``"dropout"``, ``"bbb"``, ``"sgld"``),
            trained by its own procedure at its own learning rate.
        hidden: Hidden dense layer widths of the network (…-10).
        conv: Channels of the convolutions before the dense layers (the kinds
            ``ModelConfig.conv`` offers them for); empty for an MLP 784-…-10.
        conv_layout: Their layout, a key of :data:`core.engine.interface.CONV_LAYOUTS`.
        dropout: Dropout probability of the MC-dropout network's dense layers.
        conv_dropout: Dropout probability of its convolutional features (None: ``dropout``).
        weight_decay: L2 coefficient of the optimiser (0: none).
        dense_decay_scale: An L2 coefficient ``dense_decay_scale / N`` (N labelled images) on
            the first dense layer's weights only, on top of ``weight_decay`` (a prior whose
            weight shrinks as labels come in).
        initial: Labelled images at the start (equal numbers per class).
        pool_size: Unlabelled training images the acquisitions choose from.
        candidates: Random pool subset scored each round (Gal et al. 2017 used 2,000; we use
            1,000 to keep a round within about a second on a laptop CPU).
        acquire: Images labelled per round.
        budget: Labelled images at the last round.
        n_samples: Monte-Carlo passes when scoring the pool.
        train_steps: Optimiser steps per round (the network is retrained from scratch);
            used when ``epochs`` is 0.
        epochs: Epochs over the labelled set per round instead (0: ``train_steps`` steps).
        batch_size: Images per optimiser step (all of them while fewer are labelled).
        test_size: Test images for the accuracy of each round.
        n_eval_samples: Monte-Carlo passes for that accuracy; 0 for MC dropout's network with
            its dropout off (weight scaling, the usual deterministic prediction).
        stop_at: Test accuracy (fraction) at which a run stops before ``budget``; None to run
            to the budget.
        init: A key of :data:`~core.engine.initialisation.INITIALISATIONS`: each round's
            initial weights (``"torch"``: PyTorch's; ``"glorot"``: Keras').
        seed: Seed of the initial set, the pool, the candidates, the training and the noise.
    """

    acquisition: str = "bald"
    kind: str = "dropout"
    hidden: tuple[int, ...] = (256,)
    conv: tuple[int, ...] = ()
    conv_layout: str = "strided"
    dropout: float = 0.5
    conv_dropout: float | None = None
    weight_decay: float = 0.0
    dense_decay_scale: float = 0.0
    minibatch_loss: str = "sum"
    initial: int = 20
    pool_size: int = 10_000
    candidates: int = 1_000
    acquire: int = 10
    budget: int = 300
    n_samples: int = 20
    train_steps: int = 600
    epochs: int = 0
    batch_size: int = 32
    test_size: int = 5_000
    n_eval_samples: int = 5
    stop_at: float | None = None
    init: str = "torch"
    seed: int = 0

    def __post_init__(self) -> None:
        if self.acquisition not in ACQUISITIONS:
            raise ValueError(f"acquisition must be one of {sorted(ACQUISITIONS)}")
        if self.kind not in MODEL_KINDS:
            raise ValueError(f"kind must be one of {MODEL_KINDS}")
        if self.initial < 10 or self.initial % 10:
            raise ValueError("initial must be a positive multiple of 10 (equal per class)")
        if not self.initial <= self.budget <= self.pool_size or self.acquire < 1:
            raise ValueError("need initial ≤ budget ≤ pool_size and acquire ≥ 1")
        if self.weight_decay < 0 or self.dense_decay_scale < 0:
            raise ValueError("weight_decay and dense_decay_scale must be ≥ 0")
        if self.minibatch_loss not in MINIBATCH_LOSSES:
            raise ValueError(
                f"minibatch_loss must be one of {MINIBATCH_LOSSES}, got {self.minibatch_loss!r}"
            )
        if self.epochs < 0 or self.batch_size < 1 or self.train_steps < 1:
            raise ValueError("need epochs ≥ 0, batch_size ≥ 1 and train_steps ≥ 1")
        if self.n_eval_samples < 0 or (
            self.n_eval_samples == 0 and not hasattr(model_class(self.kind), "scaled_logits")
        ):
            raise ValueError(
                "n_eval_samples must be ≥ 1 (0, dropout switched off, is for MC dropout only)"
            )
        if self.init not in INITIALISATIONS:
            raise ValueError(f"init must be one of {sorted(INITIALISATIONS)}, got {self.init!r}")
        if self.stop_at is not None and not 0 < self.stop_at <= 1:
            raise ValueError(f"stop_at must be a fraction in (0, 1], got {self.stop_at}")
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        object.__setattr__(self, "conv", tuple(int(c) for c in self.conv))
        self.model_config()  # raises for a network the kind does not offer

    def model_config(self) -> ModelConfig:
        """The network of every round.

        Raises:
            ValueError: If the kind does not offer the architecture (e.g. convolutions).
        """
        params = {
            "dropout": self.dropout,
            "conv_dropout": self.dropout if self.conv_dropout is None else self.conv_dropout,
            "init_sigma": 0.01,
        }
        return check_config(
            ModelConfig(
                kind=self.kind,
                hidden=self.hidden,
                conv=self.conv,
                conv_layout=self.conv_layout,
                params=params_for(self.kind, params),
            )
        )

    def to_dict(self) -> dict:
        """The settings as JSON-serialisable values.

        Returns:
            A dict with the fields above.
        """
        return {**asdict(self), "hidden": list(self.hidden), "conv": list(self.conv)}


@dataclass
class Round:
    """One round of the loop.

    The labelled-set size, the test accuracy of the network trained on it, and what it acquired
    next (training-set indices and their scores; empty at the last round).

    Attributes:
        labels: Labelled images the network was trained on.
        accuracy: Test accuracy (fraction) of its ``n_eval_samples``-pass predictive mean.
        picked: Training-set indices acquired after this round.
        scores: Their acquisition scores.
        seconds: Wall-clock time of the round.
    """

    labels: int
    accuracy: float
    picked: list[int] = field(default_factory=list)
    scores: list[float] = field(default_factory=list)
    seconds: float = 0.0


ActiveData = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]
"""Training images ``(N, 1, 28, 28)``, labels ``(N,)``, test images and labels."""


def load_active_data() -> ActiveData:
    """The MNIST training and test sets.

    Returns:
        ``(x_train, y_train, x_test, y_test)``.

    Raises:
        DatasetUnavailable: If MNIST is missing.
    """
    from core.data import load_dataset

    return (*load_dataset("mnist", "train"), *load_dataset("mnist", "test"))


class ActiveLearner:
    """A run in progress: call :meth:`step` until :attr:`done`.

    Attributes:
        config: The run's settings.
        rounds: The rounds so far.
        labelled: Training-set indices labelled so far, in acquisition order.
    """

    def __init__(self, config: ActiveConfig, data: ActiveData) -> None:
        """Draw the initial labelled set and the pool.

        Args:
            config: The run's settings.
            data: What :func:`load_active_data` returns (shared, never modified).
        """
        self.config, self.data = config, data
        x_train, y_train, _, _ = data
        order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(config.seed))
        per_class = config.initial // 10
        self.labelled = torch.cat(
            [order[y_train[order] == c][:per_class] for c in range(10)]
        ).tolist()
        taken = set(self.labelled)
        self.pool = [i for i in order.tolist() if i not in taken][: config.pool_size]
        self.rounds: list[Round] = []
        self.generator = torch.Generator().manual_seed(config.seed + 1)

    def state(self) -> dict:
        """What a resumed run needs: the labelled set, the pool, the rounds, the generator.

        Returns:
            Tensors and plain values (for ``torch.save`` and a ``weights_only`` load).
        """
        return {
            "labelled": torch.tensor(self.labelled, dtype=torch.int64),
            "pool": torch.tensor(self.pool, dtype=torch.int64),
            "rounds": [asdict(r) for r in self.rounds],
            "generator": self.generator.get_state(),
        }

    def restore(self, state: dict) -> None:
        """Continue from :meth:`state` of a run of the same settings.

        Every round's training, test and scoring noise is seeded by the run's seed and the
        round's number, and the acquisitions' draws come from the restored generator, so the
        resumed run gives the same rounds as one never interrupted.

        Args:
            state: What :meth:`state` returned.
        """
        self.labelled = state["labelled"].tolist()
        self.pool = state["pool"].tolist()
        self.rounds = [Round(**r) for r in state["rounds"]]
        self.generator.set_state(state["generator"])

    @property
    def done(self) -> bool:
        """Whether the last round (``budget`` labels, or ``stop_at`` reached) is measured."""
        return bool(self.rounds) and self._last(self.rounds[-1])

    def _last(self, round_: Round) -> bool:
        stop_at = self.config.stop_at
        reached = stop_at is not None and round_.accuracy >= stop_at
        return reached or round_.labels >= self.config.budget

    def train_on(self, x: torch.Tensor, y: torch.Tensor) -> LabModel:
        """The network this run's current round trains: fresh weights, trained on ``x``.

        Args:
            x: Labelled images ``(N, 1, 28, 28)``.
            y: Their labels ``(N,)``.

        Returns:
            The trained network, in evaluation mode, without gradients.
        """
        config = self.config
        batch = min(config.batch_size, len(x))
        epochs = config.epochs or max(1, round(config.train_steps * batch / len(x)))
        seed = config.seed * 1000 + len(self.rounds)
        unit = method(config.kind)
        given = config.model_config()
        # the method's own defaults (its estimator, sampler schedule, samples kept ...), except
        # for the architecture this run fixes
        defaults = {k: v for k, v in unit.configure({}).items() if k not in ACTIVE_MODEL_FIELDS}
        model_config, settings = unit.apply(
            defaults,
            given,
            TrainConfig(
                epochs=epochs,
                batch_size=batch,
                lr=unit.lr,
                weight_decay=config.weight_decay,
                n_eval_samples=1,
                seed=seed,
            ),
        )
        model = build_model(model_config, seed=seed)  # train() seeds its own noise
        INITIALISATIONS[config.init](model, torch.Generator().manual_seed(seed))
        procedure = unit.procedure
        mean = config.minibatch_loss == "mean"
        if mean or config.dense_decay_scale:
            procedure = minibatch_terms(procedure, mean, config.dense_decay_scale / len(x))
        cpu = torch.device("cpu")
        train(model, settings, (x, y), (x[:1], y[:1]), device=cpu, procedure=procedure)
        return model.eval().requires_grad_(False)

    def step(self) -> Round:
        """Train on the labelled set, measure, and acquire the next images.

        Returns:
            The new round (also appended to :attr:`rounds`).

        Raises:
            RuntimeError: If the run is already done.
        """
        if self.done:
            raise RuntimeError("the run has reached its budget")
        start = time.perf_counter()
        config = self.config
        x_train, y_train, x_test, y_test = self.data
        index = torch.tensor(self.labelled)
        model = self.train_on(x_train[index], y_train[index])
        with seeded(config.seed * 1000 + len(self.rounds)):
            accuracy = round_accuracy(
                model, x_test[: config.test_size], y_test[: config.test_size], config
            )
            result = Round(len(self.labelled), accuracy)
            if not self._last(result):
                free = torch.tensor(self.pool)
                pick = torch.randperm(len(free), generator=self.generator)[: config.candidates]
                candidates = free[pick]
                summary = None
                if config.acquisition not in MODEL_FREE:
                    summary = summarize(
                        predictive_samples(model, x_train[candidates], config.n_samples)
                    )
                count = min(config.acquire, config.budget - len(self.labelled))
                chosen, scores = acquire(
                    summary, config.acquisition, count, self.generator, len(candidates)
                )
                result.picked = candidates[chosen].tolist()
                result.scores = scores.tolist()
                self.labelled += result.picked
                taken = set(result.picked)
                self.pool = [i for i in self.pool if i not in taken]
        result.seconds = time.perf_counter() - start
        self.rounds.append(result)
        return result


TEST_CHUNK = 250
"""Test images per pass of :func:`round_accuracy`. The activations of 250 images through Gal et
al.'s CNN (32 × 25 × 25 floats each, 20 MB) stay below the allocator's mmap threshold
(:func:`core.processes.keep_freed_memory`), so their memory is reused rather than faulted in
afresh: the 10,000 test images took 2.8 s on one thread instead of 5.4 s in chunks of 2,000
(2.4 s of it in the kernel), with the same logits bit for bit."""


def round_accuracy(
    model: LabModel, x: torch.Tensor, y: torch.Tensor, config: ActiveConfig
) -> float:
    """Accuracy of a round's network: the mean of ``n_eval_samples`` passes, or weight scaling.

    Args:
        model: The trained network.
        x: Test images ``(B, 1, 28, 28)``.
        y: Their labels ``(B,)``.
        config: The run's settings (``n_eval_samples`` 0: dropout off).

    Returns:
        The fraction of ``y`` predicted.
    """
    if config.n_eval_samples == 0:
        predicted = torch.cat([model.scaled_logits(chunk) for chunk in x.split(TEST_CHUNK)])
    else:
        predicted = predictive_samples(model, x, config.n_eval_samples).mean(0)
    return (predicted.argmax(-1) == y).double().mean().item()


def run_active(
    config: ActiveConfig,
    data: ActiveData,
    progress: ProgressFn | None = None,
    partial: CacheEntry | None = None,
) -> list[Round]:
    """A whole run, from ``initial`` to ``budget`` labels.

    Args:
        config: The run's settings.
        data: What :func:`load_active_data` returns.
        progress: Called with (fraction done, message).
        partial: Where the unfinished run is saved after every round and resumed from
            (:func:`partial_entry`); None to keep nothing.

    Returns:
        Its rounds.
    """
    learner = ActiveLearner(config, data)
    saved = partial.load() if partial is not None else None
    if saved is not None:
        learner.restore(saved)
    total = (config.budget - config.initial) // config.acquire + 1
    while not learner.done:
        labels = len(learner.labelled)
        report(progress, len(learner.rounds) / total, f"{labels} labels")
        learner.step()
        if partial is not None and not learner.done:  # a finished run is cached instead
            partial.save(learner.state())
    report(progress, 1.0, "done")
    return learner.rounds


ARCHITECTURES: dict[str, dict] = {
    "cnn": {"conv": (16, 32), "hidden": (128,), "dropout": 0.25},
    "mlp": {"conv": (), "hidden": (256,), "dropout": 0.5},
}
"""Networks for :class:`ActiveConfig`: a small CNN (two strided 5 × 5 convolutions with 16 and
32 channels, a dense layer of 128; MC dropout only — 0.22 M weights, about the cost of the MLP
per image) as in Gal et al. (2017), and the MLP 784-256-10 (either kind)."""


def live_config(kind: str, **fields) -> ActiveConfig:
    """A run of ``kind`` on the small CNN of :data:`ARCHITECTURES`, or its MLP without convolutions.

    Args:
        kind: A method of :data:`MODEL_KINDS`.
        **fields: Other :class:`ActiveConfig` fields (budget, acquisition, ...).

    Returns:
        The configuration.

    Raises:
        ValueError: For a kind not in :data:`MODEL_KINDS` or an invalid field.
    """
    try:
        return ActiveConfig(kind=kind, **ARCHITECTURES["cnn"], **fields)
    except ValueError:  # the method offers no convolutions (or a field is bad: raised below)
        return ActiveConfig(kind=kind, **ARCHITECTURES["mlp"], **fields)
