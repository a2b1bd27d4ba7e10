"""Prepare a server process before its first visitor.

A fresh Streamlit server imports the pages' modules (torch, pandas, plotly, the lab's core), lists
the checkpoints and loads the compared models only when the first visitor opens a page, who then
waits for all of it. :func:`warm_up` does that work first, in the server's own process, so the
memoised results (imported modules, :mod:`core.storage.checkpoints`' listing and shared models,
the test set of :func:`app.ui.test_set`) are there when the first visit asks for them. It also
imports what torch itself imports only on first use: ``torch._dynamo``, which the first optimiser
a page builds would otherwise import (about 3 s on a 2-core CPU, in the first round of a live
training). Last it starts the server's training workers (:func:`start_training`), so that jobs
queued before a restart, or by another replica, train without waiting for a visitor.
``python -m app.serve`` calls it before it starts serving.
"""

from __future__ import annotations

import ast
import importlib
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger(__name__)
BARE_MODE_LOGGERS = (
    "streamlit.runtime.caching.cache_data_api",
    "streamlit.runtime.scriptrunner_utils.script_run_context",
)
"""Streamlit's loggers that warn about calls outside a session (harmless here)."""


def imported_modules(scripts: Iterable[Path]) -> list[str]:
    """The absolute imports of some scripts, in order of first appearance.

    Args:
        scripts: Python files (the app's entry point and pages), read as source, not run.

    Returns:
        Module names, e.g. ``["streamlit", "app", "app.ui"]``; for ``from X import Y`` both
        ``X`` and ``X.Y`` (Y may be a module).
    """
    names: list[str] = []
    for script in scripts:
        for node in ast.walk(ast.parse(Path(script).read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # ``from app import ui`` imports the module app.ui; ``from os import path`` a name
                found = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
            elif isinstance(node, ast.Import):
                found = [alias.name for alias in node.names]
            else:
                continue
            names += [name for name in found if name not in names]
    return names


def import_all(names: Iterable[str]) -> list[str]:
    """Import modules, skipping (and logging) those that fail here.

    Args:
        names: Module names.

    Returns:
        The names that did not import, other than names imported from a module (the page
        that needs one reports it to its visitor).
    """
    failed = []
    for name in names:
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            parent, _, attribute = name.rpartition(".")
            if exc.name == name and parent and hasattr(sys.modules.get(parent), attribute):
                continue  # ``X.Y`` of ``from X import Y`` is a name in X, not a module
            log.info("warm-up: %s does not import (%s)", name, exc)
            failed.append(name)
        except Exception as exc:  # e.g. a component that registers itself with a running server
            log.info("warm-up: %s does not import outside a session (%s)", name, exc)
            failed.append(name)
    return failed


DEFERRED_TORCH_MODULES = ("torch._dynamo",)
"""Modules torch imports on first use (``torch._dynamo`` by every optimiser's constructor)."""


def load_shared_state() -> None:
    """Fill the process-wide memos the pages read.

    The native kernels (built on the machine's first start), the checkpoint listing (each
    one's health), the models compared by default and the MNIST test set.
    """
    from app import ui
    from core import catalogue
    from core.data import DatasetUnavailable
    from core.engine import native

    native.kernels()  # compiled once per machine (disk cache), loaded once per process
    infos = ui.all_checkpoints()
    for name in catalogue.default_models([i.spec.name for i in infos if i.available]):
        ui.load_model(name)
    try:
        ui.test_set("mnist")
    except DatasetUnavailable as exc:  # the pages that need it say so
        log.warning("warm-up: %s", exc)


def start_training() -> None:
    """Start this server's training workers (:func:`core.jobs.training_queue`).

    They take the jobs queued in the lab's database (before a restart, or by another replica)
    at once, instead of at the first page visit.
    """
    from core.jobs import training_queue

    training_queue()


def warm_up(scripts: Iterable[Path]) -> dict[str, float]:
    """Import what the scripts import, load the shared state, then start the training workers.

    Args:
        scripts: The app's entry point and its pages.

    Returns:
        Seconds spent per step: ``{"imports": …, "kernels, checkpoints, models, test set": …,
        "training queue": …}``.
    """
    steps: dict[str, Callable[[], object]] = {
        "imports": lambda: import_all([*imported_modules(scripts), *DEFERRED_TORCH_MODULES]),
        "kernels, checkpoints, models, test set": load_shared_state,
        "training queue": start_training,
    }
    seconds = {}
    with _quiet(BARE_MODE_LOGGERS):
        for step, run in steps.items():
            start = time.perf_counter()
            run()
            seconds[step] = time.perf_counter() - start
    return seconds


@contextmanager
def _quiet(names: Iterable[str]) -> Iterator[None]:
    """Only errors from these loggers meanwhile (Streamlit's, which its import sets up)."""
    import streamlit  # noqa: F401

    loggers = [logging.getLogger(name) for name in names]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)
