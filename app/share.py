"""Shareable views: every page's settings live in the URL, plus presenter mode.

Pages draw their settings through the wrappers here (:func:`selectbox`, :func:`radio`,
:func:`select_slider`, :func:`multiselect`, :func:`slider`, :func:`number_input`,
:func:`checkbox`, :func:`toggle`, :func:`text_input`). They take Streamlit's own arguments,
the widget's ``key`` (required) being the URL parameter's name, and a keyword-only
``container`` (a column, the sidebar…; ``st`` by default). Each wrapper:

1. applies a URL value this session has not applied yet (a pasted link, the browser's back
   button) after checking it against the widget's own options, range and type; a value that
   does not fit keeps the default and leaves a note at the top of the page, never an exception;
2. draws the widget, unless the URL's ``hide`` flag lists its key: then the URL value (or the
   default) is used without a control;
3. writes the widget's value back to ``st.query_params``, so the address bar always links to
   this view (a value equal to the default is left out).

Encoding: options by their value (not their displayed title), lists comma-separated, floats via
``repr``, booleans ``1``/``0``. URL flags: ``present=1`` (presenter mode: collapsed sidebar,
larger fonts and figures) and ``hide=key1,key2`` (controls the teacher fixed and hid).

The parse functions (:func:`parse_choice`, :func:`parse_choices`, :func:`parse_number`,
:func:`parse_bool`, :func:`parse_text`) and :func:`encode` are pure and raise
:class:`LinkValueError` on a value that does not fit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any
from urllib.parse import urlencode

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

PRESENT_PARAM = "present"
HIDE_PARAM = "hide"
CLASS_PARAM = "class"  # the class code of a lecture (app/classroom.py, pages/classroom.py)
FLAGS = (PRESENT_PARAM, HIDE_PARAM, CLASS_PARAM)  # kept across page switches
GLOBAL_PREFIX = "sidebar_"  # settings drawn on every page (app/ui.py's sidebar)
NOTE_HEADING = "Some settings in the link could not be used; their defaults apply:"
SHOWN_OPTIONS = 8

_APPLIED_KEY = "_share_applied"  # key -> the URL text this session applied or wrote last
_RUN_KEY = "_share_run"  # this run's note box (set by main.py)
_FLAGS_KEY = "_share_flags"  # present/hide as first seen, kept across page switches
_PAGE_KEY = "_share_page"  # the page of the previous run

PRESENTER_CSS = """<style>
html { font-size: 20px; }
[data-testid="stMarkdownContainer"] p, [data-testid="stMarkdownContainer"] li,
[data-testid="stCaptionContainer"], [data-testid="stText"],
[data-testid="stWidgetLabel"] p { font-size: 1.2rem; }
[data-testid="stSelectbox"] input, [data-testid="stMultiSelect"] :is(input, span),
[data-testid="stTextInput"] input, [data-testid="stNumberInputContainer"] input,
[data-testid="stTable"] :is(th, td) { font-size: 1.2rem; }
h1 { font-size: 3rem !important; }
h2 { font-size: 2.3rem !important; }
h3 { font-size: 1.8rem !important; }
</style>"""
PRESENTER_FONT = 18  # plotly font size in presenter mode (default ~12)
PRESENTER_TITLE_FONT = 22
PRESENTER_HEIGHT = 1.4  # figure heights are multiplied by this in presenter mode


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


# --- encoding and parsing (pure) -----------------------------------------------------------


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


def _listing(options: Sequence[Any]) -> str:
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
    raise LinkValueError(f"not one of {_listing(options)}")


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


# --- session and URL state -----------------------------------------------------------------


def _in_app() -> bool:
    return get_script_run_ctx() is not None


def _applied() -> dict[str, str | None]:
    return st.session_state.setdefault(_APPLIED_KEY, {})


def _url_value(key: str) -> str | None:
    params = st.query_params
    return params[key] if key in params else None


def _flag(name: str) -> str | None:
    if not _in_app():
        return None
    value = _url_value(name)
    if value is None:
        value = st.session_state.get(_FLAGS_KEY, {}).get(name)
    return value


def presenter() -> bool:
    """Tell whether this view is in presenter mode (``present=1`` in the URL).

    Returns:
        True in presenter mode; False otherwise and outside a Streamlit run.
    """
    value = _flag(PRESENT_PARAM)
    if value is None:
        return False
    try:
        return parse_bool(value)
    except LinkValueError:
        return False


def hidden_keys() -> set[str]:
    """List the controls the URL hides (``hide=key1,key2``).

    Returns:
        Their keys; empty outside a Streamlit run.
    """
    value = _flag(HIDE_PARAM)
    return {k.strip() for k in value.split(",") if k.strip()} if value else set()


def _note(text: str) -> None:
    """Show a note on a link value that was ignored: user text, so via ``st.text``."""
    run = st.session_state.get(_RUN_KEY)
    ctx = get_script_run_ctx()
    if run is None or (ctx is not None and ctx.fragment_ids_this_run):
        st.warning(NOTE_HEADING)  # a page run on its own, or a fragment's rerun: in place
        st.text(text)
        return
    if not run["headed"]:
        run["box"].warning(NOTE_HEADING)
        run["headed"] = True
    run["box"].text(text)


def _from_url(key: str, parse: Callable[[str], Any]) -> tuple[bool, Any]:
    """The URL's value for ``key`` if it is new to this session and fits.

    Returns:
        ``(True, value)`` to apply, else ``(False, None)``; a value that does not fit
        leaves a note.
    """
    raw = _url_value(key)
    applied = _applied()
    if raw is None or (applied.get(key) == raw and key in st.session_state):
        return False, None
    applied[key] = raw
    try:
        return True, parse(raw)
    except PartlyUsable as exc:
        _note(f"Ignored part of {key}={raw} from the link: {exc}.")
        return True, exc.value
    except LinkValueError as exc:
        _note(f"Ignored {key}={raw} from the link: {exc}.")
        return False, None


def _hidden_value(key: str, default: Any, parse: Callable[[str], Any]) -> Any:
    """The value of a hidden control: the URL's if it fits, else the default."""
    raw = _url_value(key)
    if raw is None:
        return default
    try:
        return parse(raw)
    except LinkValueError as exc:
        if _applied().get(key) != raw:
            _applied()[key] = raw
            part = "part of " if isinstance(exc, PartlyUsable) else ""
            _note(f"Ignored {part}{key}={raw} from the link: {exc}.")
        return exc.value if isinstance(exc, PartlyUsable) else default


def _publish(key: str, value: Any, default: Any) -> None:
    """Write a widget's value to the URL (left out when it is the default)."""
    text = encode(value)
    applied = _applied()
    if text == encode(default):
        if key in st.query_params:
            del st.query_params[key]
        applied[key] = None
    else:
        if _url_value(key) != text:
            st.query_params[key] = text
        applied[key] = text


def _bound(
    key: str,
    default: Any,
    parse: Callable[[str], Any],
    draw: Callable[[], Any],
) -> Any:
    """Apply the URL, draw (unless hidden), publish: the mechanism behind every wrapper."""
    if not key:
        raise ValueError("a shared widget needs a key (its URL parameter's name)")
    if key in hidden_keys():  # no control; code reading st.session_state[key] sees the value
        value = _hidden_value(key, default, parse)
        st.session_state[key] = value
        return value
    ok, value = _from_url(key, parse)
    if ok:
        st.session_state[key] = value
    result = draw()
    _publish(key, result, default)
    return result


# --- the wrappers --------------------------------------------------------------------------


def _choice(
    widget: str,
    label: str,
    options: Iterable[Any],
    index: int | None,
    format_func: Callable[[Any], Any],
    key: str,
    container: Any,
    kwargs: dict,
) -> Any:
    """A selectbox or radio (``widget``) whose chosen option lives in the URL under ``key``."""
    options = list(options)
    default = options[index] if index is not None and options else None
    draw = getattr(container or st, widget)
    return _bound(
        key,
        default,
        lambda raw: parse_choice(raw, options),
        lambda: draw(label, options, index=index, format_func=format_func, key=key, **kwargs),
    )


def selectbox(
    label: str,
    options: Iterable[Any],
    index: int | None = 0,
    format_func: Callable[[Any], Any] = str,
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> Any:
    """``st.selectbox`` whose value lives in the URL under ``key``.

    Args:
        label: As Streamlit's.
        options: As Streamlit's; the URL names an option by its value.
        index: As Streamlit's.
        format_func: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it (a column, ``st.sidebar``…); ``st`` by default.
        **kwargs: Further ``st.selectbox`` arguments.

    Returns:
        The chosen option.
    """
    return _choice("selectbox", label, options, index, format_func, key, container, kwargs)


def radio(
    label: str,
    options: Iterable[Any],
    index: int | None = 0,
    format_func: Callable[[Any], Any] = str,
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> Any:
    """``st.radio``, as :func:`selectbox` (same arguments).

    Returns:
        The chosen option.
    """
    return _choice("radio", label, options, index, format_func, key, container, kwargs)


def select_slider(
    label: str,
    options: Iterable[Any] = (),
    value: Any = None,
    format_func: Callable[[Any], Any] = str,
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> Any:
    """``st.select_slider`` (single value) whose value lives in the URL under ``key``.

    Args:
        label: As Streamlit's.
        options: As Streamlit's; the URL names an option by its value.
        value: As Streamlit's (one option; None: the first).
        format_func: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it; ``st`` by default.
        **kwargs: Further ``st.select_slider`` arguments.

    Returns:
        The chosen option.
    """
    options = list(options)
    default = value if value is not None else (options[0] if options else None)
    return _bound(
        key,
        default,
        lambda raw: parse_choice(raw, options),
        lambda: (container or st).select_slider(
            label, options, value=value, format_func=format_func, key=key, **kwargs
        ),
    )


def multiselect(
    label: str,
    options: Iterable[Any],
    default: Iterable[Any] | None = None,
    format_func: Callable[[Any], Any] = str,
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> list[Any]:
    """``st.multiselect`` whose value lives in the URL under ``key`` (comma-separated).

    Items of the URL that name no option are left out with a note; the others apply.

    Args:
        label: As Streamlit's.
        options: As Streamlit's; the URL names options by their values.
        default: As Streamlit's.
        format_func: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it; ``st`` by default.
        **kwargs: Further ``st.multiselect`` arguments (``max_selections`` is respected).

    Returns:
        The chosen options.
    """
    options = list(options)
    limit = kwargs.get("max_selections")

    def parse(raw: str) -> list[Any]:
        chosen, unknown = parse_choices(raw, options)
        if limit is not None and len(chosen) > limit:
            raise LinkValueError(f"more than {limit} choices")
        if unknown and not chosen and raw:
            raise LinkValueError(f"none of it is among {_listing(options)}")
        if unknown:
            raise PartlyUsable(f"{', '.join(unknown)} not among {_listing(options)}", chosen)
        return chosen

    return _bound(
        key,
        list(default) if default is not None else [],
        parse,
        lambda: (container or st).multiselect(
            label, options, default=default, format_func=format_func, key=key, **kwargs
        ),
    )


def _is_float(*values: Any) -> bool:
    return any(isinstance(v, float) for v in values)


def slider(
    label: str,
    min_value: Any = None,
    max_value: Any = None,
    value: Any = None,
    step: Any = None,
    format: str | None = None,  # noqa: A002 - Streamlit's name
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> Any:
    """``st.slider`` (one number, or a range of two) whose value lives in the URL.

    Args:
        label: As Streamlit's.
        min_value: As Streamlit's.
        max_value: As Streamlit's.
        value: As Streamlit's (a number or a pair; None: ``min_value``).
        step: As Streamlit's.
        format: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it; ``st`` by default.
        **kwargs: Further ``st.slider`` arguments.

    Returns:
        The chosen number (or pair).
    """
    default = value if value is not None else min_value
    pair = isinstance(default, list | tuple)
    integer = not _is_float(min_value, max_value, step, *(default if pair else [default]))

    def parse(raw: str) -> Any:
        if not pair:
            return parse_number(raw, integer, min_value, max_value)
        parts = raw.split(",")
        if len(parts) != 2:
            raise LinkValueError("not two numbers")
        low, high = (parse_number(p, integer, min_value, max_value) for p in parts)
        if low > high:
            raise LinkValueError("the first number is larger than the second")
        return (low, high)

    return _bound(
        key,
        default,
        parse,
        lambda: (container or st).slider(
            label, min_value, max_value, value, step, format=format, key=key, **kwargs
        ),
    )


def number_input(
    label: str,
    min_value: Any = None,
    max_value: Any = None,
    value: Any = "min",
    step: Any = None,
    format: str | None = None,  # noqa: A002 - Streamlit's name
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> Any:
    """``st.number_input`` whose value lives in the URL under ``key``.

    Args:
        label: As Streamlit's.
        min_value: As Streamlit's.
        max_value: As Streamlit's.
        value: As Streamlit's (``"min"``: ``min_value``, or 0).
        step: As Streamlit's.
        format: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it; ``st`` by default.
        **kwargs: Further ``st.number_input`` arguments.

    Returns:
        The number.
    """
    default = (min_value if min_value is not None else 0) if value == "min" else value
    integer = not _is_float(min_value, max_value, step, default)
    return _bound(
        key,
        default,
        lambda raw: parse_number(raw, integer, min_value, max_value),
        lambda: (container or st).number_input(
            label, min_value, max_value, value, step, format=format, key=key, **kwargs
        ),
    )


def _switch(widget: str, label: str, value: bool, key: str, container: Any, kwargs: dict) -> bool:
    """A checkbox or toggle (``widget``) whose value lives in the URL under ``key`` (1/0)."""
    draw = getattr(container or st, widget)
    return _bound(key, bool(value), parse_bool, lambda: draw(label, value, key=key, **kwargs))


def checkbox(
    label: str, value: bool = False, key: str = "", *, container: Any = None, **kwargs: Any
) -> bool:
    """``st.checkbox`` whose value lives in the URL under ``key`` (1/0).

    Args:
        label: As Streamlit's.
        value: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it; ``st`` by default.
        **kwargs: Further ``st.checkbox`` arguments.

    Returns:
        Whether it is ticked.
    """
    return _switch("checkbox", label, value, key, container, kwargs)


def toggle(
    label: str, value: bool = False, key: str = "", *, container: Any = None, **kwargs: Any
) -> bool:
    """``st.toggle``, as :func:`checkbox` (same arguments).

    Returns:
        Whether it is on.
    """
    return _switch("toggle", label, value, key, container, kwargs)


def text_input(
    label: str,
    value: str | None = "",
    max_chars: int | None = None,
    key: str = "",
    *,
    container: Any = None,
    **kwargs: Any,
) -> str | None:
    """``st.text_input`` whose value lives in the URL under ``key``.

    Args:
        label: As Streamlit's.
        value: As Streamlit's.
        max_chars: As Streamlit's.
        key: The widget's key and URL parameter.
        container: Where to draw it; ``st`` by default.
        **kwargs: Further ``st.text_input`` arguments.

    Returns:
        The text.
    """
    return _bound(
        key,
        value if value is not None else "",
        lambda raw: parse_text(raw, max_chars),
        lambda: (container or st).text_input(label, value, max_chars, key=key, **kwargs),
    )


# --- per run (app/main.py) -----------------------------------------------------------------


def start_run(page: str) -> None:
    """Prepare this run: keep the flags across page switches, drop the last page's settings.

    Call once per run in ``app/main.py``, after navigation and before any widget: it also puts
    the box for notes on ignored link values at the top of the page.

    Args:
        page: The page about to run (e.g. its URL path).
    """
    flags = st.session_state.setdefault(_FLAGS_KEY, {})
    params = st.query_params
    for name in FLAGS:
        if name in params:
            flags[name] = params[name]
        elif name in flags:  # lost on a page switch: keep presenter mode and hidden controls
            params[name] = flags[name]
    previous = st.session_state.get(_PAGE_KEY)
    if previous is not None and previous != page:
        applied = _applied()
        for key in list(params):
            if key not in FLAGS and not key.startswith(GLOBAL_PREFIX):
                del params[key]
                applied.pop(key, None)
    st.session_state[_PAGE_KEY] = page
    switched = previous is not None and previous != page
    st.session_state[_RUN_KEY] = {"box": st.container(), "headed": False, "switched": switched}
    if presenter():
        st.html(PRESENTER_CSS)


def finish_run(container: Any) -> None:
    """End this run: draw "Link to this view" and, after a page switch, resend the URL.

    The browser sets the new page's address while the page runs; sending the query string
    again at the end keeps the sidebar's settings in the address bar after the switch.

    Args:
        container: Where to draw the link control (e.g. a slot in the sidebar).
    """
    run = st.session_state.get(_RUN_KEY) or {}
    if run.get("switched"):
        st.query_params.from_dict(st.query_params.to_dict())
    link_control(container)


def view_url() -> str:
    """Give the link to this view: the page's URL and the current query string.

    Returns:
        The full URL when the browser told it (``st.context.url``), else ``?query`` alone.
    """
    query = urlencode(st.query_params.to_dict())
    base = st.context.url or ""
    return f"{base}?{query}" if query else (base or "?")


def link_control(container: Any) -> None:
    """Draw "Link to this view": the URL in a code block (with its copy button).

    Args:
        container: Where (e.g. a slot in the sidebar).
    """
    with container.popover(
        "Link to this view",
        icon=":material/link:",
        width="stretch",
        help="Opens this page with these settings. Add `present=1` for presenter mode (large "
        "fonts and figures, sidebar collapsed) and `hide=` with control keys, comma-separated, "
        "to fix and hide controls (e.g. `hide=sidebar_models`).",
    ):
        st.code(view_url(), language=None, wrap_lines=True)
