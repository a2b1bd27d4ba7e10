"""Shared UI for every page: the sidebar and its choices, cached model loading, the cached
"I don't know" thresholds, image upload decoding and plotly figure helpers.

Pages read the sidebar's choices only through :func:`selected_models`, :func:`selected_names`,
:func:`sample_count` and :func:`device`; they work with defaults when the sidebar was not drawn
(e.g. a page run on its own in ``AppTest``).
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np
import plotly.graph_objects as go
import streamlit as st
import torch
from PIL import Image, ImageOps, UnidentifiedImageError

from core import evalcache
from core.checkpoints import (
    REGISTRY,
    CheckpointError,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
)
from core.device import default_device, device_name
from core.models import Model
from core.uncertainty import Thresholds

MODELS_KEY = "sidebar_models"
SAMPLES_KEY = "sidebar_samples"
DEFAULT_SAMPLES = 100
MAX_SAMPLES = 1000
MAX_UPLOAD_MB = 5
MAX_IMAGE_SIDE = 4000
THRESHOLDS_MESSAGE = (
    'Scoring the MNIST test set for the "I don\'t know" thresholds (once per model)…'
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
    """Draw the sidebar: models to compare, Monte-Carlo samples and the device in use."""
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
                    st.caption(f"**{info.spec.title}**: {info.reason}")
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
    n = st.session_state.get(SAMPLES_KEY, DEFAULT_SAMPLES)
    return int(min(max(n or DEFAULT_SAMPLES, 1), MAX_SAMPLES))


# --- models --------------------------------------------------------------------------------


@st.cache_resource(show_spinner="Loading model…", max_entries=32)
def _load(path: str, mtime_ns: int, device_str: str) -> Model:
    return load_checkpoint(path, device_str)[0]


def load_model(name: str) -> Model:
    """The model of checkpoint ``name``, loaded once per process and file version.

    The returned model is shared by all sessions and pages: never modify it. Raises
    :class:`~core.checkpoints.CheckpointError` naming the file when it is missing or corrupt."""
    path = checkpoint_path(name)
    try:
        mtime_ns = path.stat().st_mtime_ns
    except OSError as exc:
        raise CheckpointError(f"checkpoint file {path} not found") from exc
    return _load(str(path), mtime_ns, str(device()))


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


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run per-input work (one image, a few hundred samples) on a single intra-op thread in this
    script run: splitting such tiny products over threads costs more than it saves, many times
    more when the cores are busy (Draw page rerun on 2 loaded cores: ~300 ms → ~60 ms)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@st.cache_data(show_spinner=False, max_entries=64)
def _thresholds(path: str, mtime_ns: int) -> Thresholds:
    return evalcache.rejection_thresholds(path)


def rejection_thresholds(names: list[str]) -> dict[str, Thresholds]:
    """The "I don't know" limits of each checkpoint (:func:`core.evalcache.rejection_thresholds`),
    computing missing ones (once per checkpoint file, then cached on disk) under a progress bar.

    Raises :class:`core.data.DatasetUnavailable` without the MNIST test set."""
    todo = [n for n in names if not evalcache.is_cached(n, evalcache.IN_DISTRIBUTION)]
    if todo:
        bar = st.progress(0.0, THRESHOLDS_MESSAGE)
        for i, name in enumerate(todo):
            title = model_title(name)
            evalcache.rejection_thresholds(
                name,
                progress=lambda f, msg, i=i, title=title: bar.progress(
                    (i + f) / len(todo), f"{THRESHOLDS_MESSAGE} {title}: {msg}"
                ),
            )
        bar.empty()
    paths = {name: checkpoint_path(name) for name in names}
    return {name: _thresholds(str(p), p.stat().st_mtime_ns) for name, p in paths.items()}


# --- uploaded images -----------------------------------------------------------------------


class ImageError(ValueError):
    """An upload that is not a usable image; the message is meant for the user."""


def _decode(data: bytes) -> np.ndarray:
    """RGBA floats in [0, 1] of a PNG/JPEG file, checked for format and size first."""
    unreadable = ImageError("This file is not a readable PNG or JPEG image.")
    try:
        img = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError) as exc:
        raise unreadable from exc
    if img.format not in ("PNG", "JPEG"):
        raise ImageError(f"Expected a PNG or JPEG image, got {img.format}.")
    if max(img.size) > MAX_IMAGE_SIDE:
        raise ImageError(
            f"The image is {img.size[0]}x{img.size[1]} pixels; "
            f"at most {MAX_IMAGE_SIDE} pixels per side are accepted."
        )
    try:
        return np.asarray(ImageOps.exif_transpose(img).convert("RGBA"), np.float32) / 255.0
    except (OSError, ValueError, Image.DecompressionBombError) as exc:  # truncated or corrupt
        raise unreadable from exc


def read_image(data: bytes) -> np.ndarray:
    """Decode a PNG/JPEG upload into a 2-D float image in [0, 1], white ink on black.

    Transparent images use opacity as ink; opaque dark-ink-on-light images (judged from the
    border) are inverted; the background level is subtracted and the ink stretched to 1.
    Raises :class:`ImageError` for files over MAX_UPLOAD_MB or MAX_IMAGE_SIDE, or unreadable."""
    if len(data) > MAX_UPLOAD_MB * 1024 * 1024:
        raise ImageError(f"The file is larger than {MAX_UPLOAD_MB} MB.")
    rgba = _decode(data)
    if rgba[..., 3].min() < 1.0:
        return rgba[..., 3]
    grey = rgba[..., :3].mean(-1)
    border = np.concatenate([grey[0], grey[-1], grey[:, 0], grey[:, -1]])
    if np.median(border) > 0.5:
        grey, border = 1.0 - grey, 1.0 - border
    background = float(np.median(border))
    span = float(grey.max()) - background
    if span < 0.1:
        return np.zeros_like(grey)
    return np.clip((grey - background) / span, 0.0, 1.0)


# --- figures -------------------------------------------------------------------------------
# Figures are built in one constructor call (plotly's update_* methods are slow), and the Draw
# page shows one three-panel figure per model: every chart costs the browser a full plot.

CLASS_TICKS = {"tickmode": "linear", "dtick": 1}
CLASS_AXIS = {**CLASS_TICKS, "title": {"text": "class"}}
PANEL_TITLE = {"xref": "paper", "yref": "paper", "x": 0, "xanchor": "left", "showarrow": False}


def predictive_figure(
    mean: np.ndarray, std: np.ndarray, counts: np.ndarray, scores: np.ndarray, cls: int
) -> go.Figure:
    """Three stacked panels: mean class probabilities with ±1 std error bars across samples;
    how many sampled networks predicted each class; the histogram over samples of the softmax
    score of class ``cls`` (the softmax spread)."""
    classes = np.arange(len(mean))
    traces = [
        go.Bar(x=classes, y=mean, error_y={"type": "data", "array": std, "visible": True}),
        go.Bar(x=classes, y=counts, marker_color="#636efa", xaxis="x2", yaxis="y2"),
        go.Histogram(
            x=np.minimum(scores, 0.99999),  # a score of 1 belongs to the last bin, [0.95, 1]
            xbins={"start": 0.0, "end": 1.0, "size": 0.05},
            marker_color="#ef553b",
            xaxis="x3",
            yaxis="y3",
        ),
    ]
    titles = [
        "Mean class probability ± std",
        "Class predicted by each sampled network",
        f"Spread of the top class ({cls}) across samples",
    ]
    domains = [(0.72, 0.94), (0.38, 0.60), (0.07, 0.29)]
    layout = {
        "height": 600,
        "margin": {"l": 10, "r": 10, "t": 10, "b": 10},
        "showlegend": False,
        "bargap": 0.15,
        "annotations": [
            {**PANEL_TITLE, "y": top + 0.01, "yanchor": "bottom", "text": f"<b>{title}</b>"}
            for title, (_, top) in zip(titles, domains, strict=True)
        ],
        "xaxis": {**CLASS_TICKS, "anchor": "y"},
        "yaxis": {"domain": domains[0], "range": [0, 1.05], "title": {"text": "probability"}},
        "xaxis2": {**CLASS_TICKS, "anchor": "y2"},
        "yaxis2": {"domain": domains[1], "rangemode": "tozero", "title": {"text": "networks"}},
        "xaxis3": {"anchor": "y3", "range": [0, 1], "title": {"text": f"p({cls})"}},
        "yaxis3": {"domain": domains[2], "rangemode": "tozero", "title": {"text": "networks"}},
    }
    return go.Figure(traces, layout)


def show_figure(fig: go.Figure, key: str) -> None:
    """Render a plotly figure at container width, without the mode bar. ``key`` must be unique
    on the page: two identical figures without keys are a Streamlit error."""
    st.plotly_chart(fig, width="stretch", config={"displayModeBar": False}, key=key)
