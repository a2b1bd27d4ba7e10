"""The sources of stated numbers: one function per kind of value, registered by name.

A source takes the marker's arguments as strings and returns the value as the page that shows
it formats it, computed by the same core call that page makes (so a document and the screen
cannot disagree)::

    @stated("ood_auroc")
    def ood_auroc(dataset: str, model: str, score: str) -> str: ...

Sources live in the modules of :data:`SOURCE_MODULES`, imported on first use.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from functools import cache

Source = Callable[..., str]

SOURCE_MODULES = (
    "core.stated.active",
    "core.stated.adapt",
    "core.stated.attack",
    "core.stated.bandits",
    "core.stated.calibration",
    "core.stated.cold_posterior",
    "core.stated.comparison",
    "core.stated.drawing",
    "core.stated.models",
    "core.stated.ood",
    "core.stated.pruning",
    "core.stated.regression",
    "core.stated.training",
)
"""Modules whose import registers sources, one per page whose numbers documents state."""

_SOURCES: dict[str, Source] = {}
_AFTER_ACTION: set[str] = set()


def stated(name: str, on_opening: bool = True) -> Callable[[Source], Source]:
    """Register a function as the source of the stated values called ``name``.

    Args:
        name: The name markers use, e.g. ``"ood_auroc"``.
        on_opening: Whether the page shows the value as the guide's link opens it; False for
            what a user's action computes (a training run started from the link).

    Returns:
        The decorator; it returns the function unchanged.

    Raises:
        ValueError: If the name is taken.
    """

    def register(function: Source) -> Source:
        if name in _SOURCES:
            raise ValueError(f"two sources of stated values are called {name!r}")
        _SOURCES[name] = function
        if not on_opening:
            _AFTER_ACTION.add(name)
        return function

    return register


def sources() -> dict[str, Source]:
    """Every registered source, by name (importing :data:`SOURCE_MODULES` first).

    Returns:
        Name → source function.
    """
    for module in SOURCE_MODULES:
        importlib.import_module(module)
    return dict(_SOURCES)


def on_opening(name: str) -> bool:
    """Whether a source's values show on its page as a link opens it.

    Args:
        name: A registered source's name.

    Returns:
        False for values that a user's action on the page computes.
    """
    sources()
    return name not in _AFTER_ACTION


@cache
def value(key: str) -> str:
    """Compute one stated value (cached for the process: sources read fixed, seeded results).

    Args:
        key: The source's name and its arguments separated by spaces, as in a marker.

    Returns:
        The value, formatted as its page shows it.

    Raises:
        KeyError: If no source has that name.
        TypeError: If the arguments do not fit the source.
    """
    name, *args = key.split()
    known = sources()
    if name not in known:
        raise KeyError(f"no source of stated values is called {name!r}: one of {sorted(known)}")
    return known[name](*args)
