"""How a shared widget's value is bound to the URL: applied once, drawn, written back.

A URL value this session has not applied yet (a pasted link, the browser's back button) is
checked against the widget's options, range and type; one that does not fit keeps the default
and leaves a note at the top of the page, never an exception. A control the URL's ``hide`` flag
lists is not drawn: the URL value (or the default) is used. The widget's value is written back
to ``st.query_params``, so the address bar always links to this view (a default is left out).

A value taken from the link is also the widget's default from then on. The browser shows the
value the server sets only in the run that sets it; when it draws the widget afresh later (a
polling fragment's rerun can do that) and the visitor never touched it, it shows the widget's
default and sends that back with the next press. With the link's value as the default, a
student's 1-epoch link cannot start a 3-epoch job.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

from app.share.codec import LinkValueError, PartlyUsable, encode
from app.share.presenter import hidden_keys
from app.share.state import RUN_KEY, applied_texts, linked_values, url_value

NOTE_HEADING = "Some settings in the link could not be used; their defaults apply:"


def _note(text: str) -> None:
    """Show a note on a link value that was ignored: user text, so via ``st.text``."""
    run = st.session_state.get(RUN_KEY)
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
    raw = url_value(key)
    applied = applied_texts()
    if raw is None or (applied.get(key) == raw and key in st.session_state):
        return False, None
    applied[key] = raw
    try:
        value = parse(raw)
    except PartlyUsable as exc:
        _note(f"Ignored part of {key}={raw} from the link: {exc}.")
        value = exc.value
    except LinkValueError as exc:
        _note(f"Ignored {key}={raw} from the link: {exc}.")
        linked_values().pop(key, None)
        return False, None
    linked_values()[key] = value
    return True, value


def _hidden_value(key: str, default: Any, parse: Callable[[str], Any]) -> Any:
    """The value of a hidden control: the URL's if it fits, else the default."""
    raw = url_value(key)
    if raw is None:
        return default
    try:
        return parse(raw)
    except LinkValueError as exc:
        if applied_texts().get(key) != raw:
            applied_texts()[key] = raw
            part = "part of " if isinstance(exc, PartlyUsable) else ""
            _note(f"Ignored {part}{key}={raw} from the link: {exc}.")
        return exc.value if isinstance(exc, PartlyUsable) else default


def _publish(key: str, value: Any, default: Any) -> None:
    """Write a widget's value to the URL (left out when it is the default)."""
    text = encode(value)
    applied = applied_texts()
    if text == encode(default):
        if key in st.query_params:
            del st.query_params[key]
        applied[key] = None
    else:
        if url_value(key) != text:
            st.query_params[key] = text
        applied[key] = text


def bound(
    key: str,
    default: Any,
    parse: Callable[[str], Any],
    draw: Callable[[Any], Any],
) -> Any:
    """Apply the URL, draw (unless hidden), publish: the mechanism behind every shared widget.

    Args:
        key: The widget's key and URL parameter.
        default: The widget's value when neither the URL nor the user chose one.
        parse: Reads a URL text; raises :class:`LinkValueError` when it does not fit.
        draw: Draws the widget with the given default (the link's value, or ``default``)
            and returns its value.

    Returns:
        The widget's value (the URL's or the default when the URL hides the control).

    Raises:
        ValueError: If ``key`` is empty.
    """
    if not key:
        raise ValueError("a shared widget needs a key (its URL parameter's name)")
    if key in hidden_keys():  # no control; code reading st.session_state[key] sees the value
        value = _hidden_value(key, default, parse)
        st.session_state[key] = value
        return value
    ok, value = _from_url(key, parse)
    if ok:
        st.session_state[key] = value
    result = draw(linked_values().get(key, default))
    _publish(key, result, default)
    return result
