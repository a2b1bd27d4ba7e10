"""How students join a class and send their drawings.

:func:`join_panel`, on the Class drawings page: the students' link (the Draw page with the class
code, at the address :func:`core.classroom.join.students_base` chooses) as a large QR code and
as text; when only this computer's own address is known, one line saying what to do instead.

The opt-in "Send my drawing to the class" panel, shown by the Draw page under its prediction.

A student picks the digit they meant and presses Submit; the 28×28 input the models saw is
stored with that digit in the class's database (:mod:`core.classroom.store`) under the class
code of the link (``?class=...``; without one the student types the code the teacher gave, and
it is written into the link). Nothing else is stored (no name, no address). Each drawing gets
one submission id (a UUID kept in the session and renewed when the drawing changes), so a double
click or a repeated Submit stores it once.
"""

from __future__ import annotations

import base64
import hashlib
import html
import uuid

import numpy as np
import streamlit as st
import torch

from app import share, ui
from app.share import CLASS_PARAM
from core.classroom import join
from core.classroom.drawings import check_class_code
from core.classroom.store import ClassFullError, ClassStore
from core.storage.database_errors import DatabaseError

TITLE = "Send my drawing to the class"
LABEL_KEY = "class_label"
SUBMIT_KEY = "class_submit"
CODE_INPUT = "class_code_typed"
SUBMISSION_KEY = "class_submission"
"""Session state: ``{"digest", "id", "sent"}`` for the drawing on screen (``sent``: None, or the
stored row's ``{"id", "label"}``)."""
QR_WIDTH = 320  # px on screen; scannable across a desk
QR_PRESENTER_WIDTH = 600  # px in presenter mode: scannable from the back row off a projector
LINK_KEY = "class_join"


def link_class_code() -> tuple[str | None, str | None]:
    """Read the class code of the page's link (``?class=...``).

    Returns:
        ``(code, None)`` with the validated code, ``(None, problem)`` when the link's code is
        not valid, or ``(None, None)`` when the link names no class.
    """
    text = (st.query_params.get(CLASS_PARAM) or "").strip()
    if not text:
        return None, None
    try:
        return check_class_code(text), None
    except ValueError as exc:
        return None, str(exc)


def typed_class_code() -> str | None:
    """Ask for the class code the teacher gave, when the link names none.

    A valid code is written into the link, so the student's next pages and drawings keep it.

    Returns:
        The code, or None (with a line saying what to do) until a valid one is typed.
    """
    typed = st.text_input(
        "Class code",
        key=CODE_INPUT,
        max_chars=32,
        placeholder="the code your teacher gave",
        help="Letters, digits, _ and -, as your teacher wrote it.",
    )
    if not typed.strip():
        st.caption("Type the class code your teacher gave to send your drawing.")
        return None
    return use_class_code(typed)


def use_class_code(text: str) -> str | None:
    """Check a typed class code and write it into the page's link.

    Args:
        text: What was typed.

    Returns:
        The code, or None after one line saying why it cannot be used.
    """
    try:
        code = check_class_code(text)
    except ValueError as exc:
        st.error("That class code cannot be used.")
        st.text(str(exc))
        return None
    if st.query_params.get(CLASS_PARAM) != code:
        st.query_params[CLASS_PARAM] = code
    return code


def _digest(image: torch.Tensor | np.ndarray) -> str:
    data = np.ascontiguousarray(torch.as_tensor(image).detach().cpu().float().numpy())
    return hashlib.sha256(data.tobytes() + str(data.shape).encode()).hexdigest()


def submission_state(image: torch.Tensor | np.ndarray) -> dict:
    """Give this drawing's submission state, with a new submission id when the drawing changed.

    A new drawing also clears the digit picked for the previous one. Call it before the digit
    picker is drawn.

    Args:
        image: The drawing on screen.

    Returns:
        The session's ``{"digest", "id", "sent"}`` dict for it (:data:`SUBMISSION_KEY`).
    """
    digest = _digest(image)
    state = st.session_state.get(SUBMISSION_KEY)
    if not isinstance(state, dict) or state.get("digest") != digest:
        state = {"digest": digest, "id": str(uuid.uuid4()), "sent": None}
        st.session_state[SUBMISSION_KEY] = state
        st.session_state.pop(LABEL_KEY, None)  # a new drawing: the digit is picked again
    return state


def _send(image: torch.Tensor | np.ndarray, label: int, code: str, state: dict) -> None:
    """Store the drawing and say what happened."""
    before = state["sent"]
    try:
        store = ClassStore()
        row = store.submit(image, label, code, state["id"])
        total = store.count(code)
    except ClassFullError as exc:
        st.error("This class is full, so the drawing was not sent. Ask your teacher.")
        st.text(str(exc))
        return
    except ValueError as exc:
        st.error("The drawing was not sent.")
        st.text(str(exc))
        return
    except DatabaseError as exc:
        ui.database_problem(
            "The class's drawings cannot take yours right now; nothing stored is lost, try "
            "again in a moment.",
            exc,
        )
        return
    if before is None:
        state["sent"] = {"id": row, "label": label}
        st.success(f"Sent as a {label}. Class `{code}` now has {total} drawing(s).")
    else:
        st.info(
            f"Already sent as a {before['label']} (stored once, #{row}); class `{code}` has "
            f"{total} drawing(s). Draw another digit to send again."
        )


@st.fragment
def submission_panel(image: torch.Tensor | np.ndarray | None) -> None:
    """Draw the opt-in "Send my drawing to the class" panel (its widgets rerun only it).

    Args:
        image: The input the models saw, float ``(28, 28)`` or ``(1, 28, 28)`` in [0, 1]; None
            when there is no drawing yet.
    """
    with st.expander(TITLE, icon=":material/groups:"):
        code, problem = link_class_code()
        if problem:
            st.error("The class code in this page's link cannot be used, so nothing can be sent.")
            st.text(f"?class=: {problem}")
            return
        code = code or typed_class_code()
        if code is None:
            return
        st.caption(
            f"Class code in use: `{code}`. Only the 28×28 image the models saw and the digit you "
            "meant are stored, no name."
        )
        if image is None:
            st.caption("Draw a digit first.")
            return
        state = submission_state(image)
        label = st.radio(
            "The digit I meant", list(range(10)), index=None, horizontal=True, key=LABEL_KEY
        )
        if st.button("Submit", key=SUBMIT_KEY, disabled=label is None, type="primary"):
            _send(image, int(label), code, state)
        elif state["sent"] is not None:
            sent = state["sent"]
            st.caption(f"This drawing was sent as a {sent['label']} (#{sent['id']}).")


# --- joining: the students' link as a QR code and as text ----------------------------------


def students_link(code: str) -> tuple[str | None, str | None]:
    """Find the link students open to join the class, from this server's settings.

    Args:
        code: A valid class code.

    Returns:
        ``(link, None)``, or ``(None, problem)`` when no address students can reach is known
        (``problem``: why, in words; the public address setting's error when it is malformed).
    """
    try:
        base = join.students_base(
            join.public_url_setting(),
            st.context.url,
            st.get_option("server.address"),
            st.get_option("server.port"),
            join.machine_address(),
        )
    except ValueError as exc:
        return None, str(exc)
    return (join.join_link(base, code), None) if base else (None, None)


def qr_image_html(link: str, width: int) -> str:
    """The QR code of a link as an HTML image (a PNG inline), ``width`` pixels wide."""
    data = base64.b64encode(join.qr_png(link, width)).decode("ascii")
    return (
        f'<img src="data:image/png;base64,{data}" width="{width}" '
        f'alt="QR code of the link {html.escape(link)}" '
        'style="max-width: 100%; height: auto; image-rendering: pixelated;">'
    )


def link_text_html(link: str, presenter: bool) -> str:
    """The link as large text to type, wrapped anywhere on a narrow screen."""
    size = "2.2rem" if presenter else "1.6rem"
    return (
        f'<p style="font-size: {size}; font-family: monospace; font-weight: 600; '
        f'overflow-wrap: anywhere; margin: 0.2rem 0 1rem;">{html.escape(link)}</p>'
    )


def no_address(code: str, problem: str | None) -> None:
    """Say that students need this computer's network address; how, for the teacher only."""
    ending = join.join_link("", code)
    if problem:
        st.warning("The lab's public address is set but cannot be used.")
        st.text(problem)
    else:
        st.info(
            "This computer was opened as localhost, which on students' machines means their own "
            f"computer: they need this computer's network address, followed by `{ending}`."
        )
    if ui.visitor().teacher:
        st.caption(
            "To show students a link and QR code here, start the lab so that other machines can "
            "reach it (`bash scripts/run_app.sh --server.address 0.0.0.0`), or set the address "
            f"students use, e.g. `{join.PUBLIC_URL_ENV}=http://10.0.0.5:8501`, before starting it."
        )


def join_panel(code: str) -> None:
    """Draw the students' link to the class: a large QR code and the link as large text.

    Everyone may see it (the link only opens the Draw page with the class code). In presenter
    mode both are larger, to be read off a projector from the back row.

    Args:
        code: A valid class code.
    """
    link, problem = students_link(code)
    if link is None:
        no_address(code, problem)
        return
    presenter = share.presenter()
    with st.container(key=LINK_KEY):
        st.markdown("**Students join by scanning the code or typing the link:**")
        st.markdown(
            qr_image_html(link, QR_PRESENTER_WIDTH if presenter else QR_WIDTH),
            unsafe_allow_html=True,
        )
        st.markdown(link_text_html(link, presenter), unsafe_allow_html=True)
