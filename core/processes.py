"""Processes this package owns: the command line's, and the workers it runs studies in.

A long CPU study (Gal et al.'s active-learning runs, hours of small convolutions) runs fastest
as independent runs side by side, one process and one CPU thread each
(:func:`run_in_processes`). Two settings make such a process faster, and only a process that
the package owns may take them — never a server, whose process its visitors share:

* one torch thread (:func:`torch.set_num_threads`), so that processes do not fight over cores;
* :func:`keep_freed_memory`: glibc's malloc hands every block of 128 KB or more back to the
  kernel when it is freed, and each new tensor of a training step then starts with a page fault
  per 4 KB page it touches. For Gal et al.'s CNN those faults were 14 % of a round's training
  time on this machine's virtual CPUs (1.9 s of system time in 13.5 s for 20 epochs on 600
  labels; 0 s with freed memory kept).
"""

from __future__ import annotations

import ctypes
import multiprocessing
import platform
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from typing import Any

from core.progress import ProgressFn, report

M_TRIM_THRESHOLD = -1
M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameters (``malloc.h``)."""

KEPT_BLOCK_BYTES = 32 << 20
"""Freed blocks up to this size stay in the process's heap for reuse: glibc's largest
``M_MMAP_THRESHOLD`` (a training step of Gal et al.'s CNN allocates blocks up to 10 MB)."""

KEPT_TOP_BYTES = 1 << 30
"""Free memory at the heap's top returned to the kernel only beyond this much."""

POLL_S = 1.0
"""Seconds between looks at the workers' progress."""


def keep_freed_memory() -> bool:
    """Keep freed memory in this process for reuse instead of returning it to the kernel.

    Process-wide and never undone: for processes this package owns (the command line's, its
    study workers), not for a server's.

    Returns:
        True if glibc's malloc took the settings; False elsewhere (another C library, or a
        platform without ``mallopt``), where nothing changes.
    """
    if platform.system() != "Linux" or platform.libc_ver()[0] != "glibc":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(
        mallopt(M_MMAP_THRESHOLD, KEPT_BLOCK_BYTES) and mallopt(M_TRIM_THRESHOLD, KEPT_TOP_BYTES)
    )


_progress_queue: Any = None
"""In a worker process of :func:`run_in_processes`: where its calls report their progress."""


def _worker_setup(threads: int, queue: Any) -> None:
    """Initialise a worker process of :func:`run_in_processes`."""
    import torch

    global _progress_queue
    torch.set_num_threads(threads)
    keep_freed_memory()
    _progress_queue = queue


def _call(function: Callable[..., Any], index: int, arguments: tuple, reports: bool) -> Any:
    """Run in a worker: ``function(*arguments)``, with a ``progress`` sent to the parent."""
    if not reports:
        return function(*arguments)
    return function(*arguments, progress=lambda f, m: _progress_queue.put((index, f, m)))


def run_in_processes(
    function: Callable[..., Any],
    arguments: Sequence[tuple],
    workers: int,
    *,
    titles: Sequence[str] | None = None,
    threads: int = 1,
    progress: ProgressFn | None = None,
) -> list[Any]:
    """``function(*a)`` for every ``a`` in ``arguments``, in ``workers`` processes side by side.

    The processes are started fresh ("spawn"), each with ``threads`` torch threads and
    :func:`keep_freed_memory`, and take the calls in the order given: put the longest first,
    so that no process idles at the end while another still runs a long one.

    Args:
        function: A module-level function (the workers import it by name); with ``progress``
            it is called as ``function(*a, progress=p)`` and reports through ``p``
            (a :data:`~core.progress.ProgressFn`).
        arguments: Its positional arguments per call; each must pickle.
        workers: Processes (at least 1).
        titles: A name per call for the progress messages; None: "call i".
        threads: Torch threads per process.
        progress: Gets the mean of the calls' fractions done (a finished call counts 1) and
            the latest message, prefixed with its call's title, every :data:`POLL_S` seconds
            at most; and "<title> done" once for every call that ends, even when several
            end within one poll.

    Returns:
        The results, in the order of ``arguments``.

    Raises:
        ValueError: If ``workers`` or ``threads`` is below 1.
        Exception: The first exception a call raised (the calls not started yet are dropped).
    """
    if workers < 1 or threads < 1:
        raise ValueError(f"need at least one worker and one thread, not {workers} and {threads}")
    titles = list(titles) if titles is not None else [f"call {i}" for i in range(len(arguments))]
    results: list[Any] = [None] * len(arguments)
    if not arguments:
        return results
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    fractions = [0.0] * len(arguments)
    ended = [False] * len(arguments)
    with ProcessPoolExecutor(
        workers, mp_context=context, initializer=_worker_setup, initargs=(threads, queue)
    ) as pool:
        futures = {
            pool.submit(_call, function, i, tuple(a), progress is not None): i
            for i, a in enumerate(arguments)
        }
        pending = set(futures)
        try:
            while pending:
                finished, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
                message = None
                while not queue.empty():
                    i, fraction, text = queue.get()
                    if ended[i]:  # a report that arrived after its call's result
                        continue
                    fractions[i], message = fraction, f"{titles[i]}: {text}"
                if message is not None:
                    report(progress, sum(fractions) / len(fractions), message)
                for future in finished:
                    i = futures[future]
                    results[i] = future.result()
                    fractions[i], ended[i] = 1.0, True
                    report(progress, sum(fractions) / len(fractions), f"{titles[i]} done")
        except BaseException:
            for future in futures:
                future.cancel()
            raise
    return results
