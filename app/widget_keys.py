"""Keys for widgets whose value the page itself changes on a page that polls.

A page that reruns on its own (a fragment's ``run_every``) sends the browser's widget values
with each rerun. When the server sets a widget's value (a new job to watch), a rerun the
browser sent before it drew that value still carries the old one, and under the same key the
server takes it for the visitor's choice (and runs its ``on_change``). Such a widget takes its
key from :func:`current`; the page calls :func:`renew` when it sets the value, so the widget
is a new one drawn with its default (the value the page chose), and a late old value picks
nothing.
"""

from __future__ import annotations

import streamlit as st


def _turns(base: str) -> str:
    return f"{base}__turns"


def current(base: str) -> str:
    """The widget key now in use for ``base``: ``base`` and how often it was renewed."""
    return f"{base}_{st.session_state.get(_turns(base), 0)}"


def renew(base: str) -> None:
    """Start a new widget for ``base`` (the page set its value): :func:`current` moves on."""
    st.session_state[_turns(base)] = st.session_state.get(_turns(base), 0) + 1
