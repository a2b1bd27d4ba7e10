"""Train page: train a network on MNIST or Fashion-MNIST from the browser, watch its curves
live, cancel it, and manage the models you trained (rename, delete).

Jobs run in the server's training queue (:mod:`core.jobs.queue`), not in this script run: the
page only submits requests and polls the queue, so closing the tab or rerunning the page does
not stop a job, and reopening the page shows it again."""

import time

import streamlit as st

from app import share, ui, widget_keys
from app.figures import show_figure, show_table
from app.figures.train import (
    error_figure,
    kl_figure,
    loss_figure,
    request_settings,
    run_names,
    setting_text,
)
from app.settings_widgets import option, setting_widget
from app.train_panels import NOTICE_KEY, limits_panel, models_panel, roles_note
from core.jobs import JobStatus, TrainJob, kind_template, make_request, training_queue
from core.jobs.limits import LimitError
from core.jobs.training import TrainRequest, free_name
from core.jobs.wait import expected_wait
from core.methods import METHODS, method
from core.storage.checkpoints import TASK_DATASETS, task_title
from core.storage.database_errors import DatabaseError

POLL_SECONDS = 1.0
LEARNING_RATES = (1e-4, 3e-4, 1e-3, 3e-3, 0.01, 0.03, 0.1, 0.3, 0.5)
BATCHES = (32, 64, 128, 256, 512)
SUBSETS = (1_000, 2_000, 5_000, 10_000, 20_000, 55_000, 60_000)
TEST_SUBSETS = (500, 1_000, 2_000, 5_000, 10_000)
EVAL_PASSES = (1, 10, 20, 50, 100)
JOB_KEY = "train_job"  # the job this session started last
WATCH_KEY = "train_watched"  # the job the page shows
PICKED_KEY = "train_watch_picked"  # the visitor picked the watched job in the list
WATCH_LIST = "train_watch"  # the "Show job" list (its key: widget_keys.current)
LEFT_KEY = "train_watch_left"  # (the job watched before the last press, when)
LATE_S = 10.0  # how long after a press the list's old value reads as late


def kind_title(kind: str) -> str:
    """The method's title."""
    return method(kind).title


def model_settings(kind: str) -> dict:
    """The method's own settings as controls, in three columns; returns their values by name."""
    unit = method(kind)
    st.caption(unit.summary)
    columns = st.columns(3)
    values: dict = {}
    shown = 0
    for setting in unit.settings:
        if setting.applies(values):
            values[setting.name] = setting_widget(
                setting, f"train_{setting.name}", columns[shown % 3]
            )
            shown += 1
    return values


def job_line(request: TrainRequest) -> str:
    """One line on a request, e.g. ``"Bayes by Backprop on MNIST, 3 epochs × 10,000 images"``."""
    images = f"{request.n_train:,}" if request.n_train else "all"
    epochs = request.training.epochs
    return (
        f"{kind_title(request.model.kind)} on {task_title(request.dataset)}, "
        f"{epochs} epoch{'' if epochs == 1 else 's'} × {images} images"
    )


def job_names(jobs: list[TrainJob]) -> dict[int, str]:
    """Each job's name for the list: its line, and what sets it apart from jobs of that line."""
    settings = {
        s.name: s for kind in {j.request.model.kind for j in jobs} for s in method(kind).settings
    }
    labels = {name: s.label for name, s in settings.items()}

    def say(name: str, value: object) -> str:
        if name in settings and isinstance(value, str):
            value = settings[name].title(value)
        return setting_text(name, value, labels)

    lines = [job_line(j.request) for j in jobs]
    runs = [request_settings(j.request.to_dict()) for j in jobs]
    return dict(zip([j.id for j in jobs], run_names(lines, runs, say), strict=True))


def about(seconds: float) -> str:
    """A wait in words: "under a minute", "about 2 min", "about 1 h 5 min"."""
    minutes = round(seconds / 60)
    if minutes < 1:
        return "under a minute"
    if minutes < 60:
        return f"about {minutes} min"
    return f"about {minutes // 60} h {minutes % 60} min"


def wait_text(job: TrainJob, jobs: list[TrainJob], workers: int) -> str:
    """A queued job's expected wait, e.g. "starts in about 2 min" ("" if not queued)."""
    wait = expected_wait(job, jobs, workers)
    if wait is None:
        return ""
    return "starts now" if wait < 1 else f"starts in {about(wait)}"


def status_text(job: TrainJob, jobs: list[TrainJob] | None = None, workers: int = 1) -> str:
    """One phrase on a job's state: queue position and expected wait, progress and ETA, or the
    outcome (the wait is estimated from ``jobs``, the queue's, trained ``workers`` at a time)."""
    if job.status is JobStatus.QUEUED:
        first = " (the teacher's: goes first)" if job.teacher else ""
        if not job.position:
            return "queued"
        wait = wait_text(job, jobs or [job], workers)
        return f"queued, position {job.position}{first}, {wait}"
    if job.status is JobStatus.RUNNING:
        if job.cancelling:
            return "cancelling…"
        eta = job.eta()
        left = "" if eta is None else f", about {eta:.0f} s left"
        return f"running, {job.fraction:.0%}{left}"
    if job.status is JobStatus.DONE:
        return f"done in {job.elapsed():.0f} s, test error {job.metrics['test_error']:.2%}"
    if job.status is JobStatus.FAILED:
        return "failed"
    return "cancelled, nothing saved"


def curve_data(job: TrainJob) -> tuple[dict, dict]:
    """Per-epoch lists and within-epoch running averages (x = fractional epoch)."""
    epochs = {
        key: [getattr(s, key) for s in job.history]
        for key in ("epoch", "elbo_loss", "nll", "test_nll", "kl", "train_error", "test_error")
    }
    n_epochs = max(job.request.training.epochs, 1)
    steps = {"x": [s.fraction * n_epochs for s in job.steps]}
    for key in ("elbo_loss", "nll", "kl", "train_error"):
        steps[key] = [getattr(s, key) for s in job.steps]
    return epochs, steps


def show_job(job: TrainJob, name: str, jobs: list[TrainJob], workers: int) -> None:
    """The watched job, under its name in the list: its place in the queue and expected wait,
    progress bar with ETA, cancel button, outcome and live curves."""
    request = job.request
    head, button = st.columns([5, 1], vertical_alignment="bottom")
    with head:
        st.markdown(f"**Job #{job.id}** ({name}): {status_text(job, jobs, workers)}")
        st.text(f"name: {request.name}")  # user text: never Markdown
        if job.status is JobStatus.RUNNING:
            eta = job.eta()
            label = f"{job.message} · {job.elapsed():.0f} s"
            label += "" if eta is None else f" · ETA {eta:.0f} s"
            st.progress(job.fraction, text=label)
        elif job.status is JobStatus.QUEUED:
            ahead = (job.position or 1) - 1
            jobs_ahead = f"{ahead} job{'' if ahead == 1 else 's'} ahead"
            at_once = f"{workers} job{'s train' if workers > 1 else ' trains'} at a time"
            st.progress(
                0.0,
                text=f"waiting, position {job.position} in the queue ({jobs_ahead}, "
                f"{at_once}): {wait_text(job, jobs, workers)}",
            )
            st.caption(
                "The wait is estimated from the size of the jobs ahead and how long the last "
                "jobs took on this server; it changes as jobs ahead end, or are cancelled."
            )
    if job.status.active and ui.visitor().may_act_on(job.owner):
        button.button(
            "Cancel",
            key=f"train_cancel_{job.id}",
            on_click=cancel_job,
            args=(job.id,),
            disabled=job.cancelling,
            icon=":material/stop_circle:",
        )
    if job.status is JobStatus.DONE and job.path is not None:
        st.success(
            f"Saved: test error {job.metrics['test_error']:.2%}, NLL {job.metrics['nll']:.3f} "
            f"on the whole {task_title(request.dataset)} test set "
            f"({request.n_eval_samples} passes). Pick it in the sidebar under this name:"
        )
        st.text(ui.model_title(f"user:{job.path.stem}"))
    elif job.status is JobStatus.FAILED:
        st.error("The job failed; nothing was saved.")
        st.text(job.error)
    elif job.status is JobStatus.CANCELLED:
        st.info("Cancelled: nothing was saved.")
    if job.history or job.steps:
        epochs, steps = curve_data(job)
        n_epochs = request.training.epochs
        columns = st.columns(3 if model_has_kl(job) else 2)
        with columns[0]:
            show_figure(loss_figure(epochs, steps, n_epochs), f"train_loss_{job.id}")
        with columns[1]:
            show_figure(error_figure(epochs, steps, n_epochs), f"train_error_{job.id}")
        if len(columns) == 3:
            with columns[2]:
                show_figure(kl_figure(epochs, steps, n_epochs), f"train_kl_{job.id}")
        test = f"{request.n_test:,}" if request.n_test else "all"
        st.caption(
            "Thin dotted lines: running averages within the epoch, every 20 steps; markers: "
            f"each finished epoch (test error and NLL on {test} test images, "
            f"{request.training.n_eval_samples} passes). The objective is per training image: "
            "NLL + β·KL / N."
        )


def model_has_kl(job: TrainJob) -> bool:
    """Whether the job's model has a complexity cost worth plotting (a weight posterior)."""
    return method(job.request.model.kind).curve_kl


def follow(job_id: int, pressed: bool = False) -> None:
    """Watch ``job_id`` because the page chose it: the job the visitor just started
    (``pressed``), or the queue moving on."""
    left = st.session_state.get(WATCH_KEY) if pressed else None
    st.session_state[LEFT_KEY] = (left, time.monotonic())
    st.session_state[WATCH_KEY] = job_id
    st.session_state[PICKED_KEY] = False
    widget_keys.renew(WATCH_LIST)  # a late value of the old list is not the visitor's pick


def picked(key: str) -> None:
    """The visitor picked a job in the list under ``key``: watch it until it is gone.

    A browser that lags behind the server (a loaded classroom machine) can send the list's
    old value seconds after the press that started a job; the job watched before the press is
    not taken for a pick then."""
    left, when = st.session_state.get(LEFT_KEY, (None, 0.0))
    if st.session_state[key] == left and time.monotonic() - when < LATE_S:
        return
    st.session_state[WATCH_KEY] = st.session_state[key]
    st.session_state[PICKED_KEY] = True


def jobs_panel() -> None:
    """The queue and the watched job; polled while a job is active (a fragment)."""
    queue = training_queue()
    visitor = ui.visitor()
    try:
        jobs = queue.jobs()
        room = queue.room(visitor)
    except DatabaseError as exc:
        ui.database_problem(
            "The list of jobs cannot be read right now; nothing was lost, try again soon.", exc
        )
        return
    st.caption(room.describe(visitor.teacher))
    if not jobs:
        st.caption("No training job yet.")
        return
    names = job_names(jobs)
    rows = [
        {
            "job": f"#{j.id}",
            "name": j.request.name,
            "what": names[j.id],
            "status": status_text(j, jobs, queue.workers),
            "yours": "yes" if j.owner == visitor.id else "",
        }
        for j in reversed(jobs)
    ]
    show_table(rows)
    ids = [j.id for j in reversed(jobs)]
    mine = st.session_state.get(JOB_KEY)
    running = [j.id for j in jobs if j.status is JobStatus.RUNNING]
    watched = st.session_state.get(WATCH_KEY)
    if not st.session_state.get(PICKED_KEY) or watched not in ids:
        # Until the visitor picks a job, watch theirs, else the running one, else the newest,
        # as the queue moves on (a worker may claim a job just after the page first read it).
        chosen = mine if mine in ids else (running or ids)[0]
        if chosen != watched:
            follow(chosen)
    watched = st.session_state[WATCH_KEY]
    if st.session_state.get(widget_keys.current(WATCH_LIST), watched) != watched:
        widget_keys.renew(WATCH_LIST)  # a late value was not taken: draw the list afresh
    key = widget_keys.current(WATCH_LIST)
    st.selectbox(
        "Show job",
        ids,
        index=ids.index(watched),
        format_func=lambda i: f"#{i}",
        key=key,
        on_change=picked,
        args=(key,),
    )
    job = queue.get(watched) or next(j for j in jobs if j.id == watched)
    show_job(job, names.get(job.id) or job_line(job.request), jobs, queue.workers)
    if st.session_state.get("train_polling") and not any(j.status.active for j in jobs):
        st.session_state["train_polling"] = False
        st.rerun()  # the last job ended: refresh the model lists and stop polling


def cancel_job(job_id: int) -> None:
    """Cancel callback: only this session's jobs (or any, for the teacher). A database error's
    details are the teacher's only (they may name a host)."""
    visitor = ui.visitor()
    try:
        training_queue().cancel(job_id, visitor)
    except PermissionError as exc:
        st.session_state[NOTICE_KEY] = ("error", str(exc))
    except DatabaseError as exc:
        busy = "the list of jobs cannot be changed right now; nothing was lost, try again soon"
        st.session_state[NOTICE_KEY] = ("error", str(exc) if visitor.teacher else busy)


# --- page ----------------------------------------------------------------------------------

st.title("Train your own network")
ui.teacher_sign_in()
st.markdown(
    "Pick a task and a method, set the hyperparameters and start: the curves appear as the "
    "network trains. Jobs run on the server, one at a time, so you can close this tab and come "
    "back; later jobs wait in a queue. A finished model is saved among *your* models and "
    "appears in the sidebar, marked user-trained, on every page that fits its task."
)
queue = training_queue()
where = queue.executor.where if ui.visitor().teacher else "the lab's server"  # may name a host
st.caption(
    f"Jobs train on {where}, {queue.workers} at a time; models are saved in the user-model "
    "folder (never over the shipped ones)."
)

st.subheader("1. Task and method")
task_col, kind_col = st.columns(2)
dataset = share.radio(
    "Task",
    tuple(TASK_DATASETS),
    format_func=task_title,
    horizontal=True,
    key="train_dataset",
    container=task_col,
)
kind = share.selectbox(
    "Method",
    list(METHODS),
    format_func=kind_title,
    key="train_kind",
    container=kind_col,
)
template = kind_template(kind)
if template is not None:
    st.caption(f"Defaults from the shipped model {template.title!r}: {template.description}")

st.subheader("2. Hyperparameters")
try:
    settings = model_settings(kind)
except ValueError as exc:
    st.error("These settings are not valid.")
    st.text(str(exc))
    st.stop()
training = template.training if template and template.training.epochs else None
a, b, c, d = st.columns(4)
settings["epochs"] = share.number_input("Epochs", 1, 200, 3, key="train_epochs", container=a)
settings["lr"] = option(
    "Learning rate", LEARNING_RATES, training.lr if training else 1e-3, "train_lr", b
)
settings["batch_size"] = option(
    "Batch size", BATCHES, training.batch_size if training else 128, "train_batch", c
)
n_train = share.select_slider(
    "Training images",
    SUBSETS,
    value=10_000,
    format_func="{:,}".format,
    key="train_subset",
    help="A random subset for quick classroom runs (60,000 = the whole training set).",
    container=d,
)
with st.expander("Evaluation"):
    left, right = st.columns(2)
    n_test = share.select_slider(
        "Test images after each epoch",
        TEST_SUBSETS,
        value=10_000,
        format_func="{:,}".format,
        key="train_test_subset",
        help="For the test-error curve; the saved test error always uses the whole test set.",
        container=left,
    )
    n_eval_samples = share.select_slider(
        "Passes for the saved test error",
        EVAL_PASSES,
        value=100,
        key="train_eval_samples",
        help="Monte-Carlo passes of the predictive mean on the whole test set at the end.",
        container=right,
    )
suggested = free_name(
    f"my_{kind}_{'fashion' if dataset == 'fashion_mnist' else 'mnist'}", queue.folder()
)
name = share.text_input(
    "Name of the new model",
    key="train_name",
    placeholder=suggested,
    max_chars=64,
    help="Letters, digits, _ and -. Left empty: " + suggested,
)
if st.button("Start training", key="train_start", type="primary", icon=":material/play_arrow:"):
    try:
        request = make_request(
            (name or "").strip() or suggested,
            kind,
            dataset=dataset,
            n_train=None if n_train >= 60_000 else int(n_train),
            n_test=None if n_test >= 10_000 else int(n_test),
            n_eval_samples=int(n_eval_samples),
            **settings,
        )
        job_id = queue.submit(request, ui.visitor())
        st.session_state[JOB_KEY] = job_id
        follow(job_id, pressed=True)
    except LimitError as exc:
        st.error(str(exc))  # one sentence of numbers, no typed text
    except DatabaseError as exc:
        ui.database_problem("The job was not started: the lab's database cannot be reached.", exc)
    except ValueError as exc:
        st.error("The job was not started.")
        st.text(str(exc))  # may quote the typed name: never Markdown

st.subheader("3. Jobs")
roles_note()
limits_panel()
try:
    active = any(j.status.active for j in queue.jobs())
except DatabaseError:
    active = False  # the panel says why
st.session_state["train_polling"] = active
st.fragment(run_every=POLL_SECONDS if active else None)(jobs_panel)()

st.subheader("4. Your models")
models_panel()
