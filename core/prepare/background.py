"""The teacher's *Prepare for class*, run in the background of a server.

One :class:`PreparationRun` per server (the app keeps it for every session): the teacher starts
it, :func:`core.prepare.registry.prepare` runs in a thread while the page polls
:meth:`PreparationRun.state` to draw a progress bar, and a cancel stops it before the next
piece of work (what is done stays cached). Starting and cancelling are teacher-only
(:func:`core.roles.require_teacher`).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from core.prepare.registry import LinkReport, guide_url, prepare, problems, read_guide
from core.roles import Actor, require_teacher
from core.stated.guide import GUIDE


@dataclass(frozen=True)
class PreparationState:
    """A snapshot of a run for the page.

    Attributes:
        running: Whether it is computing now.
        fraction: Fraction of the links done, in [0, 1].
        message: What it is computing.
        links: The links done so far.
        total: Links to prepare.
        cancelled: Whether the teacher cancelled it.
        error: The error that ended it, if any.
        seconds: Seconds since it started (to its end, once ended).
    """

    running: bool = False
    fraction: float = 0.0
    message: str = ""
    links: tuple[LinkReport, ...] = ()
    total: int = 0
    cancelled: bool = False
    error: str = ""
    seconds: float = 0.0


@dataclass
class PreparationRun:
    """The server's one preparation: started, followed and cancelled from any session."""

    _lock: threading.Lock = field(default_factory=threading.Lock)
    _state: PreparationState = field(default_factory=PreparationState)
    _cancel: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _started: float = 0.0

    def state(self) -> PreparationState:
        """The run as it is now (never started: all zero)."""
        with self._lock:
            state = self._state
            if state.running:
                state = PreparationState(
                    **(state.__dict__ | {"seconds": time.monotonic() - self._started})
                )
            return state

    def start(self, actor: Actor, guide=GUIDE) -> bool:
        """Start preparing every covered link of the guide, unless a run is going on.

        Args:
            actor: Who asks (the teacher only).
            guide: The guide whose links to prepare.

        Returns:
            Whether it started (False: one is already running).

        Raises:
            PermissionError: If ``actor`` is not the teacher.
        """
        require_teacher(actor, "prepare_class")
        with self._lock:
            if self._state.running:
                return False
            links = read_guide(guide)
            bad = {line.split(": ")[0] for line in problems(links)}
            links = [link for link in links if guide_url(link) not in bad]
            self._cancel.clear()
            self._started = time.monotonic()
            self._state = PreparationState(running=True, total=len(links), message="starting")
            self._thread = threading.Thread(
                target=self._run, args=(links,), name="prepare-for-class", daemon=True
            )
            self._thread.start()
        return True

    def cancel(self, actor: Actor) -> None:
        """Stop the run before its next piece of work.

        Args:
            actor: Who asks (the teacher only).

        Raises:
            PermissionError: If ``actor`` is not the teacher.
        """
        require_teacher(actor, "prepare_class")
        self._cancel.set()

    def join(self, timeout: float | None = None) -> None:
        """Wait for the run's thread to end (tests, shutdown)."""
        if self._thread is not None:
            self._thread.join(timeout)

    def _update(self, **changes) -> None:
        with self._lock:
            self._state = PreparationState(**(self._state.__dict__ | changes))

    def _run(self, links) -> None:
        done: list[LinkReport] = []

        def on_link(report: LinkReport) -> None:
            done.append(report)
            self._update(links=tuple(done))

        error = ""
        try:
            prepare(
                links,
                progress=lambda fraction, message: self._update(fraction=fraction, message=message),
                should_stop=self._cancel.is_set,
                on_link=on_link,
            )
        except Exception as exc:  # shown to the teacher; the server goes on
            error = f"{type(exc).__name__}: {exc}".split("\n")[0]
        self._update(
            running=False,
            cancelled=self._cancel.is_set(),
            error=error,
            seconds=time.monotonic() - self._started,
        )
