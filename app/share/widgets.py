"""Streamlit's input widgets with their values in the URL: one table, one factory.

:data:`WIDGETS` says for each shared widget what its value is when neither the URL nor the user
chose one, and how a URL text is read (:mod:`app.share.codec`), both from the widget's own
arguments under Streamlit's names. :func:`shared` makes the page-facing function of a row: it
takes Streamlit's own arguments, the widget's ``key`` (required) being the URL parameter's name,
and a keyword-only ``container`` (a column, the sidebar…; ``st`` by default), and binds the
value to the URL (:func:`app.share.binding.bound`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import streamlit as st

from app.share.binding import bound
from app.share.codec import (
    LinkValueError,
    PartlyUsable,
    encode,
    listing,
    parse_bool,
    parse_choice,
    parse_choices,
    parse_number,
    parse_text,
)

Arguments = dict[str, Any]
"""A widget's arguments by Streamlit's names, its defaults filled in."""


@dataclass(frozen=True)
class Widget:
    """How one Streamlit widget is shared.

    Attributes:
        default: Its arguments → its value when neither the URL nor the user chose one.
        parse: Its arguments → the reader of a URL text (raises :class:`LinkValueError`).
        starting_at: Its arguments and a value → the argument that makes that value its
            default, as ``(name, argument)``.
    """

    default: Callable[[Arguments], Any]
    parse: Callable[[Arguments], Callable[[str], Any]]
    starting_at: Callable[[Arguments, Any], tuple[str, Any]] = lambda a, v: ("value", v)


def _choice(a: Arguments) -> Callable[[str], Any]:
    return lambda raw: parse_choice(raw, a["options"])


def _choices(a: Arguments) -> Callable[[str], list[Any]]:
    options, limit = a["options"], a["max_selections"]

    def parse(raw: str) -> list[Any]:
        chosen, unknown = parse_choices(raw, options)
        if limit is not None and len(chosen) > limit:
            raise LinkValueError(f"more than {limit} choices")
        if unknown and not chosen and raw:
            raise LinkValueError(f"none of it is among {listing(options)}")
        if unknown:
            raise PartlyUsable(f"{', '.join(unknown)} not among {listing(options)}", chosen)
        return chosen

    return parse


def _number(default: Callable[[Arguments], Any]) -> Callable[[Arguments], Callable[[str], Any]]:
    """A reader of one number, or of a pair ``low,high`` when the default is a pair.

    Whole numbers unless a bound, the step or the default is a float.
    """

    def reader(a: Arguments) -> Callable[[str], Any]:
        low, high, value = a["min_value"], a["max_value"], default(a)
        pair = isinstance(value, list | tuple)
        numbers = (low, high, a["step"], *(value if pair else [value]))
        integer = not any(isinstance(v, float) for v in numbers)

        def parse(raw: str) -> Any:
            if not pair:
                return parse_number(raw, integer, low, high)
            parts = raw.split(",")
            if len(parts) != 2:
                raise LinkValueError("not two numbers")
            first, second = (parse_number(p, integer, low, high) for p in parts)
            if first > second:
                raise LinkValueError("the first number is larger than the second")
            return (first, second)

        return parse

    return reader


def _chosen_index(a: Arguments) -> Any:
    return a["options"][a["index"]] if a["index"] is not None and a["options"] else None


def _at_index(a: Arguments, value: Any) -> tuple[str, Any]:
    return "index", list(a["options"]).index(value)


def _slider_default(a: Arguments) -> Any:
    return a["value"] if a["value"] is not None else a["min_value"]


def _number_input_default(a: Arguments) -> Any:
    if a["value"] == "min":
        return a["min_value"] if a["min_value"] is not None else 0
    return a["value"]


WIDGETS: dict[str, Widget] = {
    "selectbox": Widget(_chosen_index, _choice, _at_index),
    "radio": Widget(_chosen_index, _choice, _at_index),
    "select_slider": Widget(
        lambda a: a["value"] if a["value"] is not None else next(iter(a["options"]), None),
        _choice,
    ),
    "multiselect": Widget(
        lambda a: list(a["default"]) if a["default"] is not None else [],
        _choices,
        lambda a, v: ("default", list(v)),
    ),
    "slider": Widget(_slider_default, _number(_slider_default)),
    "number_input": Widget(_number_input_default, _number(_number_input_default)),
    "checkbox": Widget(lambda a: bool(a["value"]), lambda a: parse_bool),
    "toggle": Widget(lambda a: bool(a["value"]), lambda a: parse_bool),
    "text_input": Widget(
        lambda a: a["value"] if a["value"] is not None else "",
        lambda a: lambda raw: parse_text(raw, a["max_chars"]),
    ),
}
"""The shared widgets by Streamlit's name: options named by value, numbers range-checked,
lists comma-separated (items that name no option are left out with a note), booleans 1/0.
A value from the link is drawn as the widget's default (:func:`app.share.binding.bound`)."""


def shared(name: str) -> Callable[..., Any]:
    """Make ``st.<name>`` whose value lives in the URL under its ``key``.

    Args:
        name: A :data:`WIDGETS` name, e.g. ``"selectbox"``.

    Returns:
        A function taking ``st.<name>``'s own arguments plus a keyword-only ``container``
        (where to draw it; ``st`` by default) and returning the widget's value.
    """
    widget = WIDGETS[name]
    signature = inspect.signature(getattr(st, name))

    def draw(*args: Any, container: Any = None, **kwargs: Any) -> Any:
        given = signature.bind(*args, **kwargs)
        if "options" in given.arguments:  # an iterable is read more than once
            given.arguments["options"] = list(given.arguments["options"])
        full = signature.bind(*given.args, **given.kwargs)
        full.apply_defaults()
        default = widget.default(full.arguments)

        def draw_from(start: Any) -> Any:
            if encode(start) != encode(default):  # the link's value: the browser's default
                argument, value = widget.starting_at(full.arguments, start)
                given.arguments[argument] = value
            return getattr(container or st, name)(*given.args, **given.kwargs)

        return bound(full.arguments["key"], default, widget.parse(full.arguments), draw_from)

    draw.__name__ = draw.__qualname__ = name
    draw.__doc__ = f"``st.{name}`` whose value lives in the URL under ``key`` (see :func:`shared`)."
    return draw


selectbox = shared("selectbox")
radio = shared("radio")
select_slider = shared("select_slider")
multiselect = shared("multiselect")
slider = shared("slider")
number_input = shared("number_input")
checkbox = shared("checkbox")
toggle = shared("toggle")
text_input = shared("text_input")
