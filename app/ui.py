"""Shared UI for every page: the sidebar and its choices, cached loaders (models, MNIST test
set, "I don't know" thresholds) and the one progress runner for expensive cached work.

Pages read the sidebar's choices only through :func:`selected_models`, :func:`selected_names`
and :func:`sample_count`; they work with defaults when the sidebar was not drawn (e.g. a page
run on its own in ``AppTest``). Models and datasets returned here are shared by every session
of the server: never modify them.
"""

from __future__ import annotations

import streamlit as st
import torch

from core.engine.device import default_device, device_name
from core.engine.models import Model
from core.evaluation.uncertainty import Thresholds
from core.progress import Job, run_all
from core.storage.checkpoints import (
    REGISTRY,
    CheckpointError,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
)
from core.studies import evaluations

MODELS_KEY = "sidebar_models"
SAMPLES_KEY = "sidebar_samples"
DEFAULT_SAMPLES = 100
MAX_SAMPLES = 1000
THRESHOLDS_MESSAGE = (
    'Scoring the MNIST test set for the "I don\'t know" thresholds (once per model)'
)


# --- sidebar -------------------------------------------------------------------------------


def model_title(name: str) -> str:
    """Human title of a registered checkpoint (the name itself if unregistered)."""
    spec = REGISTRY.get(name)
    return spec.title if spec else name


def default_models(available: list[str]) -> list[str]:
    """A BBB network (scale-mixture prior, else Gaussian), the MLP and MC dropout, if present."""
    bbb = next((n for n in ("bbb_mixture", "bbb_gaussian") if n in available), None)
    return [n for n in (bbb, "mlp", "dropout_mlp") if n is not None and n in available]


def device() -> torch.device:
    """The device models run on."""
    return default_device()


def render_sidebar() -> None:
    """Draw the sidebar: models to compare (broken checkpoints listed apart with the reason),
    Monte-Carlo samples and the device in use."""
    infos = list_checkpoints()
    available = [i.spec.name for i in infos if i.available]
    chosen = st.session_state.get(MODELS_KEY)
    if chosen is not None and not set(chosen) <= set(available):  # a checkpoint vanished
        st.session_state[MODELS_KEY] = [n for n in chosen if n in available]
    with st.sidebar:
        st.multiselect(
            "Models to compare",
            available,
            default=None if MODELS_KEY in st.session_state else default_models(available),
            format_func=model_title,
            key=MODELS_KEY,
            placeholder="No trained checkpoint" if not available else "Choose models",
        )
        missing = [i for i in infos if not i.available]
        if missing:
            with st.expander(f"Unavailable models ({len(missing)})"):
                for info in missing:
                    st.text(f"{info.spec.title}: {info.reason}")
        st.number_input(
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
    """Registry names of the models chosen in the sidebar (defaults if it was not drawn)."""
    if MODELS_KEY in st.session_state:
        return list(st.session_state[MODELS_KEY])
    return default_models([i.spec.name for i in list_checkpoints() if i.available])


def sample_count() -> int:
    """Number of Monte-Carlo samples chosen in the sidebar, within 1..MAX_SAMPLES."""
    n_samples = st.session_state.get(SAMPLES_KEY, DEFAULT_SAMPLES)
    return int(min(max(n_samples or DEFAULT_SAMPLES, 1), MAX_SAMPLES))


# --- shared loaders ------------------------------------------------------------------------


def version(name: str) -> int:
    """Changes whenever checkpoint ``name`` is rewritten: pass it to cached functions that take
    a checkpoint name, so a retrained model is not served from a stale cache."""
    try:
        return checkpoint_path(name).stat().st_mtime_ns
    except OSError as exc:
        raise CheckpointError(f"{checkpoint_path(name)}: checkpoint file not found") from exc


@st.cache_resource(show_spinner="Loading model…", max_entries=32)
def _load(path: str, mtime_ns: int, device_str: str) -> Model:
    return load_checkpoint(path, device_str)[0]


def load_model(name: str) -> Model:
    """The model of checkpoint ``name``, loaded once per process and file version.

    Shared by all sessions and pages: never modify it. Raises
    :class:`~core.storage.checkpoints.CheckpointError` naming the file when it is missing or
    corrupt."""
    return _load(str(checkpoint_path(name)), version(name), str(device()))


def selected_models() -> list[tuple[str, Model]]:
    """``(name, model)`` for each model chosen in the sidebar that loads; an ``st.error``
    naming the file for each one that does not."""
    models = []
    for name in selected_names():
        try:
            models.append((name, load_model(name)))
        except CheckpointError as exc:
            st.error(f"Cannot load {model_title(name)}: {exc}")
    return models


@st.cache_resource(show_spinner="Loading the MNIST test set…")
def mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    """The MNIST test images ``(10000, 1, 28, 28)`` and labels, shared read-only by all
    sessions. Raises :class:`core.data.DatasetUnavailable`."""
    from core.data import load_dataset

    return load_dataset("mnist", "test")


def require_mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`mnist_test`, or an error naming what is missing and the end of the page run."""
    from core.data import DatasetUnavailable

    try:
        return mnist_test()
    except DatasetUnavailable as exc:
        st.error("The MNIST test set is unavailable.")
        st.text(str(exc))
        st.stop()


# --- expensive cached work -----------------------------------------------------------------


def run_jobs(jobs: list[Job], message: str) -> None:
    """Run the missing pieces of cached work under one progress bar headed ``message`` (shown
    only when there is something to compute); each job's title prefixes its progress."""
    if not jobs:
        return
    bar = st.progress(0.0, f"{message}…")
    run_all(jobs, lambda fraction, text: bar.progress(fraction, f"{message}: {text}"))
    bar.empty()


@st.cache_data(show_spinner=False, max_entries=64)
def _thresholds(name: str, mtime_ns: int) -> Thresholds:
    return evaluations.rejection_thresholds(name)


def rejection_thresholds(names: list[str]) -> dict[str, Thresholds]:
    """The "I don't know" limits of each checkpoint
    (:func:`core.studies.evaluations.rejection_thresholds`), computing missing ones (once per
    checkpoint file, then cached on disk) under a progress bar.

    Raises :class:`core.data.DatasetUnavailable` without the MNIST test set."""
    jobs = evaluations.evaluation_jobs(names, [evaluations.IN_DISTRIBUTION], title=model_title)
    run_jobs(jobs, THRESHOLDS_MESSAGE)
    return {name: _thresholds(name, version(name)) for name in names}
