"""The URL's flags, kept across page switches: presenter mode, hidden controls, a class code.

``present=1`` collapses the sidebar and enlarges fonts and figures (:data:`PRESENTER_CSS`, and
the figure sizes of :mod:`app.figures`); ``hide=key1,key2`` lists controls a teacher fixed and
hid; ``class=CODE`` names a lecture's class (:mod:`app.classroom`).
"""

from __future__ import annotations

import streamlit as st

from app.share.codec import LinkValueError, parse_bool
from app.share.state import FLAGS_KEY, in_app, url_value

PRESENT_PARAM = "present"
HIDE_PARAM = "hide"
CLASS_PARAM = "class"  # the class code of a lecture (app/classroom.py, pages/classroom.py)
FLAGS = (PRESENT_PARAM, HIDE_PARAM, CLASS_PARAM)  # kept across page switches

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


def _flag(name: str) -> str | None:
    if not in_app():
        return None
    value = url_value(name)
    if value is None:
        value = st.session_state.get(FLAGS_KEY, {}).get(name)
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
