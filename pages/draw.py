"""Draw page: draw, upload or pick a digit; compare each model's Monte-Carlo predictive.

Only digit models (trained on MNIST) are offered; the page says which chosen models are left
out and why."""

import numpy as np
import streamlit as st
import torch
from streamlit_drawable_canvas import st_canvas

from app import share, ui
from app.classroom import submission_panel
from app.figures import show_figure
from app.figures.pixels import enlarge
from app.figures.predictive import predictive_figure
from app.figures.sweep import sweep_figure
from core.data import DatasetUnavailable
from core.data.preprocess import mnist_style
from core.data.upload import MAX_PIXELS, MAX_UPLOAD_MB, ImageError, read_image
from core.evaluation.sweep import rotation_angles, rotation_sweep
from core.evaluation.uncertainty import Thresholds, reasons, seeded_summary, verdict
from core.storage.checkpoints import checkpoint_dataset
from core.studies.cold_posterior import spread_caveat

CANVAS_KEY = "draw_canvas"
CANVAS_START_KEY = "draw_canvas_start"
SOURCE_KEY = "draw_source"
TEST_INDEX_KEY = "draw_test_index"
SWEEP_KEY = "draw_sweep"
SOURCES = ("Draw", "Upload an image", "MNIST test digit")
CANVAS_SIZE = 280
PREVIEW_SCALE = 6  # screen pixels per image pixel of the preview
ENTROPY_HELP = "Uncertainty of the averaged prediction, in nats: 0 when sure, ln 10 ≈ 2.30 at most."
NARROW_CSS = """<style>
/* On a phone Streamlit stacks columns: Undo and Clear stay side by side, a finger wide each. */
.st-key-draw_buttons [data-testid="stHorizontalBlock"] { flex-wrap: nowrap; }
.st-key-draw_buttons [data-testid="stColumn"] { min-width: 0; }
</style>"""
MI_HELP = "How much the sampled networks disagree with each other, in nats: 0 when they agree."


def canvas_image(image_data: np.ndarray | None) -> np.ndarray | None:
    """Grey level in [0, 1] of the canvas's RGBA image (white ink on black), None if no ink."""
    if image_data is None:
        return None
    grey = image_data[..., :3].mean(-1) / 255.0
    return grey if grey.max() >= 0.05 else None


def redraw_canvas(keep: int) -> None:
    """Make the canvas show the first ``keep`` strokes of its current drawing (all but the last
    for ``-1``, none for ``0``): a button callback for Undo and Clear, which stay visible and
    large on a phone (the canvas's own toolbar shows on hover only). It reads the drawing the
    canvas sent last, not the one of the run that drew the button: a tap right after a stroke
    can come before that stroke's run has finished. The canvas loads a changed
    ``initial_drawing`` and sends it back; the count makes each request a change, even a second
    Clear."""
    drawing = (st.session_state.get(CANVAS_KEY) or {}).get("drawing") or {}
    raw = drawing.get("raw") or {}
    strokes = (raw.get("objects") or [])[:keep]
    count = st.session_state.get(CANVAS_START_KEY, {}).get("redraws", 0) + 1
    st.session_state[CANVAS_START_KEY] = {**raw, "objects": strokes, "redraws": count}


def from_canvas(pen) -> tuple[np.ndarray, str] | None:
    """The canvas drawing, MNIST-style, and a caption; None (with a prompt) while empty.

    Args:
        pen: Where the stroke-width slider goes: beside the canvas, or on a phone after the
            verdicts, so that nothing stands between the canvas and its verdict.
    """
    stroke = share.slider("Stroke width", 5, 40, 18, key="draw_stroke", container=pen)
    result = st_canvas(
        stroke_width=stroke,
        stroke_color="#FFFFFF",
        background_color="#000000",
        height=CANVAS_SIZE,
        width=CANVAS_SIZE,
        drawing_mode="freedraw",
        initial_drawing=st.session_state.get(CANVAS_START_KEY),
        return_image_data=True,
        key=CANVAS_KEY,
    )
    strokes = (result.json_data or {}).get("objects") or []
    undo, clear = st.container(key="draw_buttons").columns(2)  # side by side on a phone too
    undo.button(
        "Undo",
        key="draw_undo",
        icon=":material/undo:",
        on_click=redraw_canvas,
        args=(-1,),
        disabled=not strokes,
        width="stretch",
    )
    clear.button(
        "Clear",
        key="draw_clear",
        icon=":material/delete:",
        on_click=redraw_canvas,
        args=(0,),
        disabled=not strokes,
        width="stretch",
    )
    image = canvas_image(result.image_data)
    if image is None:
        st.info("Draw a digit on the black square.")
        return None
    return mnist_style(image), "your drawing"


def from_upload() -> tuple[np.ndarray, str] | None:
    """The uploaded image, MNIST-style, and its name; None with a prompt or an error."""
    upload = st.file_uploader(
        f"PNG or JPEG, up to {MAX_UPLOAD_MB} MB and {MAX_PIXELS / 1e6:.0f} megapixels; "
        "dark ink on a light background is inverted",
        type=["png", "jpg", "jpeg"],
        max_upload_size=MAX_UPLOAD_MB,
        key="draw_upload",
    )
    if upload is None:
        st.info("Upload a picture of a single digit.")
        return None
    try:
        image = read_image(upload.getvalue())
        return mnist_style(image), f"uploaded file: {upload.name}"
    except ImageError as exc:
        problem = str(exc)
    except ValueError:
        problem = "no digit found, the image is blank."
    st.error("The upload cannot be used.")
    st.text(f"{upload.name}: {problem}")  # the file name is user text: never Markdown
    return None


def from_test_set() -> tuple[np.ndarray, str] | None:
    """A random MNIST test digit (re-drawn by the button) with its true label shown."""
    try:
        images, labels = ui.mnist_test()
    except DatasetUnavailable as exc:
        st.error(f"The MNIST test set is unavailable: {exc}")
        return None
    if st.button("Random test digit", key="draw_random") or TEST_INDEX_KEY not in st.session_state:
        st.session_state[TEST_INDEX_KEY] = int(np.random.default_rng().integers(len(labels)))
    i = st.session_state[TEST_INDEX_KEY]
    st.markdown(f"MNIST test image #{i}, **true label: {int(labels[i])}**")
    return images[i, 0].numpy(), f"MNIST test digit #{i} (a {int(labels[i])})"


def show_verdict(name: str, summary, limits: Thresholds | None) -> None:
    """One model's verdict, most probable class and why, right under the input."""
    top = int(summary.predicted[0])
    st.subheader(ui.model_title(name))
    with st.container(key=f"prediction_{name}"):
        said = verdict(summary, limits)[0] if limits else "no verdict (thresholds unavailable)"
        st.markdown(
            f"**{said}**  \nmost probable class: {top} "
            f"(mean probability {summary.mean[0, top]:.0%})"
        )
        if limits:
            st.caption(reasons(summary, limits)[0])


def show_details(name: str, model, summary) -> None:
    """One model's entropy, mutual information and three plots."""
    st.markdown(f"**{ui.model_title(name)}**")
    a, b = st.columns(2)
    a.metric("Predictive entropy", f"{summary.entropy[0]:.3f}", help=ENTROPY_HELP)
    b.metric("Mutual information", f"{summary.mutual_information[0]:.3f}", help=MI_HELP)
    figure = predictive_figure(
        summary.mean[0].numpy(),
        summary.std[0].numpy(),
        summary.class_counts[0].numpy(),
        summary.top_scores[:, 0].numpy(),
        int(summary.predicted[0]),
    )
    show_figure(figure, f"{name}_predictive")
    if model.sampling_note:
        st.caption(model.sampling_note)
    caveat = ui.kept(spread_caveat, name, models=[name])
    if caveat:
        st.caption(caveat)


@st.fragment
def show_rotation_sweep(image: torch.Tensor, models: list, n_samples: int) -> None:
    """The rotated-digit experiment for ``image (28, 28)``; its widgets rerun only this part."""
    st.subheader("Turn it: the rotated-digit experiment")
    if not share.toggle("Sweep this input through a rotation", key=SWEEP_KEY):
        st.caption(
            "Turns the input step by step (Gal's thesis: a rotated 1 is read as 5 or 7 at some "
            "angles while the sampled networks disagree) and plots every sampled network's "
            "softmax for the top classes at each angle, with the entropy and mutual information."
        )
        return
    left, right = st.columns(2)
    degrees = share.slider(
        "Up to (degrees)", 30, 360, 180, 10, key="draw_sweep_degrees", container=left
    )
    steps = share.slider("Steps", 4, 24, 12, key="draw_sweep_steps", container=right)
    angles = rotation_angles(degrees, steps)
    strip = None
    for column, (name, model) in zip(st.columns(max(len(models), 1)), models, strict=False):
        sweep = rotation_sweep(model, image, angles, n_samples)
        strip = sweep.images
        with column:
            figure = sweep_figure(
                sweep.angles.numpy(),
                sweep.probs.numpy(),
                sweep.entropy.numpy(),
                sweep.mutual_information.numpy(),
                sweep.top_classes(),
                ui.model_title(name),
            )
            show_figure(figure, f"{name}_sweep")
    if strip is not None:
        st.image(np.concatenate(list(strip.numpy()), axis=1), clamp=True, width="stretch")
        st.caption(f"The input at {', '.join(f'{a:.0f}°' for a in angles.tolist())}.")


def digit_models() -> list:
    """The chosen models trained on digits; the others are named with the reason."""
    chosen = ui.selected_names()
    other = [name for name in chosen if checkpoint_dataset(name) != "mnist"]
    if other:
        st.info(
            "Not offered on this page: these models were trained on another task (e.g. "
            "Fashion-MNIST clothes), not on digits, so a digit means nothing to them. Try them "
            "on the OOD explorer, the Adversarial or the Pruning page."
        )
        st.text(", ".join(ui.model_title(name) for name in other))  # may hold user names
    return [(name, model) for name, model in ui.selected_models() if name not in other]


st.title("Draw a digit")
models = digit_models()
n_samples = ui.sample_count()

st.html(NARROW_CSS)
source_col, seen_col = st.columns([3, 2])
# Beside the input (on a phone right under it): the verdicts, then what the models see, then
# the pen; so that on a phone the verdict shows without scrolling once a digit is drawn.
verdict_box, preview_box, pen_box = (seen_col.container() for _ in range(3))
with source_col:
    source = share.radio("Input", SOURCES, horizontal=True, key=SOURCE_KEY)
    sources = {
        SOURCES[0]: lambda: from_canvas(pen_box),
        SOURCES[1]: from_upload,
        SOURCES[2]: from_test_set,
    }
    picked = sources[source]()
if picked is not None:
    image, what = picked
    with preview_box:
        st.markdown("**What the models see** (28×28)")
        st.image(enlarge(image, PREVIEW_SCALE), clamp=True)
        st.text(what)  # may hold a file name: user text is shown literally, never as Markdown
    if not models:
        verdict_box.warning("Choose at least one trained model in the sidebar.")
    try:
        limits = ui.rejection_thresholds([name for name, _ in models])
    except DatasetUnavailable as exc:
        limits = {}
        st.warning(f'No verdicts: the "I don\'t know" thresholds need the MNIST test set. {exc}')
    x = torch.from_numpy(np.ascontiguousarray(image, dtype=np.float32))[None, None]
    # seeded passes: the same drawing always shows the same numbers (the guide's examples too)
    summaries = [seeded_summary(model, x, n_samples) for _, model in models]
    with verdict_box:
        for (name, _), summary in zip(models, summaries, strict=True):
            show_verdict(name, summary, limits.get(name))
    if source == SOURCES[0]:  # only the student's own drawings go to the class
        submission_panel(x[0])
    for column, (name, model), summary in zip(
        st.columns(max(len(models), 1)), models, summaries, strict=False
    ):
        with column:
            show_details(name, model, summary)
    show_rotation_sweep(x[0, 0], models, n_samples)
