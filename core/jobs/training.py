"""One user training run: what to train (:class:`TrainRequest`) and how (:func:`run_training`).

A request is either an ad-hoc configuration (:func:`make_request`: a model kind, a task dataset
and any settings of :class:`~core.engine.interface.ModelConfig` and
:class:`~core.training.TrainConfig`; the architecture and the common training settings not
given come from the kind's registered model, the method's own settings take their declared
defaults) or a registered spec. :func:`run_training` trains it with
:func:`core.training.train` and saves the result **once, at the end**, atomically, as a user
checkpoint in :func:`~core.paths.user_model_dir` (never ``checkpoints/``) with the
same metadata as the shipped models. A cancelled, failed or killed run therefore leaves no
checkpoint, and an existing file is never half-overwritten. Used by the Train page's job queue
(:mod:`core.jobs.queue`) and by ``python -m core train --kind ...``.
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from core.catalogue import REGISTRY
from core.engine.device import default_device, device_name, library_versions
from core.engine.interface import ModelConfig
from core.evaluation.metrics import evaluate_model
from core.methods import build_model, method
from core.paths import user_model_dir
from core.progress import ProgressFn, report
from core.storage.checkpoints import (
    TASK_DATASETS,
    CheckpointSpec,
    checkpoint_path,
    save_checkpoint,
    task_title,
)
from core.storage.metadata import migrate
from core.storage.user_models import validate_model_name
from core.training import EpochStats, StepStats, TrainConfig, train

TRAIN_SHARE = 0.95  # of the progress bar; the final evaluation takes the rest


@dataclass(frozen=True)
class TrainRequest:
    """Everything a user training run needs.

    Attributes:
        name: The user model's name, the file stem in the user-model folder.
        model: The architecture.
        training: The optimisation settings (``epochs`` included).
        dataset: The task, a key of :data:`~core.storage.checkpoints.TASK_DATASETS`.
        n_train: Training images (a seeded random subset); None for the whole training set.
        n_test: Test images evaluated after each epoch for the curves (seeded subset); None
            for the whole test set. The saved test error always uses the whole test set.
        n_eval_samples: Passes of the predictive mean for the saved test error and NLL.
        title: Human-readable name stored in the metadata ("" for the name).
        owner: Who asked (:attr:`core.jobs.owners.Visitor.id`; "" for nobody in particular),
            recorded with the saved model.

    Raises:
        ValueError: If the name is invalid, the dataset is not a task dataset, or a size is
            below 1.
    """

    name: str
    model: ModelConfig
    training: TrainConfig
    dataset: str = "mnist"
    n_train: int | None = None
    n_test: int | None = None
    n_eval_samples: int = 100
    title: str = ""
    owner: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "name", validate_model_name(self.name))
        if self.dataset not in TASK_DATASETS:
            raise ValueError(
                f"dataset must be one of {', '.join(TASK_DATASETS)}, got {self.dataset!r}"
            )
        for label, value in (("n_train", self.n_train), ("n_test", self.n_test)):
            if value is not None and value < 1:
                raise ValueError(f"{label} must be ≥ 1 (or None for all), got {value}")
        if self.n_eval_samples < 1:
            raise ValueError(f"n_eval_samples must be ≥ 1, got {self.n_eval_samples}")

    def describe(self) -> str:
        """One line on the request: kind, task, epochs and training images.

        Returns:
            E.g. ``"bbb on Fashion-MNIST, 3 epochs × 10,000 images"``.
        """
        images = f"{self.n_train:,}" if self.n_train else "all"
        return (
            f"{self.model.kind} on {task_title(self.dataset)}, "
            f"{self.training.epochs} epochs × {images} images"
        )

    def to_dict(self) -> dict:
        """The request as a JSON-ready dict.

        Returns:
            Field name → value (the configurations as dicts).
        """
        d = asdict(self)
        d["model"], d["training"] = self.model.to_dict(), self.training.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: dict) -> TrainRequest:
        """The request stored by :meth:`to_dict` (e.g. in the job table).

        Args:
            d: Field values by name, the configurations as dicts.

        Returns:
            The validated request.
        """
        model, training = migrate(d["model"], d["training"])  # a job stored before params
        model, training = ModelConfig.from_dict(model), TrainConfig(**training)
        return cls(**d | {"model": model, "training": training})


def kind_template(kind: str) -> CheckpointSpec | None:
    """The registered MNIST spec a new model of ``kind`` takes its defaults from.

    Args:
        kind: A method's kind (a key of :data:`core.methods.METHODS`).

    Returns:
        The first registered MNIST spec of that kind whose internal parameters are at their
        defaults (e.g. no α-divergence, no adversarial training), else the first of that kind,
        or None when the registry has none.
    """
    internal = method(kind).internal
    specs = [s for s in REGISTRY.values() if s.model.kind == kind and s.dataset == "mnist"]
    plain = [s for s in specs if all(s.model.params[p.name] == p.default for p in internal)]
    return (plain or specs or [None])[0]


def make_request(
    name: str,
    kind: str,
    *,
    dataset: str = "mnist",
    n_train: int | None = None,
    n_test: int | None = None,
    n_eval_samples: int = 100,
    **settings,
) -> TrainRequest:
    """An ad-hoc training request: a kind, a task and any settings.

    The architecture and the common training settings (learning rate, its decay, batch size)
    come from :func:`kind_template` (for a method that trains like another kind, that kind's);
    the method's own settings (:attr:`core.methods.base.Method.settings`) take their declared
    defaults unless given.

    Args:
        name: The user model's name.
        kind: A method's kind (a key of :data:`core.methods.METHODS`).
        dataset: The task dataset.
        n_train: Training images; None for all.
        n_test: Test images evaluated after each epoch; None for all.
        n_eval_samples: Passes for the saved test error.
        **settings: The method's settings by name (e.g. ``prior="mixture"``, ``sigma2``,
            ``beta``), fields of its network (``hidden``, ...) and of
            :class:`~core.training.TrainConfig` (``epochs``, ``lr``, ``batch_size``, ...).

    Returns:
        The request.

    Raises:
        ValueError: For an unknown kind or setting, or an invalid value.
    """
    unit = method(kind)
    own = {s.name for s in unit.settings}
    given = {k: v for k, v in settings.items() if k in own}
    fields = unit.configure(given) | {
        k: v for k, v in settings.items() if k not in given and k != "kind"
    }
    template = kind_template(unit.trains_like or kind)
    own_template = kind_template(kind)
    model = own_template.model if own_template else ModelConfig(kind=kind)
    training = template.training if template else TrainConfig()
    model, training = unit.apply(fields, model, training)
    return TrainRequest(
        name,
        model,
        training,
        dataset=dataset,
        n_train=n_train,
        n_test=n_test,
        n_eval_samples=n_eval_samples,
    )


def spec_request(spec: CheckpointSpec, name: str | None = None, **overrides) -> TrainRequest:
    """A request that trains a registered spec afresh (no base weights) as a user model.

    Args:
        spec: The registered spec.
        name: The user model's name; None for the spec's name.
        **overrides: :class:`TrainRequest` fields to change (``n_train``, ...).

    Returns:
        The request, on the spec's training images (``spec.train_subset``) unless overridden.
    """
    return TrainRequest(
        name or spec.name,
        spec.model,
        spec.training,
        dataset=spec.dataset,
        title=spec.title,
        **({"n_train": spec.train_subset} | overrides),
    )


def training_metadata(
    *,
    title: str,
    dataset: str,
    training: TrainConfig,
    history: list[EpochStats],
    seconds: float,
    device,
    metrics: dict,
    n_eval_samples: int,
    cuda_graphs: bool = False,
) -> dict:
    """The JSON metadata of a trained checkpoint (the same for shipped and user models).

    Args:
        title: Human-readable name.
        dataset: The task dataset.
        training: The optimisation settings.
        history: Every finished epoch's stats.
        seconds: Training time (wall clock).
        device: Where it trained.
        metrics: ``test_error`` and ``nll`` of the saved model.
        n_eval_samples: Passes behind ``metrics``.
        cuda_graphs: Whether its steps were replayed from a CUDA graph.

    Returns:
        Title, dataset, training config, epochs, test error, NLL, time, history, device,
        whether CUDA graphs were used, library versions and date (UTC).
    """
    return {
        "title": title,
        "dataset": dataset,
        "training": training.to_dict(),
        "epochs": len(history),
        "test_error": metrics["test_error"],
        "nll": metrics["nll"],
        "n_eval_samples": n_eval_samples,
        "train_seconds": seconds,
        "history": [s.__dict__ for s in history],
        "device": device_name(device),
        "cuda_graphs": cuda_graphs,
        "versions": library_versions(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


@dataclass
class TrainOutcome:
    """What :func:`run_training` returns.

    Attributes:
        path: The saved ``.pt`` file; None when cancelled.
        cancelled: Whether the run was cancelled (nothing saved).
        history: Every finished epoch's stats.
        metrics: The saved model's test metrics on the whole test set ({} when cancelled).
        seconds: Wall-clock time of the run.
    """

    path: Path | None
    cancelled: bool
    history: list[EpochStats] = field(default_factory=list)
    metrics: dict = field(default_factory=dict)
    seconds: float = 0.0


def free_name(name: str, folder: Path) -> str:
    """``name``, or ``name-2``, ``name-3``, ... whichever has no file in ``folder`` yet.

    Args:
        name: The wanted name.
        folder: The user-model folder.

    Returns:
        A name without a checkpoint in ``folder``.
    """
    candidate, i = name, 1
    while checkpoint_path(candidate, folder).exists():
        i += 1
        candidate = f"{name}-{i}"
    return candidate


def run_training(
    request: TrainRequest,
    *,
    device=None,
    progress: ProgressFn | None = None,
    on_epoch: Callable[[EpochStats], None] | None = None,
    on_step: Callable[[StepStats], None] | None = None,
    cancel: threading.Event | None = None,
    directory: Path | None = None,
) -> TrainOutcome:
    """Train a request and save it as a user checkpoint when (and only when) it finishes.

    If a file of that name appeared meanwhile it is not overwritten: the model is saved as
    :func:`free_name`.

    Args:
        request: What to train.
        device: Where; None for :func:`~core.engine.device.default_device`.
        progress: Gets the fraction done (training, then the final evaluation).
        on_epoch: Gets each epoch's stats (test error on ``request.n_test`` images).
        on_step: Gets the running averages every 20 steps.
        cancel: Setting it stops the run within one step; nothing is saved.
        directory: Where to save; None for :func:`~core.paths.user_model_dir`.

    Returns:
        The saved path (None if cancelled), the history and the final metrics.

    Raises:
        DatasetUnavailable: If the task's files are missing.
    """
    from core.data import load_dataset

    device = device or default_device()
    folder = directory or user_model_dir()
    start = time.perf_counter()
    model = build_model(request.model, seed=request.training.seed)
    train_data = load_dataset(request.dataset, "train", n_inputs=request.n_train)
    curve_test = load_dataset(request.dataset, "test", n_inputs=request.n_test)
    history: list[EpochStats] = []

    def epoch_done(stats: EpochStats) -> None:
        history.append(stats)
        if on_epoch is not None:
            on_epoch(stats)

    def cancelled() -> TrainOutcome:
        return TrainOutcome(None, True, history, {}, time.perf_counter() - start)

    result = train(
        model,
        request.training,
        train_data,
        curve_test,
        device=device,
        progress=lambda f, m: report(progress, TRAIN_SHARE * f, m),
        on_epoch=epoch_done,
        on_step=on_step,
        cancel=cancel,
        procedure=method(request.model.kind).procedure,
    )
    if result.cancelled:
        return cancelled()
    extra = result.info
    model.to(device)
    if cancel is not None and cancel.is_set():
        return cancelled()
    report(progress, TRAIN_SHARE, f"final test error, {request.n_eval_samples} passes")
    model.eval().requires_grad_(False)
    test = load_dataset(request.dataset, "test")
    metrics = evaluate_model(model, *test, n_samples=request.n_eval_samples)
    if cancel is not None and cancel.is_set():
        return cancelled()
    seconds = time.perf_counter() - start
    meta = training_metadata(
        title=request.title or request.name,
        dataset=request.dataset,
        training=request.training,
        history=history,
        seconds=seconds,
        device=device,
        metrics=metrics,
        n_eval_samples=request.n_eval_samples,
        cuda_graphs=result.cuda_graphs,
    )
    meta |= {"user_trained": True, "train_subset": request.n_train, **extra}
    if request.owner:
        meta["owner"] = request.owner
    path = save_checkpoint(free_name(request.name, folder), model, meta, folder)
    report(progress, 1.0, "saved")
    return TrainOutcome(path, False, history, metrics, seconds)
