"""Shared UI for every page.

The sidebar and its choices, cached loaders (models, test sets, "I don't know" thresholds), the
pages' one in-memory cache for core calls (:func:`kept`), the one progress runner for
expensive cached work, and who the visitor is: the browser (:func:`visitor`), the teacher's
sign-in (:func:`teacher_sign_in`) and database errors told to students without their details
(:func:`database_problem`).

Models are named by their registry name (shipped) or ``user:NAME`` (trained on the Train page
or with ``python -m core train --name``, stored in the user-model folder); the sidebar lists
both, the user-trained ones marked as such. Each model has a task (:func:`checkpoint_dataset`,
MNIST or Fashion-MNIST) and pages evaluate it on that task's test set (:func:`test_set`).

Pages read the sidebar's choices only through :func:`selected_models`, :func:`selected_names`
and :func:`sample_count`; they work with defaults when the sidebar was not drawn (e.g. a page
run on its own in ``AppTest``). Models and datasets returned here are shared by every session
of the server: never modify them.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import streamlit as st
import torch

from app import share
from core import catalogue
from core.catalogue import REGISTRY, list_checkpoints
from core.engine.device import default_device, device_name
from core.engine.sampler import DEFAULT_SAMPLES
from core.evaluation.uncertainty import Thresholds
from core.jobs.limits import client_address
from core.jobs.owners import Visitor
from core.methods import Model
from core.progress import Job, run_all
from core.roles import (
    KeyThrottle,
    TeacherKeyUnavailable,
    TooManyGuesses,
    is_teacher_key,
    wait_text,
)
from core.storage.checkpoints import (
    CheckpointError,
    CheckpointInfo,
    checkpoint_dataset,
    is_user_key,
    resolve_checkpoint,
    shared_model,
    task_title,
)
from core.storage.user_models import list_user_checkpoints, user_title
from core.studies import evaluations

T = TypeVar("T")
MODELS_KEY = "sidebar_models"
SAMPLES_KEY = "sidebar_samples"
MAX_SAMPLES = 1000
THRESHOLDS_MESSAGE = 'Scoring the test set for the "I don\'t know" thresholds (once per model)'


# --- sidebar -------------------------------------------------------------------------------


def model_title(name: str) -> str:
    """Give the human title of a checkpoint.

    Args:
        name: The checkpoint's registry name, or ``user:NAME`` for a user-trained model.

    Returns:
        Its registered title; ``NAME (user-trained)`` (plus its task when not MNIST, and
        ``partial: D of N epochs`` when its training did not finish) for a user-trained model
        (:func:`core.storage.user_models.user_title`; names are letters, digits, ``_`` and
        ``-``, safe in Markdown); ``name`` itself otherwise.
    """
    if is_user_key(name):
        return user_title(name)
    spec = REGISTRY.get(name)
    return spec.title if spec else name


def all_checkpoints() -> list[CheckpointInfo]:
    """List the shipped checkpoints, then the user-trained ones.

    Returns:
        Registered specs in registry order, then each model of the user-model folder
        (named ``user:NAME``), each with whether it loads.
    """
    return list_checkpoints() + list_user_checkpoints()


def device() -> torch.device:
    """Give the device models run on.

    Returns:
        :func:`core.engine.device.default_device`.
    """
    return default_device()


def render_sidebar(pick_models: bool = True) -> None:
    """Draw the sidebar: models to compare, Monte-Carlo samples and the device in use.

    User-trained models follow the shipped ones, marked "(user-trained)". Broken checkpoints
    are listed apart, with the reason. Both settings live in the URL (:mod:`app.share`:
    ``sidebar_models=bbb_gaussian,user:NAME``, ``sidebar_samples=200``).

    Args:
        pick_models: Whether the page compares the chosen models. A page that does not shows
            only the device; the choices are kept for the next page that does.
    """
    if not pick_models:
        for key in (MODELS_KEY, SAMPLES_KEY):
            if key in st.session_state:  # a widget not drawn in a run loses its value: keep it
                st.session_state[key] = st.session_state[key]
        st.sidebar.caption(f"Device: {device_name(device())}")
        return
    infos = all_checkpoints()
    available = [i.spec.name for i in infos if i.available]
    chosen = st.session_state.get(MODELS_KEY)
    if chosen is not None and not set(chosen) <= set(available):  # a checkpoint vanished
        st.session_state[MODELS_KEY] = [n for n in chosen if n in available]
    with st.sidebar:
        share.multiselect(
            "Models to compare",
            available,
            default=catalogue.default_models(available),
            format_func=model_title,
            key=MODELS_KEY,
            placeholder="No trained checkpoint" if not available else "Choose models",
            help="Shipped models, then models trained on the Train page (marked "
            '"user-trained"); a page uses those that fit its task.',
        )
        missing = [i for i in infos if not i.available]
        if missing:
            with st.expander(f"Unavailable models ({len(missing)})"):
                for info in missing:
                    st.text(f"{info.spec.title}: {info.reason}")
        share.number_input(
            "Monte-Carlo samples",
            min_value=1,
            max_value=MAX_SAMPLES,
            value=DEFAULT_SAMPLES,
            step=10,
            key=SAMPLES_KEY,
            help="Stochastic forward passes per prediction (networks drawn from the posterior).",
        )
        st.caption(f"Device: {device_name(device())}")


def selected_names() -> list[str]:
    """List the models chosen in the sidebar.

    Returns:
        Their registry names; :func:`core.catalogue.default_models` if the sidebar was not
        drawn.
    """
    if MODELS_KEY in st.session_state:
        return list(st.session_state[MODELS_KEY])
    return catalogue.default_models([i.spec.name for i in list_checkpoints() if i.available])


def sample_count() -> int:
    """Give the number of Monte-Carlo samples chosen in the sidebar.

    Returns:
        The count, within 1..:data:`MAX_SAMPLES` (:data:`DEFAULT_SAMPLES` if not drawn).
    """
    n_samples = st.session_state.get(SAMPLES_KEY, DEFAULT_SAMPLES)
    return int(min(max(n_samples or DEFAULT_SAMPLES, 1), MAX_SAMPLES))


# --- shared loaders ------------------------------------------------------------------------


def version(name: str) -> int:
    """Give a value that changes whenever a checkpoint file is rewritten.

    Pass it to cached functions that take a checkpoint name, so a retrained model is not served
    from a stale cache.

    Args:
        name: The checkpoint's registry name.

    Returns:
        The file's modification time, in nanoseconds.

    Raises:
        CheckpointError: If the checkpoint file is missing.
    """
    path = resolve_checkpoint(name)
    try:
        return path.stat().st_mtime_ns
    except OSError as exc:
        raise CheckpointError(f"{path}: checkpoint file not found") from exc


def load_model(name: str) -> Model:
    """Load a checkpoint's model once per process and file version.

    Shared by all sessions and pages: never modify it.

    Args:
        name: The checkpoint's registry name or ``user:NAME``.

    Returns:
        The model, on :func:`device`.

    Raises:
        CheckpointError: Naming the file when it is missing or corrupt.
    """
    return shared_model(name, device())


def selected_models() -> list[tuple[str, Model]]:
    """Load the models chosen in the sidebar.

    An ``st.error`` naming the file is shown for each one that does not load.

    Returns:
        ``(name, model)`` for each chosen model that loads.
    """
    models = []
    for name in selected_names():
        try:
            models.append((name, load_model(name)))
        except CheckpointError as exc:
            st.error(f"Cannot load {model_title(name)}: {exc}")
    return models


@st.cache_resource(show_spinner="Loading the test set…", max_entries=4)
def test_set(dataset: str = "mnist") -> tuple[torch.Tensor, torch.Tensor]:
    """Load a task's test set once, shared read-only by all sessions.

    Args:
        dataset: ``"mnist"`` or ``"fashion_mnist"`` (see :func:`checkpoint_dataset`).

    Returns:
        Images ``(10000, 1, 28, 28)`` in [0, 1] and int64 labels ``(10000,)``.

    Raises:
        DatasetUnavailable: If the files are missing.
    """
    from core.data import load_dataset

    return load_dataset(dataset, "test")


def mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    """Load the MNIST test set once, shared read-only by all sessions (:func:`test_set`).

    Returns:
        Images ``(10000, 1, 28, 28)`` in [0, 1] and int64 labels ``(10000,)``.

    Raises:
        DatasetUnavailable: If the MNIST files are missing.
    """
    return test_set("mnist")


def require_test_set(dataset: str = "mnist") -> tuple[torch.Tensor, torch.Tensor]:
    """Load :func:`test_set`, or show what is missing and end the page run.

    Args:
        dataset: The task's dataset.

    Returns:
        Images ``(10000, 1, 28, 28)`` in [0, 1] and int64 labels ``(10000,)``.
    """
    from core.data import DatasetUnavailable

    try:
        return test_set(dataset)
    except DatasetUnavailable as exc:
        st.error(f"The {task_title(dataset)} test set is unavailable.")
        st.text(str(exc))
        st.stop()


def require_mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    """Load :func:`mnist_test`, or show what is missing and end the page run.

    Returns:
        Images ``(10000, 1, 28, 28)`` in [0, 1] and int64 labels ``(10000,)``.
    """
    return require_test_set("mnist")


# --- expensive cached work -----------------------------------------------------------------


@st.cache_resource(show_spinner=False, max_entries=1024)
def _kept(_compute: Callable[..., Any], call: str, args: tuple, kwargs: tuple, versions: tuple):
    return _compute(*args, **dict(kwargs))


def kept(compute: Callable[..., T], *args: Any, models: Sequence[str] = (), **kwargs: Any) -> T:
    """Call ``compute(*args, **kwargs)`` once per server and keep the result in memory.

    The pages' one in-memory cache, for core calls whose results a rerun needs again (most of
    them read a result from the disk cache, :mod:`core.storage.cache`, or compute and store
    it). Keyed by the function, its arguments (str, numbers, tuples, frozen dataclasses) and
    the file version of each checkpoint in ``models``, so a retrained model gets a new value.

    Args:
        compute: A core function.
        *args: Its positional arguments.
        models: Checkpoints (registry names or ``user:NAME``) the result depends on.
        **kwargs: Its keyword arguments.

    Returns:
        What ``compute`` returned, shared by every session of the server: never modify it.
    """
    call = f"{compute.__module__}.{compute.__qualname__}"
    versions = tuple(version(name) for name in models)
    return _kept(compute, call, args, tuple(sorted(kwargs.items())), versions)


def run_jobs(jobs: list[Job], message: str) -> None:
    """Run the missing pieces of cached work under one progress bar.

    The bar is shown only when there is something to compute.

    Args:
        jobs: The work not cached yet; each job's title prefixes its progress messages.
        message: The bar's heading.
    """
    if not jobs:
        return
    bar = st.progress(0.0, f"{message}…")
    run_all(jobs, lambda fraction, text: bar.progress(fraction, f"{message}: {text}"))
    bar.empty()


@st.cache_data(show_spinner=False, max_entries=64)
def _thresholds(name: str, mtime_ns: int) -> Thresholds:
    return evaluations.rejection_thresholds(name)


def rejection_thresholds(names: list[str]) -> dict[str, Thresholds]:
    """Get the "I don't know" limits of each checkpoint, computing missing ones.

    Missing ones are computed under a progress bar, once per checkpoint file, then cached on
    disk (:func:`core.studies.evaluations.rejection_thresholds`), each on its own task's test
    set.

    Args:
        names: Registry names (or ``user:NAME``) of the checkpoints.

    Returns:
        Name → its thresholds (score name → ``{"p90", "p99"}``).

    Raises:
        DatasetUnavailable: Without a model's test set.
    """
    jobs = [
        job
        for name in names
        for job in evaluations.evaluation_jobs(
            [name], [checkpoint_dataset(name)], title=model_title
        )
    ]
    run_jobs(jobs, THRESHOLDS_MESSAGE)
    return {name: _thresholds(name, version(name)) for name in names}


VISITOR_KEY = "visitor_id"
TEACHER_FLAG = "visitor_teacher"
KEY_INPUT = "teacher_key"
SIGN_IN_NOTICE = "teacher_notice"  # (kind, line) left by the sign-in callback
TEACHER_MODE = "Teacher mode"
XSRF_COOKIE = "_streamlit_xsrf"  # set once per browser by the server, kept across reloads


def browser_token(cookie: str) -> str:
    """A stable id of the browser from its XSRF cookie ("" when it has none).

    The server (Tornado) keeps one random token per browser in the cookie but writes it masked,
    ``2|mask|token XOR mask|time``, with a fresh mask on every page load: the token itself is
    the XOR of the two, and this hashes it.

    Args:
        cookie: The cookie's value.

    Returns:
        16 hex digits, or "" for a missing or unreadable cookie.
    """
    try:
        version, mask, masked, _ = cookie.split("|")
        key, data = bytes.fromhex(mask), bytes.fromhex(masked)
    except ValueError:
        return ""
    if version != "2" or not key:
        return ""
    token = bytes(b ^ key[i % len(key)] for i, b in enumerate(data))
    return hashlib.sha256(token).hexdigest()[:16]


def visitor() -> Visitor:
    """This browser as the owner of its jobs and models (:mod:`core.jobs.owners`).

    Its id is :func:`browser_token` of the XSRF cookie, the same for every tab and reload of
    one browser; without it (e.g. a headless test), a random token for this session. Its address
    is the connection's (:func:`core.jobs.limits.client_address`: behind a trusted proxy, the
    last hop of ``X-Forwarded-For``), which a private window does not change.

    Returns:
        The visitor, a teacher once the teacher key was entered in this session
        (:func:`teacher_sign_in`).
    """
    if VISITOR_KEY not in st.session_state:
        cookies = st.context.cookies or {}
        token = browser_token(cookies.get(XSRF_COOKIE, ""))
        st.session_state[VISITOR_KEY] = token or secrets.token_hex(8)
    headers = st.context.headers
    forwarded = ",".join(headers.get_all("X-Forwarded-For")) if headers else ""
    return Visitor(
        st.session_state[VISITOR_KEY],
        bool(st.session_state.get(TEACHER_FLAG)),
        client_address(st.context.ip_address, forwarded),
    )


# --- teacher sign-in -----------------------------------------------------------------------


def _sign_in() -> None:
    """Sign-in callback: one try at the key, unless this browser (or the server) must wait."""
    typed = st.session_state.get(KEY_INPUT, "")
    st.session_state[KEY_INPUT] = ""
    try:
        right = kept(KeyThrottle).guess(visitor().id, lambda: is_teacher_key(typed))
    except TooManyGuesses as exc:
        right, notice = False, f"Too many wrong keys: try again in {wait_text(exc.wait_s)}."
    except TeacherKeyUnavailable:
        right, notice = False, "Teacher sign-in does not work on this server right now."
    else:
        notice = "" if right else "Wrong key."
    st.session_state[TEACHER_FLAG] = right
    st.session_state[SIGN_IN_NOTICE] = notice


def _sign_out() -> None:
    st.session_state[TEACHER_FLAG] = False


def teacher_sign_in() -> bool:
    """Draw the teacher's sign-in in the sidebar: the key, or teacher mode and Sign out.

    The one sign-in of every page with teacher-only controls; teacher mode lasts for this
    browser tab's session. Wrong keys are throttled per browser and for the whole server
    (:class:`core.roles.KeyThrottle`), and the page says how long to wait.

    Returns:
        Whether this session is in teacher mode.
    """
    with st.sidebar:
        if visitor().teacher:
            st.caption(f"**{TEACHER_MODE}**: you can act on everything in this tab.")
            st.button("Sign out", key="teacher_sign_out", on_click=_sign_out)
            return True
        notice = st.session_state.pop(SIGN_IN_NOTICE, "")
        with st.expander("Teacher sign-in", icon=":material/school:", expanded=bool(notice)):
            st.text_input("Teacher key", type="password", key=KEY_INPUT)
            st.button("Sign in", key="teacher_sign_in", on_click=_sign_in)
            if notice:
                st.error(notice)
    return False


def database_problem(headline: str, exc: Exception) -> None:
    """Say that the lab's database failed: one line for everyone, the details for the teacher.

    The details may name the database's file, host or port, which students must not see.

    Args:
        headline: The line for everyone, e.g. "The class's drawings cannot be read right
            now; try again in a moment."
        exc: The :class:`~core.storage.database_errors.DatabaseError`.
    """
    st.error(headline)
    if visitor().teacher:
        st.text(str(exc))
