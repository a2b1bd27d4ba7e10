"""The teacher's *Prepare for class* button, on the Class drawings page in teacher mode.

It starts the server's one :class:`core.prepare.PreparationRun`, which computes and
caches every link of the teacher's guide in a background thread (what ``python -m core prepare``
does); a fragment polls it every second for the progress bar, so the page stays usable, and
*Cancel* stops it before its next piece of work. Students never see the panel.
"""

from __future__ import annotations

import streamlit as st

from app import ui
from core.prepare import PreparationRun, PreparationState

POLL_S = 1.0
START_KEY = "prepare_start"
CANCEL_KEY = "prepare_cancel"


@st.cache_resource(show_spinner=False)
def preparation() -> PreparationRun:
    """The server's one preparation, shared by every session."""
    return PreparationRun()


def _start() -> None:
    preparation().start(ui.visitor())


def _cancel() -> None:
    preparation().cancel(ui.visitor())


def summary(state: PreparationState) -> str:
    """One line on a finished run: links done, how many computed, seconds."""
    computed = sum(1 for link in state.links if link.jobs and not link.skipped)
    skipped = sum(1 for link in state.links if link.skipped)
    how = "Cancelled" if state.cancelled else "Done"
    line = (
        f"{how}: {len(state.links)} of {state.total} links prepared in {state.seconds:.0f} s "
        f"({computed} computed, {len(state.links) - computed - skipped} already cached"
    )
    return line + (f", {skipped} skipped)." if skipped else ").")


def progress_view(polling: bool) -> None:
    """The bar and Cancel while the run goes on; its outcome once it ended (a fragment).

    Args:
        polling: Whether the fragment reruns every :data:`POLL_S`; when the run started or
            ended since, the whole page reruns to turn polling on or off.
    """
    state = preparation().state()
    if state.running != polling:
        st.rerun()
    if state.running:
        st.progress(
            state.fraction, f"{state.fraction:.0%} · {state.seconds:.0f} s · {state.message}"
        )
        st.button("Cancel", key=CANCEL_KEY, on_click=_cancel, icon=":material/stop:")
        return
    st.button("Prepare for class", key=START_KEY, on_click=_start, icon=":material/play_arrow:")
    if state.error:
        st.error(f"The preparation stopped: {state.error}")
    elif state.total:
        st.caption(summary(state))
        for link in state.links:
            if link.skipped:
                st.caption(f"Skipped {link.url}: {link.skipped}")


def prepare_panel() -> None:
    """The teacher's panel: what the button does, then the live progress; nothing for a student."""
    if not ui.visitor().teacher:
        return
    with st.expander("Teacher: prepare for class", icon=":material/school:"):
        st.caption(
            "Computes and stores what every link of the teacher's guide shows, so that each "
            "opens at once in class (about a minute, once). It runs on the server: you may "
            "leave this page and come back."
        )
        running = preparation().state().running
        st.fragment(run_every=POLL_S if running else None)(progress_view)(running)
