"""What a session remembers of its URL: the values applied or written, and this run's notes."""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.scriptrunner import get_script_run_ctx

APPLIED_KEY = "_share_applied"  # key -> the URL text this session applied or wrote last
RUN_KEY = "_share_run"  # this run's note box (set by main.py)
FLAGS_KEY = "_share_flags"  # present/hide as first seen, kept across page switches
PAGE_KEY = "_share_page"  # the page of the previous run
LINKED_KEY = "_share_linked"  # key -> the value this session took from its link


def in_app() -> bool:
    """Whether this code runs inside a Streamlit script run (not a plain import or test)."""
    return get_script_run_ctx() is not None


def applied_texts() -> dict[str, str | None]:
    """Key → the URL text this session applied or wrote last (None: left out as default)."""
    return st.session_state.setdefault(APPLIED_KEY, {})


def linked_values() -> dict[str, object]:
    """Key → the value this session took from its link for that widget.

    The widget is drawn with it as its default (:func:`app.share.binding.bound`).
    """
    return st.session_state.setdefault(LINKED_KEY, {})


def url_value(key: str) -> str | None:
    """The URL's text for ``key``, or None when the URL does not name it."""
    params = st.query_params
    return params[key] if key in params else None
