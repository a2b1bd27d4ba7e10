"""Shared UI for every page.

The sidebar and its choices, cached loaders (models, MNIST test set, "I don't know"
thresholds) and the one progress runner for expensive cached work.

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
    """Give the human title of a registered checkpoint.

    Args:
        name: The checkpoint's registry name.

    Returns:
        Its title, or ``name`` itself if unregistered.
    """
    spec = REGISTRY.get(name)
    return spec.title if spec else name


def default_models(available: list[str]) -> list[str]:
    """Pick the models compared by default.

    Args:
        available: Registry names of the checkpoints that load.

    Returns:
        A BBB network (scale-mixture prior, else Gaussian), the MLP and MC dropout, those of
        them that are available.
    """
    bbb = next((n for n in ("bbb_mixture", "bbb_gaussian") if n in available), None)
    return [n for n in (bbb, "mlp", "dropout_mlp") if n is not None and n in available]


def device() -> torch.device:
    """Give the device models run on.

    Returns:
        :func:`core.engine.device.default_device`.
    """
    return default_device()


def render_sidebar() -> None:
    """Draw the sidebar: models to compare, Monte-Carlo samples and the device in use.

    Broken checkpoints are listed apart, with the reason.
    """
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
    """List the models chosen in the sidebar.

    Returns:
        Their registry names; :func:`default_models` if the sidebar was not drawn.
    """
    if MODELS_KEY in st.session_state:
        return list(st.session_state[MODELS_KEY])
    return default_models([i.spec.name for i in list_checkpoints() if i.available])


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
    try:
        return checkpoint_path(name).stat().st_mtime_ns
    except OSError as exc:
        raise CheckpointError(f"{checkpoint_path(name)}: checkpoint file not found") from exc


@st.cache_resource(show_spinner="Loading model…", max_entries=32)
def _load(path: str, mtime_ns: int, device_str: str) -> Model:
    return load_checkpoint(path, device_str)[0]


def load_model(name: str) -> Model:
    """Load a checkpoint's model once per process and file version.

    Shared by all sessions and pages: never modify it.

    Args:
        name: The checkpoint's registry name.

    Returns:
        The model, on :func:`device`.

    Raises:
        CheckpointError: Naming the file when it is missing or corrupt.
    """
    return _load(str(checkpoint_path(name)), version(name), str(device()))


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


@st.cache_resource(show_spinner="Loading the MNIST test set…")
def mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    """Load the MNIST test set once, shared read-only by all sessions.

    Returns:
        Images ``(10000, 1, 28, 28)`` in [0, 1] and int64 labels ``(10000,)``.

    Raises:
        DatasetUnavailable: If the MNIST files are missing.
    """
    from core.data import load_dataset

    return load_dataset("mnist", "test")


def require_mnist_test() -> tuple[torch.Tensor, torch.Tensor]:
    """Load :func:`mnist_test`, or show what is missing and end the page run.

    Returns:
        Images ``(10000, 1, 28, 28)`` in [0, 1] and int64 labels ``(10000,)``.
    """
    from core.data import DatasetUnavailable

    try:
        return mnist_test()
    except DatasetUnavailable as exc:
        st.error("The MNIST test set is unavailable.")
        st.text(str(exc))
        st.stop()


# --- expensive cached work -----------------------------------------------------------------


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
    disk (:func:`core.studies.evaluations.rejection_thresholds`).

    Args:
        names: Registry names of the checkpoints.

    Returns:
        Name → its thresholds (score name → ``{"p90", "p99"}``).

    Raises:
        DatasetUnavailable: Without the MNIST test set.
    """
    jobs = evaluations.evaluation_jobs(names, [evaluations.IN_DISTRIBUTION], title=model_title)
    run_jobs(jobs, THRESHOLDS_MESSAGE)
    return {name: _thresholds(name, version(name)) for name in names}
