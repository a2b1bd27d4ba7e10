"""The Train page's panels on what was trained: your models, and the class's limits."""

from __future__ import annotations

import streamlit as st

from app import ui
from app.figures import show_table
from app.figures.format import DASH, device_words, time_of_day
from core.jobs import training_queue
from core.jobs.limits import Limits
from core.jobs.owners import delete_model, rename_model
from core.methods import method
from core.storage.checkpoints import CheckpointError, task_title
from core.storage.database_errors import DatabaseError
from core.storage.metadata import partial_note
from core.storage.user_models import list_user_checkpoints

NOTICE_KEY = "train_notice"  # (kind, message) left by a cancel/rename/delete callback
MANAGE_KEY = "train_manage_model"  # the picked model that Rename and Delete act on
LIMITS_NOTICE_KEY = "train_limits_notice"  # (kind, message) left by the limits callback
LIMIT_KEYS = {  # the teacher's limit controls, by Limits field
    "student_jobs": "train_limit_student",
    "class_jobs": "train_limit_class",
    "job_images": "train_limit_images",
}


def rename_callback() -> None:
    """Rename the picked model (a callback: it runs before the next script run).

    So the sidebar is up to date. It reads the model picked when the button was pressed, not when
    it was drawn: a click right after a new pick can come before that pick's run has finished.
    """
    old = st.session_state.get(MANAGE_KEY, "")
    try:
        new = st.session_state.get("train_new_name", "")
        path = rename_model(ui.visitor(), old, new)
        st.session_state[NOTICE_KEY] = ("success", f"Renamed {old} to {path.stem}.")
    except (ValueError, CheckpointError, PermissionError) as exc:
        st.session_state[NOTICE_KEY] = ("error", str(exc))


def delete_callback() -> None:
    """Delete callback (see :func:`rename_callback`)."""
    name = st.session_state.get(MANAGE_KEY, "")
    try:
        delete_model(ui.visitor(), name)
        st.session_state[NOTICE_KEY] = ("success", f"Deleted {name}.")
    except (CheckpointError, PermissionError) as exc:
        st.session_state[NOTICE_KEY] = ("error", str(exc))
    st.session_state["train_delete_confirm"] = False


def roles_note() -> None:
    """Who may act on what, in one line."""
    if ui.visitor().teacher:
        st.caption("Teacher mode: you can act on every job and model.")
    else:
        st.caption("You can cancel, rename and delete your own jobs and models only.")


def save_limits() -> None:
    """Limits callback: the teacher's limits for the class, kept for every replica."""
    limits = Limits(**{field: int(st.session_state[key]) for field, key in LIMIT_KEYS.items()})
    try:
        training_queue().set_limits(limits, ui.visitor())
        st.session_state[LIMITS_NOTICE_KEY] = ("success", "Saved: these limits hold from now on.")
    except (PermissionError, ValueError, DatabaseError) as exc:
        st.session_state[LIMITS_NOTICE_KEY] = ("error", str(exc))


def limits_panel() -> None:
    """For the teacher only: the class's limits on students' jobs."""
    visitor = ui.visitor()
    if not visitor.teacher:
        return
    try:
        limits = training_queue().room(visitor).limits
    except DatabaseError as exc:
        ui.database_problem("The class's limits cannot be read right now; try again soon.", exc)
        return
    with st.expander("Class limits"):
        st.caption(
            "For students' next jobs, on every server of the class; your own jobs go first and "
            "no limit applies to them."
        )
        student, whole, images = st.columns(3)
        student.number_input(
            "Jobs per student", 1, 100, limits.student_jobs, key=LIMIT_KEYS["student_jobs"]
        )
        whole.number_input(
            "Students' jobs in the queue", 1, 1000, limits.class_jobs, key=LIMIT_KEYS["class_jobs"]
        )
        images.number_input(
            "Images per job (epochs × images)",
            1,
            12_000_000,  # the largest job the page offers: 200 epochs × 60,000
            limits.job_images,
            step=60_000,
            key=LIMIT_KEYS["job_images"],
        )
        st.button("Save limits", key="train_limits_save", on_click=save_limits)
        notice = st.session_state.pop(LIMITS_NOTICE_KEY, None)
        if notice is not None:
            kind, message = notice
            (st.success if kind == "success" else st.error)(message)


def models_panel() -> None:
    """The user-trained models: a table, rename and delete."""
    notice = st.session_state.pop(NOTICE_KEY, None)
    if notice is not None:
        kind, message = notice
        (st.success if kind == "success" else st.error)("Done." if kind == "success" else "No.")
        st.text(message)  # holds user-typed names: never Markdown
    infos = list_user_checkpoints()
    if not infos:
        st.caption("No user-trained model yet.")
        return
    rows = []
    for info in infos:
        meta = info.metadata
        rows.append(
            {
                "name": info.path.stem,
                "method": method(info.spec.model.kind).title,
                "task": task_title(info.spec.dataset),
                "epochs": meta.get("epochs", DASH),
                "test error": f"{meta['test_error']:.2%}" if "test_error" in meta else "–",
                "trained": time_of_day(meta["date"]) if meta.get("date") else DASH,
                "device": device_words(meta["device"]) if meta.get("device") else DASH,
                "status": (partial_note(meta) or "ok") if info.available else info.reason,
            }
        )
    show_table(rows)
    visitor = ui.visitor()
    names = [
        info.path.stem for info in infos if visitor.may_act_on(str(info.metadata.get("owner", "")))
    ]
    if not names:
        st.caption("Models trained by other students can be picked in the sidebar, not changed.")
        return
    pick, rename, delete = st.columns([2, 3, 2], vertical_alignment="bottom")
    pick.selectbox("Model", names, key=MANAGE_KEY)
    rename.text_input("New name", key="train_new_name", placeholder="letters, digits, _ and -")
    rename.button("Rename", key="train_rename", on_click=rename_callback)
    confirm = delete.checkbox("Really delete", key="train_delete_confirm")
    delete.button("Delete", key="train_delete", on_click=delete_callback, disabled=not confirm)
