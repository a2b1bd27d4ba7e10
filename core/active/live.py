"""A live comparison of acquisition functions, computed in a background thread.

:class:`LiveComparison` runs several :class:`~core.active.loop.ActiveLearner` s side by side
in a thread of its own, one *round* at a time: a round is one step of every learner, and only a
finished round is published. A reader (a page polling every second) therefore only ever sees
every learner at the same number of labels, and never waits for a computation: it reads
:meth:`LiveComparison.snapshot`, which copies what the last finished round left. Cancelling
stops the thread before its next learner's step; the rounds published so far stay. At most
:data:`LIVE_SLOTS` comparisons compute at once per server (:func:`core.progress.compute_slot`);
another one waits for a slot, saying so.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from enum import StrEnum

import torch

from core.active.loop import ActiveLearner, Round
from core.progress import compute_slot

log = logging.getLogger(__name__)

LIVE_SLOTS = 2
"""Live comparisons computing at once on one server (every session together)."""
SLOT_POOL = "live active-learning runs"


class LiveState(StrEnum):
    """Where a live comparison is.

    Attributes:
        STARTING: Not started yet, or starting.
        WAITING: Waiting for a free slot of the server.
        RUNNING: Computing rounds.
        DONE: Every learner reached its budget.
        CANCELLED: Stopped by its user; the finished rounds stay.
        FAILED: Stopped by an error (:attr:`Snapshot.error`).
    """

    STARTING = "starting"
    WAITING = "waiting"
    RUNNING = "running"
    DONE = "done"
    CANCELLED = "cancelled"
    FAILED = "failed"

    @property
    def active(self) -> bool:
        """Whether the comparison may still publish rounds."""
        return self in (LiveState.STARTING, LiveState.WAITING, LiveState.RUNNING)


@dataclass(frozen=True)
class Snapshot:
    """What a live comparison has published so far (a copy: safe to keep and read).

    Attributes:
        state: Where the comparison is.
        rounds: Learner name → its rounds, every list of the same length.
        total: Rounds the comparison will have when done.
        seconds: Wall-clock seconds spent computing rounds so far.
        error: One line on what failed, for a failed comparison ("" otherwise).
    """

    state: LiveState
    rounds: dict[str, list[Round]] = field(default_factory=dict)
    total: int = 0
    seconds: float = 0.0
    error: str = ""

    @property
    def done_rounds(self) -> int:
        """Rounds every learner has finished."""
        return min((len(r) for r in self.rounds.values()), default=0)


def rounds_to_budget(learner: ActiveLearner) -> int:
    """Rounds a learner takes from its initial labels to its budget.

    Args:
        learner: A learner (its ``stop_at`` may end it earlier).

    Returns:
        ``1 + ceil((budget - initial) / acquire)``.
    """
    config = learner.config
    return 1 + -(-(config.budget - config.initial) // config.acquire)


class LiveComparison:
    """Learners advanced together, one round at a time, by a background thread.

    Args:
        learners: Name → learner, each fresh (no rounds yet); stepped in this order.
        threads: torch intra-op threads of the computing thread (0 leaves its count alone);
            give the count of the thread that starts it (OpenMP's count is per thread).
        slots: Comparisons computing at once on this server; None for :data:`LIVE_SLOTS`.
        pool: The name of the server's pool of slots (:func:`~core.progress.compute_slot`).
    """

    def __init__(
        self,
        learners: dict[str, ActiveLearner],
        threads: int = 0,
        slots: int | None = None,
        pool: str = SLOT_POOL,
    ) -> None:
        self.pool = pool
        self.learners = learners
        self.threads = threads
        self.slots = LIVE_SLOTS if slots is None else slots
        self.total = max(rounds_to_budget(learner) for learner in learners.values())
        self._lock = threading.Lock()
        self._cancel = threading.Event()
        self._state = LiveState.STARTING
        self._rounds: dict[str, list[Round]] = {name: [] for name in learners}
        self._seconds = 0.0
        self._error = ""
        self._thread: threading.Thread | None = None

    @property
    def started(self) -> bool:
        """Whether :meth:`start` has been called."""
        return self._thread is not None

    def start(self) -> LiveComparison:
        """Start computing in a daemon thread (once; later calls do nothing).

        Returns:
            The comparison.
        """
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._work, name="bnn-active-live", daemon=True
                )
                self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop before the next learner's step (within one step: about a second)."""
        self._cancel.set()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the computing thread to end.

        Args:
            timeout: Seconds to wait at most; None for no limit.

        Returns:
            True if the thread has ended (or never started).
        """
        if self._thread is not None:
            self._thread.join(timeout)
            return not self._thread.is_alive()
        return True

    def snapshot(self) -> Snapshot:
        """What has been published so far; never waits for a computation.

        Returns:
            A copy of the state, the finished rounds, the time spent and any error.
        """
        with self._lock:
            return Snapshot(
                state=self._state,
                rounds={name: list(r) for name, r in self._rounds.items()},
                total=self.total,
                seconds=self._seconds,
                error=self._error,
            )

    def _set(self, **values: object) -> None:
        with self._lock:
            for name, value in values.items():
                setattr(self, f"_{name}", value)

    @contextmanager
    def _waiting(self) -> Iterator[None]:
        self._set(state=LiveState.WAITING)
        yield

    def _work(self) -> None:
        if self.threads:
            torch.set_num_threads(self.threads)
        try:
            with compute_slot(self.pool, self.slots, waiting=self._waiting):
                if self._cancel.is_set():
                    self._set(state=LiveState.CANCELLED)
                    return
                self._set(state=LiveState.RUNNING)
                self._compute()
        except Exception as exc:  # noqa: BLE001 - the page says it failed; the log says why
            log.exception("live active-learning run failed")
            self._set(state=LiveState.FAILED, error=f"{type(exc).__name__}: {exc}"[:300])

    def _compute(self) -> None:
        start = time.perf_counter()
        while not all(learner.done for learner in self.learners.values()):
            stepped: dict[str, Round] = {}
            for name, learner in self.learners.items():
                if self._cancel.is_set():  # a half round is never published
                    self._set(state=LiveState.CANCELLED)
                    return
                if not learner.done:
                    stepped[name] = learner.step()
            with self._lock:
                for name, round_ in stepped.items():
                    self._rounds[name].append(round_)
                self._seconds = time.perf_counter() - start
        self._set(state=LiveState.DONE)


def comparison(
    make: Callable[[str], ActiveLearner], names: tuple[str, ...], threads: int = 0
) -> LiveComparison:
    """One learner per name, to be advanced together once :meth:`LiveComparison.start` is called.

    Args:
        make: Builds the learner of an acquisition function's name.
        names: The acquisition functions, in the order they are stepped and shown.
        threads: torch intra-op threads of the computing thread (see :class:`LiveComparison`).

    Returns:
        The comparison, not started.
    """
    return LiveComparison({name: make(name) for name in names}, threads=threads)
