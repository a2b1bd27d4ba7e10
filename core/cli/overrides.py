"""``--set KEY=VALUE`` options: settings of a frozen dataclass replaced from the command line."""

from __future__ import annotations

import dataclasses
from typing import TypeVar

Settings = TypeVar("Settings")


def parse_value(text: str, default: object) -> object:
    """``text`` as a value of the type of ``default``.

    Tuples are comma-separated integers; a None default takes a number or ``none``.

    Args:
        text: The command line's text.
        default: The field's default value.

    Returns:
        The value.

    Raises:
        ValueError: If the text is not of that type.
    """
    if isinstance(default, tuple):
        return tuple(int(t) for t in text.split(",") if t.strip())
    if isinstance(default, bool):
        if text.lower() not in ("true", "false"):
            raise ValueError(text)
        return text.lower() == "true"
    if default is None:
        return None if text.lower() == "none" else float(text)
    return type(default)(text)


def describe(default: object) -> str:
    """What a value of ``default``'s field looks like, for an error message.

    Args:
        default: The field's default value.

    Returns:
        E.g. ``"a whole number"``.
    """
    if isinstance(default, tuple):
        return "comma-separated whole numbers"
    if isinstance(default, bool):
        return "true or false"
    if isinstance(default, int):
        return "a whole number"
    return "a number" if default is None or isinstance(default, float) else "a value"


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
    fields = {f.name: f for f in dataclasses.fields(base)}
    values: dict = {}
    for item in assignments:
        key, sep, text = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or key not in fields:
            raise ValueError(f"--set {item!r}: use KEY=VALUE with KEY one of {', '.join(fields)}")
        default = fields[key].default  # its type, e.g. None for "a number or none"
        if default is dataclasses.MISSING:
            default = getattr(base, key)
        try:
            values[key] = parse_value(text.strip(), default)
        except ValueError:
            raise ValueError(f"--set {item!r}: {text!r} is not {describe(default)}") from None
    return dataclasses.replace(base, **values)


def suffix(assignments: list[str]) -> str:
    """A file-name part that says which settings were changed, e.g. ``-init_glorot``.

    Args:
        assignments: The ``--set`` items.

    Returns:
        ``""`` for none.
    """
    parts = [item.replace("=", "_").replace(",", "-").strip() for item in assignments]
    return "".join(f"-{part}" for part in parts)
