"""One progress-report convention for all long work in ``core``.

Long functions take ``progress: ProgressFn | None`` and call it with the fraction done in
[0, 1] and a short message. The CLI renders it as a text bar (:func:`text_progress`), the app
as ``st.progress``. :func:`run_all` runs a list of :class:`Job` s and reports them as one bar;
a study exposes its missing work as jobs so that pages and the CLI can show one bar for it.
:func:`compute_slot` bounds how much of one kind of work a server runs at once, over all its
sessions.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, TextIO

ProgressFn = Callable[[float, str], None]


def report(progress: ProgressFn | None, fraction: float, message: str = "") -> None:
    """Call ``progress`` if given, clamping ``fraction`` to [0, 1].

    Args:
        progress: The callback, or None to do nothing.
        fraction: Fraction done.
        message: Short message shown with the bar.
    """
    if progress is not None:
        progress(min(max(float(fraction), 0.0), 1.0), message)


def text_progress(label: str, stream: TextIO | None = None, width: int = 30) -> ProgressFn:
    """A :data:`ProgressFn` drawing ``label [#####-----]  42% message`` on one terminal line.

    The line also shows the seconds elapsed since this call and ends with a newline at 100 %.

    Args:
        label: Text before the bar.
        stream: Where to draw; None for ``sys.stderr``.
        width: Number of characters of the bar.

    Returns:
        The progress callback.
    """
    out = stream or sys.stderr
    start = time.perf_counter()

    def draw(fraction: float, message: str) -> None:
        filled = int(round(fraction * width))
        elapsed = time.perf_counter() - start
        bar = "#" * filled + "-" * (width - filled)
        out.write(f"\r{label} [{bar}] {fraction:4.0%} {elapsed:6.1f}s {message}"[:160].ljust(100))
        if fraction >= 1.0:
            out.write("\n")
        out.flush()

    return draw


def share(progress: ProgressFn | None, done: int, total: int, label: str = "") -> ProgressFn:
    """Progress of one of ``total`` equal steps, reported as a share of the whole.

    Args:
        progress: The callback of the whole, or None.
        done: Index of this step (0-based), i.e. the number of steps already done.
        total: Number of equal steps.
        label: Prefix of each message (``"label: message"``), if not empty.

    Returns:
        The progress callback of this step.
    """
    prefix = f"{label}: " if label else ""
    return lambda fraction, message: report(progress, (done + fraction) / total, prefix + message)


@dataclass(frozen=True)
class Job:
    """One piece of expensive work.

    Attributes:
        title: Names the job in progress messages.
        run: ``run(progress)`` computes (and caches) the result.
    """

    title: str
    run: Callable[[ProgressFn | None], Any]


def run_all(jobs: list[Job], progress: ProgressFn | None = None) -> list[Any]:
    """Run ``jobs`` in order, reporting them as one progress from 0 to 1.

    Args:
        jobs: The jobs, each counted as an equal share.
        progress: The callback, or None.

    Returns:
        The jobs' results, in order.
    """
    results = [job.run(share(progress, i, len(jobs), job.title)) for i, job in enumerate(jobs)]
    report(progress, 1.0, "done")
    return results


_POOLS: dict[str, threading.BoundedSemaphore] = {}
_POOLS_LOCK = threading.Lock()


@contextmanager
def compute_slot(
    pool: str, size: int, *, waiting: Callable[[], AbstractContextManager] | None = None
) -> Iterator[bool]:
    """Hold one of the ``size`` slots of a pool shared by every session of this process.

    So that one class's heavy work (live bandit runs, regression fits) cannot take every core
    from the others.

    Args:
        pool: The pool's name; its size is fixed by its first use.
        size: How many holders the pool admits at once.
        waiting: When no slot is free, wait for one inside this context (e.g. a spinner that
            says so); None: do not wait.

    Yields:
        True while a slot is held; False when none was free and ``waiting`` is None (nothing
        is held then).
    """
    with _POOLS_LOCK:
        semaphore = _POOLS.setdefault(pool, threading.BoundedSemaphore(size))
    held = semaphore.acquire(blocking=False)
    if not held and waiting is not None:
        with waiting():
            held = semaphore.acquire()
    try:
        yield held
    finally:
        if held:
            semaphore.release()
