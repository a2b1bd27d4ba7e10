"""Shareable views: every page's settings live in the URL, plus presenter mode.

Pages draw their settings through the shared widgets (:mod:`app.share.widgets`:
:func:`selectbox`, :func:`radio`, :func:`select_slider`, :func:`multiselect`, :func:`slider`,
:func:`number_input`, :func:`checkbox`, :func:`toggle`, :func:`text_input`). They take
Streamlit's own arguments, the widget's ``key`` (required) being the URL parameter's name, and a
keyword-only ``container`` (a column, the sidebar…; ``st`` by default). Each:

1. applies a URL value this session has not applied yet (a pasted link, the browser's back
   button) after checking it against the widget's own options, range and type; a value that
   does not fit keeps the default and leaves a note at the top of the page, never an exception;
2. draws the widget, unless the URL's ``hide`` flag lists its key: then the URL value (or the
   default) is used without a control;
3. writes the widget's value back to ``st.query_params``, so the address bar always links to
   this view (a value equal to the default is left out).

The package's modules, one job each: :mod:`~app.share.codec` (values to URL text and back,
pure), :mod:`~app.share.state` (what a session remembers of its URL),
:mod:`~app.share.presenter` (the URL's flags: ``present=1`` for presenter mode — collapsed
sidebar, larger fonts and figures — and ``hide=key1,key2`` for controls the teacher fixed and
hid), :mod:`~app.share.binding` (applying, drawing and publishing one value),
:mod:`~app.share.widgets` (the table of widgets and its factory) and :mod:`~app.share.run` (each
page run: flags kept, the link to this view). What pages use is named here.
"""

from __future__ import annotations

from app.share.binding import NOTE_HEADING
from app.share.codec import (
    LinkValueError,
    PartlyUsable,
    encode,
    parse_bool,
    parse_choice,
    parse_choices,
    parse_number,
    parse_text,
)
from app.share.presenter import (
    CLASS_PARAM,
    HIDE_PARAM,
    PRESENT_PARAM,
    PRESENTER_CSS,
    PRESENTER_FONT,
    PRESENTER_HEIGHT,
    PRESENTER_TITLE_FONT,
    hidden_keys,
    presenter,
)
from app.share.run import GLOBAL_PREFIX, finish_run, link_control, start_run, view_url
from app.share.widgets import (
    checkbox,
    multiselect,
    number_input,
    radio,
    select_slider,
    selectbox,
    slider,
    text_input,
    toggle,
)

__all__ = [
    "CLASS_PARAM",
    "GLOBAL_PREFIX",
    "HIDE_PARAM",
    "NOTE_HEADING",
    "PRESENTER_CSS",
    "PRESENTER_FONT",
    "PRESENTER_HEIGHT",
    "PRESENTER_TITLE_FONT",
    "PRESENT_PARAM",
    "LinkValueError",
    "PartlyUsable",
    "checkbox",
    "encode",
    "finish_run",
    "hidden_keys",
    "link_control",
    "multiselect",
    "number_input",
    "parse_bool",
    "parse_choice",
    "parse_choices",
    "parse_number",
    "parse_text",
    "presenter",
    "radio",
    "select_slider",
    "selectbox",
    "slider",
    "start_run",
    "text_input",
    "toggle",
    "view_url",
]
