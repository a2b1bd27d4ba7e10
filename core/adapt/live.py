"""The Class page's "Learn our handwriting", computed in a background thread.

:func:`start` (the teacher only: :func:`core.roles.require_teacher`) splits a class's drawings,
then for each chosen model runs :func:`~core.adapt.study.before_after`, optionally the
:func:`~core.adapt.study.learning_curve` and, for the first model, the BALD replay
(:func:`~core.adapt.study.ask_first`), in a daemon thread. A page polls
:meth:`LiveAdaptation.snapshot` and never waits. The adapted models are saved only when every
step finished, so a cancelled run leaves no model.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field, replace
from enum import StrEnum

import torch

from core.adapt.base import check_drawings
from core.adapt.registry import adapter
from core.adapt.run import STEPS, Recipe, save_adapted
from core.adapt.study import (
    Asked,
    BeforeAfter,
    Trial,
    ask_first,
    before_after,
    learning_curve,
    mnist_subset,
    split_drawings,
)
from core.data import DatasetUnavailable
from core.progress import share
from core.roles import Actor, require_teacher
from core.storage.checkpoints import load_checkpoint


@dataclass(frozen=True)
class Plan:
    """What to learn and how.

    Attributes:
        checkpoints: The models to adapt (registry names or ``user:NAME``).
        images: The class's drawings ``(N, 1, 28, 28)``, oldest first.
        labels: Their digits ``(N,)``.
        split: ``"time"`` or ``"random"`` (:func:`~core.adapt.study.split_drawings`).
        seed: Seed of the random split, the steps and the scores.
        options: Adaptation options by name (each kind takes its own).
        steps: Adam steps.
        n_samples: Monte-Carlo passes of the scores.
        curve: Also the curve against 10, 20, 50, all drawings.
        ask: Also the BALD replay (first model).
        prefix: Saved models are named ``PREFIX-CHECKPOINT``.
        owner: Who owns them.
    """

    checkpoints: tuple[str, ...]
    images: torch.Tensor
    labels: torch.Tensor
    split: str = "time"
    seed: int = 0
    options: dict = field(default_factory=dict)
    steps: int = int(STEPS.default)
    n_samples: int = 20
    curve: bool = True
    ask: bool = True
    prefix: str = "class"
    owner: str = ""


class State(StrEnum):
    """Where a run is."""

    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"


@dataclass(frozen=True)
class Snapshot:
    """What a run has published.

    Attributes:
        state: Where it is.
        fraction: Fraction done, in [0, 1].
        message: What it is doing.
        results: Each finished model's before and after.
        curves: Checkpoint → rows of :func:`~core.adapt.study.learning_curve`.
        asked: The BALD replay (BALD's picks, random picks) with the drawings it chose from.
        saved: The saved models' names (``user:NAME``), once done.
        error: One line when it failed.
        seconds: Time since it started.
    """

    state: State
    fraction: float = 0.0
    message: str = ""
    results: tuple[BeforeAfter, ...] = ()
    curves: dict = field(default_factory=dict)
    asked: tuple[Asked, ...] = ()
    saved: tuple[str, ...] = ()
    error: str = ""
    seconds: float = 0.0


class LiveAdaptation:
    """One run of a :class:`Plan` in a daemon thread.

    Args:
        plan: What to learn.
        threads: torch intra-op threads of the computing thread (0 leaves its count alone);
            give the count of the thread that starts it (OpenMP's count is per thread).
    """

    def __init__(self, plan: Plan, threads: int = 0) -> None:
        self.plan = plan
        self.threads = threads
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._snap = Snapshot(State.RUNNING, message="starting")
        self._start = time.monotonic()
        self._thread = threading.Thread(target=self._run, daemon=True, name="adapt")

    def start(self) -> LiveAdaptation:
        """Start the thread; returns ``self``."""
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop within one step; nothing is saved."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread; True when it ended."""
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def snapshot(self) -> Snapshot:
        """What the run has published so far."""
        with self._lock:
            return replace(self._snap, seconds=time.monotonic() - self._start)

    def _publish(self, **changes) -> None:
        with self._lock:
            self._snap = replace(self._snap, **changes)

    def _progress(self, fraction: float, message: str) -> None:
        self._publish(fraction=fraction, message=message)

    def _run(self) -> None:
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            self._publish(state=self._work())
        except (ValueError, RuntimeError, OSError, DatasetUnavailable) as exc:
            self._publish(state=State.FAILED, error=" ".join(str(exc).split()))

    def _recipe(self, checkpoint: str) -> Recipe:
        """The plan's steps and seed with the options of ``checkpoint``'s kind."""
        options = adapter(load_checkpoint(checkpoint)[0].config.kind).own(self.plan.options)
        return Recipe(steps=self.plan.steps, options=options, seed=self.plan.seed)

    def _work(self) -> State:
        plan = self.plan
        learn_at, kept_at = split_drawings(len(plan.labels), plan.split, plan.seed)
        learn = (plan.images[learn_at], plan.labels[learn_at])
        kept = (plan.images[kept_at], plan.labels[kept_at])
        mnist = mnist_subset()
        parts = len(plan.checkpoints) * (2 if plan.curve else 1) + int(plan.ask)
        done, results, curves = 0, [], {}
        trial = Trial(learn, kept, mnist, plan.n_samples)
        for checkpoint in plan.checkpoints:
            recipe = self._recipe(checkpoint)
            result = before_after(
                checkpoint,
                trial,
                recipe,
                cancel=self._cancel,
                progress=share(self._progress, done, parts, checkpoint),
            )
            done += 1
            if result is None:
                return State.CANCELLED
            results.append(result)
            self._publish(results=tuple(results))
            if plan.curve:
                rows = learning_curve(
                    checkpoint,
                    trial,
                    recipe,
                    before=result.before,
                    cancel=self._cancel,
                    progress=share(self._progress, done, parts, f"{checkpoint}, curve"),
                )
                done += 1
                if rows is None:
                    return State.CANCELLED
                curves[checkpoint] = rows
                self._publish(curves=dict(curves))
        if plan.ask:
            first = plan.checkpoints[0]
            self._progress(done / parts, f"{first}: which drawings would it ask about?")
            asked = ask_first(first, trial, self._recipe(first))
            self._publish(asked=tuple(asked))
        if self._cancel.is_set():  # the replay does not stop midway; nothing is saved
            return State.CANCELLED
        saved = []
        for result in results:
            stem = result.checkpoint.removeprefix("user:")
            model = save_adapted(result.adapted, f"{plan.prefix}-{stem}"[:64], plan.owner)
            saved.append(f"user:{model.path.stem}")
        self._publish(saved=tuple(saved), fraction=1.0, message="saved")
        return State.DONE


def start(actor: Actor, plan: Plan, threads: int = 0) -> LiveAdaptation:
    """Start a run for the teacher.

    Args:
        actor: Who asks.
        plan: What to learn.
        threads: torch threads of the run's thread (0: its default).

    Returns:
        The started run.

    Raises:
        PermissionError: One line, if ``actor`` is not the teacher (nothing starts).
        ValueError: One line, if no model is chosen, a model cannot adapt, or the drawings
            to learn from are too few or all one digit.
    """
    require_teacher(actor, "adapt_class")
    if not plan.checkpoints:
        raise ValueError("choose at least one model to teach")
    learn, _ = split_drawings(len(plan.labels), plan.split, plan.seed)
    check_drawings(plan.images[learn], plan.labels[learn])
    for checkpoint in plan.checkpoints:
        adapter(load_checkpoint(checkpoint)[0].config.kind)
    return LiveAdaptation(plan, threads).start()
