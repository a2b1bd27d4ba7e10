"""Class page: the drawings students sent from the Draw page, live.

Students join with the link shown at the top, a large QR code and text
(:func:`app.classroom.join_panel`).

The gallery (newest first), each digit model's accuracy on the class's drawings, its confusion
matrix, reliability diagram and the drawings it said "I don't know" to; for the teacher, the set
as CSV + PNG files or an MNIST-format IDX pair (built only when downloaded), and a Clear button,
shown in teacher mode only (and refused to students by :mod:`core.classroom.teacher`); "Learn our
handwriting" (:mod:`app.learn`): the teacher teaches models half of the drawings and tests
them on the other half and on MNIST. The class
code comes from the link (``?class=...``) or the input; without one the page proposes a fresh
code; the live part refreshes every few seconds. Each model's predictions are kept per drawing
for the whole server (:mod:`core.classroom.live`), so a refresh runs the models only on drawings
they have not seen, within a time budget, and a refresh without new drawings costs a database
read."""

import time
from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app import ui
from app.classroom import join_panel, link_class_code, use_class_code
from app.figures import show_figure, show_table
from app.figures.calibration import reliability_figure
from app.figures.classroom import confusion_figure
from app.figures.pixels import enlarge
from app.learn import learn_section
from app.prepare import prepare_panel
from core.classroom import export
from core.classroom.drawings import Drawing, new_class_code
from core.classroom.live import LiveReport, PredictionCache, live_reports
from core.classroom.report import ModelReport
from core.classroom.store import ClassStore
from core.classroom.teacher import clear_class, export_class
from core.data import DatasetUnavailable
from core.evaluation.uncertainty import SCORES
from core.storage.checkpoints import checkpoint_dataset
from core.storage.database_errors import DatabaseError
from core.storage.database_url import database_url, describe

CODE_KEY = "classroom_code"
LIVE_KEY = "classroom_live"
CONFIRM_KEY = "classroom_confirm"
MESSAGE_KEY = "classroom_message"  # (kind, text, time.monotonic() of the Clear)
CLEARED_KEY = "classroom_cleared"  # a Clear ran: the whole page reruns once
GALLERY_MAX = 200  # newest drawings shown in the gallery
DONT_KNOW_MAX = 60  # "I don't know" drawings shown per model
REFRESH_S = 3
MESSAGE_S = 60  # how long the outcome of a Clear stays up while the page refreshes live
UNREADABLE = "The class's drawings cannot be read right now; try again in a moment."
DOWNLOADS = (  # key, label, file name, the function of core.classroom.export that packs it
    ("png", "Download CSV + PNG (zip)", "class-{code}-drawings.zip", "csv_png_zip"),
    ("idx", "Download MNIST IDX pair (zip)", "class-{code}-idx.zip", "idx_zip"),
)


def chosen_code() -> str | None:
    """The class code: the link's on the first visit (a fresh one proposed when the link names
    none, or a bad one), then the input's; None (with an error) when the input is not a valid
    code. A valid code is written back into the link."""
    if CODE_KEY not in st.session_state:
        code, problem = link_class_code()
        if problem:
            st.warning("The class code in the link cannot be used; a new one is proposed.")
            st.text(f"?class=: {problem}")
        elif code is None:
            st.info("A new class code is proposed below: keep it, or type the one you chose.")
        st.session_state[CODE_KEY] = code or new_class_code()
    text = st.text_input(
        "Class code",
        key=CODE_KEY,
        max_chars=32,
        help="Letters, digits, _ and -. Students send their drawings from the Draw page opened "
        "with ?class=CODE in its link.",
    )
    return use_class_code(text)


def digit_models() -> list:
    """The chosen models trained on digits; the others are named, with the reason."""
    chosen = ui.selected_names()
    other = [name for name in chosen if checkpoint_dataset(name) != "mnist"]
    if other:
        st.info("Not evaluated here: these models were trained on another task, not on digits.")
        st.text(", ".join(ui.model_title(name) for name in other))  # may hold user names
    return [(name, model) for name, model in ui.selected_models() if name not in other]


def downloads(code: str, database: str) -> None:
    """The download buttons (:data:`DOWNLOADS`), side by side; each file is built when the
    teacher clicks, by :func:`core.classroom.teacher.export_class`, which refuses a student."""
    for column, (key, label, name, pack) in zip(st.columns(len(DOWNLOADS)), DOWNLOADS, strict=True):
        column.download_button(
            label,
            partial(export_class, ui.visitor(), code, getattr(export, pack), database),
            file_name=name.format(code=code),
            mime="application/zip",
            on_click="ignore",
            key=f"class_download_{key}",
        )


def clear(code: str, database: str, up_to: int) -> None:
    """Clear callback: delete the class's drawings up to the newest one the teacher saw, forget
    the models' predictions on the class and leave a message for the next run."""
    try:
        deleted = clear_class(ui.visitor(), code, up_to, database)
        ui.kept(PredictionCache).forget(database, code)
        kept = ClassStore(database).count(code)
        since = f" {kept} drawing(s) sent since were kept." if kept else ""
        message = ("success", f"Deleted {deleted} drawing(s) of `{code}`.{since}")
    except (PermissionError, DatabaseError) as exc:
        message = ("error", str(exc))
    st.session_state[MESSAGE_KEY] = (*message, time.monotonic())
    st.session_state[CLEARED_KEY] = True
    st.session_state[CONFIRM_KEY] = False


def show_message() -> None:
    """The outcome of the last Clear, over the live refreshes of the next :data:`MESSAGE_S`
    seconds (so that the teacher has time to read it)."""
    message = st.session_state.get(MESSAGE_KEY)
    if message is None:
        return
    kind, text, cleared_at = message
    if time.monotonic() - cleared_at > MESSAGE_S:
        del st.session_state[MESSAGE_KEY]
        return
    if kind == "success":
        st.success(text)
    else:
        st.error("The class could not be cleared; nothing was deleted.")
        st.text(text)


def gallery(records: list[Drawing], code: str) -> None:
    """Newest drawings first, each with the digit meant and its number."""
    newest = records[::-1][:GALLERY_MAX]
    per_digit = np.bincount([d.label for d in records], minlength=10).tolist()
    note = f" (the newest {GALLERY_MAX} shown)" if len(records) > GALLERY_MAX else ""
    st.caption(
        f"{len(records)} drawing(s) in class `{code}`{note}. Per digit: "
        + ", ".join(f"{k}: {n}" for k, n in enumerate(per_digit))
    )
    with st.container(key="class_gallery"):
        st.image(
            list(enlarge(np.stack([d.image() for d in newest]))),
            caption=[f"{d.label} · #{d.id}" for d in newest],
        )


def accuracy_table(reports: list[ModelReport]) -> None:
    """One row per model: drawings, accuracy, calibration and how many "I don't know"s."""
    rows = {
        ui.model_title(r.name): {
            "drawings": len(r),
            "accuracy": f"{r.accuracy:.1%}",
            "ECE": f"{r.metrics['ece']:.3f}",
            "NLL (nats)": f"{r.metrics['nll']:.3f}",
            '"I don\'t know"': "–" if r.verdicts is None else str(len(r.dont_know)),
        }
        for r in reports
    }
    show_table(pd.DataFrame.from_dict(rows, orient="index"), grid=False)


def model_details(result: LiveReport) -> None:
    """Confusion matrix, reliability diagram and the "I don't know" drawings of one model."""
    report, records = result.report, result.records
    title = ui.model_title(report.name)
    left, right = st.columns(2)
    with left:
        show_figure(
            confusion_figure(report.confusion.numpy(), "Confusion matrix"),
            f"{report.name}_confusion",
        )
    with right:
        bins = report.reliability
        figure = reliability_figure(
            bins.edges.numpy(),
            bins.confidence.numpy(),
            bins.accuracy.numpy(),
            bins.count.numpy(),
            f"Reliability (ECE {report.metrics['ece']:.3f})",
        )
        show_figure(figure, f"{report.name}_reliability")
    if report.verdicts is None:
        st.caption('No "I don\'t know" verdicts: the thresholds need the MNIST test set.')
        return
    unknown = report.dont_know
    score = SCORES[report.score].title.lower()
    if not unknown:
        st.caption(
            f"{title} answered every drawing (none above the 99th percentile of its {score})."
        )
        return
    st.markdown(
        f'**"I don\'t know"** to {len(unknown)} drawing(s) ({score} above its 99th percentile '
        "on the test set)"
    )
    shown = unknown[::-1][:DONT_KNOW_MAX]
    with st.container(key=f"class_unknown_{report.name}"):
        st.image(
            list(enlarge(np.stack([records[i].image() for i in shown]))),
            caption=[
                f"meant {records[i].label}, top {int(report.predicted[i])} · #{records[i].id}"
                for i in shown
            ],
        )


def teacher(code: str, database: str, live: bool) -> None:
    """Downloads and the guarded Clear button, in teacher mode only, outside the live view: a
    refresh re-issues the buttons it draws, and a click that meets a download button just
    replaced gets nothing."""
    if not ui.visitor().teacher:
        return
    with st.expander("Teacher: export or clear", icon=":material/school:"):
        downloads(code, database)
        st.caption(
            "CSV: id, label, class, created (UTC), file; one 28×28 PNG per drawing. IDX: "
            "t10k-images-idx3-ubyte and t10k-labels-idx1-ubyte, as MNIST's test split."
        )
        st.fragment(run_every=REFRESH_S if live else None)(clear_controls)(code, database)
        st.caption(f"Database: {describe(database)}")


def clear_controls(code: str, database: str) -> None:
    """The confirmation and the Clear button, counting what a click deletes (a fragment: it
    refreshes with the live view). Drawings sent after this count are kept."""
    try:
        store = ClassStore(database)
        newest = store.records(code, limit=1)  # before the count: it never counts fewer
        held = store.count(code)
    except DatabaseError:
        return  # the live view says so
    if not newest:
        st.caption("No drawings to clear.")
        return
    confirm = st.checkbox(
        f"Yes, delete the {held} drawing(s) of `{code}` sent so far",
        key=CONFIRM_KEY,
        help="Drawings that arrive after this box counted them are kept.",
    )
    st.button(
        "Clear the class",
        key="class_clear",
        disabled=not confirm,
        on_click=clear,
        args=(code, database, newest[0].id),  # as counted on the run the teacher saw
    )
    if st.session_state.pop(CLEARED_KEY, False):
        st.rerun()  # the whole page, which shows the message, without the cleared drawings


def evaluation_note(reports: list[LiveReport], live: bool) -> None:
    """Say how many drawings some model has not looked at yet, if any."""
    pending = max(r.pending for r in reports)
    if pending:
        then = "at the next refreshes" if live else "when Live is switched on"
        st.info(
            f"The models are still looking at the class's drawings: {pending} to go. The "
            f"results below cover the drawings done so far and fill in {then}."
        )


def live_view(code: str, models: list, n_samples: int, limits: dict, live: bool) -> None:
    """Everything that follows the class's drawings (a fragment: reruns on its own)."""
    show_message()
    database = database_url()
    try:
        store = ClassStore(database)
        records = store.records(code)
    except DatabaseError as exc:
        ui.database_problem(UNREADABLE, exc)
        return
    if not records:
        st.caption(
            f"No drawings in class `{code}` yet. Students open the link above, draw a digit "
            'and press Submit under "Send my drawing to the class".'
        )
        return
    st.subheader("Gallery")
    gallery(records, code)
    if len(records) >= store.limit:
        st.warning(
            f"The class is full: it holds {len(records)} drawings, the most one class may hold. "
            "New drawings are refused until you export and clear it, or students use a new "
            "class code."
        )
    versions = [(name, ui.version(name), model) for name, model in models]
    with st.spinner("The models look at the new drawings…"):
        reports = live_reports(
            ui.kept(PredictionCache), database, code, versions, records, n_samples, limits
        )
    if reports:
        st.subheader("How the models do on the class's drawings")
        st.caption(
            f"Predictive mean of {n_samples} passes; accuracy against the digit each student "
            "meant; \"I don't know\" by the Draw page's rule."
        )
        evaluation_note(reports, live)
        accuracy_table([r.report for r in reports])
        for tab, result in zip(
            st.tabs([ui.model_title(r.report.name) for r in reports]), reports, strict=True
        ):
            with tab:
                model_details(result)


st.title("Class drawings")
ui.teacher_sign_in()
prepare_panel()
code = chosen_code()
if code is not None:
    join_panel(code)
    models = digit_models()
    if not models:
        st.warning("Choose at least one trained digit model in the sidebar.")
    n_samples = ui.sample_count()
    try:
        limits = ui.rejection_thresholds([name for name, _ in models])
    except DatasetUnavailable as exc:
        limits = {}
        st.warning(f'No "I don\'t know" verdicts: the thresholds need the MNIST test set. {exc}')
    live = st.toggle(f"Live: refresh every {REFRESH_S} s", value=True, key=LIVE_KEY)
    st.fragment(run_every=REFRESH_S if live else None)(live_view)(
        code, models, n_samples, limits, live
    )
    teacher(code, database_url(), live)
    try:
        learn_section(code, ClassStore(database_url()).records(code))
    except DatabaseError:
        pass  # the live view says so
