"""Each run of a page, called by ``app/main.py``.

The URL's flags are kept across page switches, the last page's settings dropped, and the link
to this view drawn.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

import streamlit as st

from app.share.presenter import FLAGS, PRESENTER_CSS, presenter
from app.share.state import FLAGS_KEY, PAGE_KEY, RUN_KEY, applied_texts, linked_values

GLOBAL_PREFIX = "sidebar_"  # settings drawn on every page (app/ui.py's sidebar)


def start_run(page: str) -> None:
    """Prepare this run: keep the flags across page switches, drop the last page's settings.

    Call once per run in ``app/main.py``, after navigation and before any widget: it also puts
    the box for notes on ignored link values at the top of the page.

    Args:
        page: The page about to run (e.g. its URL path).
    """
    flags = st.session_state.setdefault(FLAGS_KEY, {})
    params = st.query_params
    for name in FLAGS:
        if name in params:
            flags[name] = params[name]
        elif name in flags:  # lost on a page switch: keep presenter mode and hidden controls
            params[name] = flags[name]
    previous = st.session_state.get(PAGE_KEY)
    if previous is not None and previous != page:
        applied, linked = applied_texts(), linked_values()
        for key in list(params):
            if key not in FLAGS and not key.startswith(GLOBAL_PREFIX):
                del params[key]
                applied.pop(key, None)
        for key in [k for k in linked if not k.startswith(GLOBAL_PREFIX)]:
            del linked[key]
    st.session_state[PAGE_KEY] = page
    switched = previous is not None and previous != page
    st.session_state[RUN_KEY] = {"box": st.container(), "headed": False, "switched": switched}
    if presenter():
        st.html(PRESENTER_CSS)


def finish_run(container: Any) -> None:
    """End this run: draw "Link to this view" and, after a page switch, resend the URL.

    The browser sets the new page's address while the page runs; sending the query string
    again at the end keeps the sidebar's settings in the address bar after the switch.

    Args:
        container: Where to draw the link control (e.g. a slot in the sidebar).
    """
    run = st.session_state.get(RUN_KEY) or {}
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
