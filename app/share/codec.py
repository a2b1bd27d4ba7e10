"""The URL codec of shared views: widget values to URL text and back (pure, no Streamlit).

Options by their value (not their displayed title), lists comma-separated (a comma inside an
item as ``%2C``), floats via ``repr``, booleans ``1``/``0``. The parse functions raise
:class:`LinkValueError` on a value that does not fit its widget.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

SHOWN_OPTIONS = 8
"""Options a note lists when a URL value names none of them."""


class LinkValueError(ValueError):
    """A URL value that does not fit its widget; the message says why, in words."""


class PartlyUsable(LinkValueError):
    """A URL list of which only some items fit; ``value`` holds those.

    Args:
        message: What was left out, in words.
        value: The usable part.
    """

    def __init__(self, message: str, value: Any) -> None:
        super().__init__(message)
        self.value = value


def _token(value: Any) -> str:
    """Encode one scalar: bools as 1/0, floats via repr, others via str."""
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, float):
        return repr(value)
    if value is None:
        return ""
    return str(getattr(value, "value", value))  # an Enum by its value


def _escape(text: str) -> str:
    return text.replace("%", "%25").replace(",", "%2C")


def _unescape(text: str) -> str:
    return text.replace("%2C", ",").replace("%2c", ",").replace("%25", "%")


def encode(value: Any) -> str:
    """Encode a widget value for the URL.

    Args:
        value: A scalar (str, int, float, bool, None) or a list/tuple of scalars.

    Returns:
        The text: lists comma-separated (a comma inside an item as ``%2C``), floats via
        ``repr``, booleans ``1``/``0``, None as ``""``.
    """
    if isinstance(value, list | tuple):
        return ",".join(_escape(_token(v)) for v in value)
    return _token(value)


def listing(options: Sequence[Any]) -> str:
    """The first :data:`SHOWN_OPTIONS` options as the URL names them, for a note."""
    shown = ", ".join(_token(o) for o in options[:SHOWN_OPTIONS])
    return shown + (", …" if len(options) > SHOWN_OPTIONS else "")


def parse_choice(raw: str, options: Sequence[Any]) -> Any:
    """Find the option a URL value names.

    Args:
        raw: The URL text.
        options: The widget's options.

    Returns:
        The option whose :func:`encode` is ``raw``.

    Raises:
        LinkValueError: If no option is encoded as ``raw``.
    """
    for option in options:
        if _token(option) == raw:
            return option
    if not options:
        raise LinkValueError("this control has no options now")
    raise LinkValueError(f"not one of {listing(options)}")


def parse_choices(raw: str, options: Sequence[Any]) -> tuple[list[Any], list[str]]:
    """Find the options a comma-separated URL value names.

    Args:
        raw: The URL text (``""`` for no option).
        options: The widget's options.

    Returns:
        The named options in the URL's order (each once), and the items that name none.
    """
    chosen, unknown = [], []
    for item in (_unescape(t) for t in raw.split(",")) if raw else ():
        try:
            option = parse_choice(item, options)
        except LinkValueError:
            unknown.append(item)
            continue
        if option not in chosen:
            chosen.append(option)
    return chosen, unknown


def parse_number(
    raw: str, integer: bool, min_value: float | None = None, max_value: float | None = None
) -> int | float:
    """Read a number from a URL value and check its range.

    Args:
        raw: The URL text.
        integer: Whether the widget holds integers.
        min_value: Smallest allowed value (None: no bound).
        max_value: Largest allowed value (None: no bound).

    Returns:
        The number, an ``int`` if ``integer``.

    Raises:
        LinkValueError: If ``raw`` is not a (finite, whole if ``integer``) number or lies
            outside ``[min_value, max_value]``.
    """
    try:
        number = float(raw)
    except ValueError:
        raise LinkValueError("not a number") from None
    if not math.isfinite(number):
        raise LinkValueError("not a finite number")
    if integer:
        if number != int(number):
            raise LinkValueError("not a whole number")
        number = int(number)
    if (min_value is not None and number < min_value) or (
        max_value is not None and number > max_value
    ):
        low = "" if min_value is None else _token(min_value)
        high = "" if max_value is None else _token(max_value)
        raise LinkValueError(f"outside the range {low}…{high}")
    return number


def parse_bool(raw: str) -> bool:
    """Read an on/off value from the URL.

    Args:
        raw: The URL text: ``1``/``0`` (also ``true``/``false``, ``yes``/``no``).

    Returns:
        The boolean.

    Raises:
        LinkValueError: For any other text.
    """
    text = raw.strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise LinkValueError("not 1 or 0")


def parse_text(raw: str, max_chars: int | None = None) -> str:
    """Check a text value from the URL.

    Args:
        raw: The URL text.
        max_chars: The widget's limit (None: none).

    Returns:
        ``raw``.

    Raises:
        LinkValueError: If it is longer than ``max_chars``.
    """
    if max_chars is not None and len(raw) > max_chars:
        raise LinkValueError(f"longer than {max_chars} characters")
    return raw
