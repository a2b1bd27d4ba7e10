"""``--set KEY=VALUE`` options: settings of a frozen dataclass replaced from the command line."""

from __future__ import annotations

import dataclasses
import math
from typing import TypeVar

Settings = TypeVar("Settings")
LARGEST = 10**9
"""The largest whole number (in size) a setting takes from the command line."""


def _whole(text: str) -> int:
    value = int(text)
    if abs(value) > LARGEST:
        raise ValueError(text)
    return value


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return value


def parse_value(text: str, default: object) -> object:
    """``text`` as a value of the type of ``default``.

    Tuples are comma-separated integers; a None default takes a number or ``none``. Numbers
    must be finite (``inf`` is not a number here), whole numbers at most :data:`LARGEST` in size.

    Args:
        text: The command line's text.
        default: The field's default value.

    Returns:
        The value.

    Raises:
        ValueError: If the text is not of that type.
    """
    if isinstance(default, tuple):
        return tuple(_whole(t) for t in text.split(",") if t.strip())
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise ValueError(text)
        return text.lower() == "true"
    if default is None:
        return None if text.lower() == "none" else _finite(text)
    if isinstance(default, int):
        return _whole(text)
    return _finite(text) if isinstance(default, float) else type(default)(text)


def describe(default: object) -> str:
    """What a value of ``default``'s field looks like, for an error message.

    Args:
        default: The field's default value.

    Returns:
        E.g. ``"a whole number"``.
    """
    if isinstance(default, tuple):
        return f"comma-separated whole numbers (each at most {LARGEST:,})"
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return f"a whole number (at most {LARGEST:,} in size)"
    return "a number" if default is None or isinstance(default, float) else "a value"


def parsed_assignments(types: dict, assignments: list[str]) -> dict:
    """The values that ``--set KEY=VALUE`` items give, each parsed like its key's example.

    Args:
        types: Key → a value of its type (None for "a number or none"; a list or tuple for
            comma-separated whole numbers).
        assignments: E.g. ``["updates_per_step=2", "hidden=50,50"]``.

    Returns:
        Key → value, for the keys named.

    Raises:
        ValueError: If a key is unknown or a value does not parse.
    """
    values: dict = {}
    for item in assignments:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in types:
            raise ValueError(f"--set {item!r}: use KEY=VALUE with KEY one of {', '.join(types)}")
        example = types[key]
        example = tuple(example) if isinstance(example, list) else example
        try:
            values[key] = parse_value(text.strip(), example)
        except ValueError:
            raise ValueError(f"--set {item!r}: {text!r} is not {describe(example)}") from None
    return values


def with_overrides(base: Settings, assignments: list[str]) -> Settings:
    """``base`` with the fields that ``assignments`` name replaced.

    Args:
        base: A frozen dataclass instance.
        assignments: E.g. ``["updates_per_step=2", "hidden=50,50"]``.

    Returns:
        The new settings (their own checks run again).

    Raises:
        ValueError: If a key is unknown or a value does not parse.
    """
    types = {
        f.name: getattr(base, f.name) if f.default is dataclasses.MISSING else f.default
        for f in dataclasses.fields(base)
    }  # a field's default is its type, e.g. None for "a number or none"
    return dataclasses.replace(base, **parsed_assignments(types, assignments))


def suffix(assignments: list[str]) -> str:
    """A file-name part that says which settings were changed, e.g. ``-init_glorot``.

    Args:
        assignments: The ``--set`` items.

    Returns:
        ``""`` for none.
    """
    parts = [item.replace("=", "_").replace(",", "-").strip() for item in assignments]
    return "".join(f"-{part}" for part in parts)
