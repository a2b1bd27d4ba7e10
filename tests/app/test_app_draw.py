"""Headless tests of the Draw page: prompt, predictions per model, uploads, test digits."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
import torch
from PIL import Image, ImageDraw
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
import core.studies.evaluations
from app.ui import load_model
from core.catalogue import REGISTRY, list_checkpoints
from core.data import DatasetUnavailable
from core.data.upload import ImageError, read_image
from core.evaluation.uncertainty import SCORES
from core.methods import build_model
from core.storage.checkpoints import save_checkpoint
from harness.drawing import MAIN, canvas_state, digit_image, png_bytes

MODELS = ("bbb_gaussian", "mlp", "dropout_mlp")
PROMPT = "Draw a digit on the black square"


LIMITS = {score: {"p90": 0.5, "p99": 1.5} for score in SCORES}
REAL_EVALUATION_JOBS = core.studies.evaluations.evaluation_jobs


@pytest.fixture
def untrained(tmp_path, monkeypatch):
    """Untrained BBB, MLP and MC dropout checkpoints in place of checkpoints/, with fixed
    "I don't know" thresholds (scoring MNIST with untrained models would be slow and useless)."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path)
    monkeypatch.setattr(core.studies.evaluations, "evaluation_jobs", lambda *args, **kwargs: [])
    monkeypatch.setattr(
        core.studies.evaluations, "rejection_thresholds", lambda *args, **kwargs: LIMITS
    )
    for name in MODELS:
        save_checkpoint(
            name,
            build_model(REGISTRY[name].model),
            {"note": "untrained, for tests", "dataset": REGISTRY[name].dataset},
        )


def draw_page(timeout: float = 120) -> AppTest:
    """The app on the Draw page; ``timeout`` per run (scoring MNIST for thresholds is slow)."""
    at = AppTest.from_file(MAIN, default_timeout=timeout).run()
    at.switch_page("../pages/draw.py").run()
    assert not at.exception, at.exception
    return at


def verdicts(at: AppTest) -> list[str]:
    return [m.value for m in at.markdown if "most probable class" in m.value]


def test_empty_canvas_prompts_instead_of_predicting(untrained):
    at = draw_page()
    assert PROMPT in at.info[0].value
    assert not verdicts(at) and not at.get("plotly_chart") and not at.error


def test_drawing_gives_prediction_and_verdict_per_model(untrained):
    at = draw_page()
    at.session_state["draw_canvas"] = canvas_state("1")
    at.run()
    assert not at.exception, at.exception
    assert [s.value for s in at.subheader][: len(MODELS)] == [REGISTRY[n].title for n in MODELS]
    assert len(verdicts(at)) == len(MODELS)
    why = [c.value for c in at.main.caption if "% of real test digits (" in c.value]
    assert len(why) == len(MODELS)  # each verdict says why, with the number and its limit
    labels = [m.label for m in at.metric]
    assert labels.count("Predictive entropy") == labels.count("Mutual information") == 3
    assert len(at.get("plotly_chart")) == len(MODELS)  # three panels each
    assert not at.info  # the prompt is gone


def test_undo_and_clear_redraw_the_canvas_with_one_stroke_less_or_none(untrained):
    at = draw_page()
    assert at.button(key="draw_undo").disabled and at.button(key="draw_clear").disabled
    state = canvas_state("1")
    strokes = [{"type": "Path", "path": [["M", 1, 2]]}, {"type": "Path", "path": [["M", 3, 4]]}]
    state["drawing"]["raw"] = {"version": "5.3.0", "objects": strokes}
    at.session_state["draw_canvas"] = state
    at.run()
    assert not at.button(key="draw_undo").disabled
    at.button(key="draw_undo").click().run()
    assert not at.exception, at.exception
    start = at.session_state["draw_canvas_start"]  # what the canvas is asked to show
    assert start == {"version": "5.3.0", "objects": strokes[:1], "redraws": 1}
    at.button(key="draw_clear").click().run()
    assert at.session_state["draw_canvas_start"]["objects"] == []
    at.button(key="draw_clear").click().run()  # a second Clear is a new request too
    assert at.session_state["draw_canvas_start"]["redraws"] == 3


def test_undo_right_after_a_stroke_takes_that_stroke_not_the_one_before(untrained):
    """A tap on Undo can reach the app before the run of the stroke it follows has drawn the
    button again: Undo removes the canvas's last stroke as sent, not as of the button's run."""
    at = draw_page()
    strokes = [{"type": "Path", "path": [["M", 1, 2]]}, {"type": "Path", "path": [["M", 3, 4]]}]
    state = canvas_state("1")
    state["drawing"]["raw"] = {"version": "5.3.0", "objects": strokes[:1]}
    at.session_state["draw_canvas"] = state
    at.run()  # the button is drawn with one stroke on the canvas
    newer = canvas_state("1")
    newer["drawing"]["raw"] = {"version": "5.3.0", "objects": strokes}
    at.session_state["draw_canvas"] = newer  # the second stroke, sent with the tap
    at.button(key="draw_undo").click().run()
    assert not at.exception, at.exception
    assert at.session_state["draw_canvas_start"]["objects"] == strokes[:1]


def test_missing_thresholds_are_computed_with_progress(untrained, monkeypatch, tmp_path):
    calls = []

    def compute(name, dataset, *, progress=None, **kwargs):
        calls.append((name, dataset, progress is not None))
        if progress:
            progress(0.5, "halfway")

    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.studies.evaluations, "evaluation_jobs", REAL_EVALUATION_JOBS)
    monkeypatch.setattr(core.studies.evaluations, "evaluate_dataset", compute)
    at = draw_page()
    at.session_state["draw_canvas"] = canvas_state("1")
    at.run()
    assert not at.exception, at.exception
    assert calls[: len(MODELS)] == [(name, "mnist", True) for name in MODELS]  # with a bar
    assert len(verdicts(at)) == len(MODELS)


def test_without_mnist_predictions_come_without_verdicts(untrained, monkeypatch):
    def unavailable(*args, **kwargs):
        raise DatasetUnavailable("MNIST not found in /nowhere")

    monkeypatch.setattr(core.studies.evaluations, "evaluation_jobs", REAL_EVALUATION_JOBS)
    monkeypatch.setattr(core.studies.evaluations, "evaluate_dataset", unavailable)
    at = draw_page()
    at.session_state["draw_canvas"] = canvas_state("0")
    at.run()
    assert not at.exception, at.exception
    assert "MNIST not found in /nowhere" in at.warning[0].value
    assert all("no verdict" in v for v in verdicts(at)) and len(verdicts(at)) == len(MODELS)


def upload_problem(at: AppTest) -> str:
    """The user-facing error of a rejected upload (the file name is shown as plain text)."""
    assert at.error and "cannot be used" in at.error[0].value
    return " ".join(t.value for t in at.text)


def test_bad_uploads_show_errors_and_the_session_recovers(untrained):
    at = draw_page()
    at.radio(key="draw_source").set_value("Upload an image").run()
    uploader = at.file_uploader[0]
    uploader.set_value(("digit.png", b"this is not an image", "image/png")).run()
    assert "not a readable PNG or JPEG" in upload_problem(at) and not verdicts(at)
    huge = png_bytes(Image.new("L", (2100, 2000)))
    at.file_uploader[0].set_value(("big.png", huge, "image/png")).run()
    assert "2100×2000" in upload_problem(at) and "megapixels" in upload_problem(at)
    assert not verdicts(at)
    blank = png_bytes(Image.new("L", (50, 50), 255))
    at.file_uploader[0].set_value(("blank.png", blank, "image/png")).run()
    assert "blank" in upload_problem(at)
    photo = png_bytes(digit_image("0", 600, ink=20, paper=230, mode="RGB"), "JPEG")
    at.file_uploader[0].set_value(("zero.jpg", photo, "image/jpeg")).run()
    assert not at.exception and not at.error
    assert len(verdicts(at)) == len(MODELS)


def png_chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def crafted_png(width: int, height: int, extra: bytes = b"") -> bytes:
    """A tiny PNG whose header claims ``width × height`` grey pixels (a decompression bomb for
    big sizes: a few hundred bytes that would decode to gigabytes)."""
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    idat = zlib.compress(b"\0" * 1024)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", header)
        + extra
        + png_chunk(b"IDAT", idat)
        + png_chunk(b"IEND", b"")
    )


def jpeg_claiming(width: int, height: int) -> bytes:
    """A small real JPEG whose frame header is rewritten to claim ``width × height``."""
    data = bytearray(png_bytes(digit_image("1", 64, mode="L"), "JPEG"))
    frame = data.index(b"\xff\xc0")
    data[frame + 5 : frame + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def corrupt_idat() -> bytes:
    """A real PNG whose compressed pixel data is scrambled (the CRC made to match)."""
    data = png_bytes(digit_image("0", 200, mode="L"))
    start = data.index(b"IDAT") + 4
    length = struct.unpack(">I", data[start - 8 : start - 4])[0]
    body = bytes(b ^ 0x5A for b in data[start : start + length])
    return data[: start - 8] + png_chunk(b"IDAT", body) + data[start + length + 4 :]


BAD_UPLOADS = {
    "empty file": (lambda: b"", "not a readable"),
    "text": (lambda: b"this is not an image", "not a readable"),
    "PNG bomb 20000x20000": (lambda: crafted_png(20_000, 20_000), "megapixels"),
    "PNG bomb 65535x65535": (lambda: crafted_png(65_535, 65_535), "megapixels"),
    "PNG over the limit": (lambda: crafted_png(3000, 3000), "3000×3000"),
    "JPEG bomb 60000x60000": (lambda: jpeg_claiming(60_000, 60_000), "megapixels"),
    "PNG header only": (lambda: crafted_png(100, 100)[:40], "not a readable"),
    "PNG with zero size": (lambda: crafted_png(0, 0), "not a readable"),
    "PNG truncated": (lambda: png_bytes(digit_image("0", 200))[:300], "not a readable"),
    "PNG scrambled pixels": (corrupt_idat, "not a readable"),
    "PNG text-chunk bomb": (
        lambda: crafted_png(
            10, 10, png_chunk(b"zTXt", b"note\0\0" + zlib.compress(b"a" * (64 << 20)))
        ),
        "not a readable",
    ),
    "JPEG truncated": (
        lambda: png_bytes(digit_image("1", 200, mode="L"), "JPEG")[:200],
        "not a readable",
    ),
    "GIF": (lambda: png_bytes(Image.new("RGB", (10, 10)), "GIF"), "Expected a PNG or JPEG"),
}


@pytest.mark.parametrize("kind", list(BAD_UPLOADS))
def test_every_decoder_error_is_one_clear_line(kind):
    make, message = BAD_UPLOADS[kind]
    with pytest.raises(ImageError, match=message) as info:
        read_image(make())
    assert "\n" not in str(info.value) and "/" not in str(info.value)  # no server paths


def test_a_decompression_bomb_upload_gets_the_clean_message(untrained):
    at = draw_page()
    at.radio(key="draw_source").set_value("Upload an image").run()
    bomb = crafted_png(20_000, 20_000)
    assert len(bomb) < 2000
    at.file_uploader[0].set_value(("bomb.png", bomb, "image/png")).run()
    assert not at.exception, at.exception
    assert "megapixels" in upload_problem(at) and not verdicts(at)


def test_read_image_inverts_dark_ink_and_reads_transparency():
    dark_on_light = read_image(png_bytes(digit_image("1", ink=0, paper=255, mode="L")))
    light_on_dark = read_image(png_bytes(digit_image("1", mode="L")))
    assert np.allclose(dark_on_light, light_on_dark, atol=1e-6)
    assert light_on_dark[140, 140] == 1.0 and light_on_dark[10, 10] == 0.0
    transparent = Image.new("RGBA", (100, 100), (255, 255, 255, 0))
    ImageDraw.Draw(transparent).line([(50, 10), (50, 90)], fill=(0, 0, 0, 255), width=8)
    ink = read_image(png_bytes(transparent))
    assert ink[50, 50] == 1.0 and ink[50, 10] == 0.0
    with pytest.raises(ImageError, match="MB"):
        read_image(b"\0" * (5 * 1024 * 1024 + 1))
    with pytest.raises(ImageError, match="PNG or JPEG"):
        read_image(png_bytes(Image.new("RGB", (10, 10)), "GIF"))


def test_random_test_digit_shows_its_true_label(untrained):
    from core.data import DatasetUnavailable, load_dataset

    try:
        _, labels = load_dataset("mnist", "test")
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")
    at = draw_page()
    at.radio(key="draw_source").set_value("MNIST test digit").run()
    at.button(key="draw_random").click().run()
    assert not at.exception, at.exception
    index = at.session_state["draw_test_index"]
    assert f"true label: {int(labels[index])}" in " ".join(m.value for m in at.markdown)
    assert len(verdicts(at)) == len(MODELS)


@pytest.mark.parametrize("digit", ["1", "0"])
def test_shipped_models_read_drawn_digits(digit):
    if not any(i.available for i in list_checkpoints()):
        pytest.skip("no trained checkpoint in checkpoints/")
    at = draw_page(timeout=600)  # the first run scores MNIST for each model's thresholds
    at.session_state["draw_canvas"] = canvas_state(digit)
    at.run()
    assert not at.exception, at.exception
    found = verdicts(at)
    assert found and all(f"most probable class: {digit}" in v for v in found), found


def test_predicting_never_changes_the_cached_models(untrained):
    at = draw_page()
    before = {n: {k: v.clone() for k, v in load_model(n).state_dict().items()} for n in MODELS}
    for digit in "10":
        at.session_state["draw_canvas"] = canvas_state(digit)
        at.run()
    for name in MODELS:
        model = load_model(name)
        assert not model.training
        after = model.state_dict()
        assert all(torch.equal(before[name][k], after[k]) for k in after), name


def test_rotation_sweep_plots_every_model(untrained):
    at = draw_page()
    at.session_state["draw_canvas"] = canvas_state("1")
    at.run()
    charts = len(at.get("plotly_chart"))
    at.toggle(key="draw_sweep").set_value(True).run()
    assert not at.exception, at.exception
    assert len(at.get("plotly_chart")) == charts + len(MODELS)
    at.slider(key="draw_sweep_steps").set_value(6).run()
    assert not at.exception
    assert any("0°, 36°, 72°, 108°, 144°, 180°" in c.value for c in at.main.caption)


def test_models_of_another_task_are_not_offered_and_the_page_says_why(untrained):
    from app.ui import MODELS_KEY

    save_checkpoint(
        "fashion_mlp",
        build_model(REGISTRY["fashion_mlp"].model),
        {"note": "test", "dataset": "fashion_mnist"},
    )
    at = AppTest.from_file(MAIN, default_timeout=120)
    at.session_state[MODELS_KEY] = [*MODELS, "fashion_mlp"]
    at.run()
    at.switch_page("../pages/draw.py").run()
    at.session_state["draw_canvas"] = canvas_state("1")
    at.run()
    assert not at.exception, at.exception
    assert [s.value for s in at.main.subheader][: len(MODELS)] == [
        REGISTRY[n].title for n in MODELS
    ]
    assert REGISTRY["fashion_mlp"].title not in [s.value for s in at.main.subheader]
    assert any("Not offered on this page" in i.value for i in at.info)
    assert REGISTRY["fashion_mlp"].title in [t.value for t in at.main.text]


def test_the_verdicts_come_right_after_the_input_before_what_the_models_see(untrained):
    """On a phone the columns stack: the verdicts must come before the preview and the pen's
    width, so that they show under the canvas without scrolling."""
    at = draw_page()
    at.session_state["draw_canvas"] = canvas_state("1")
    at.run()
    assert not at.exception, at.exception
    preview = "**What the models see** (28×28)"
    (seen,) = [c for c in at.main.columns if preview in [m.value for m in c.markdown]]
    source = at.main.columns[0]  # the input's column, the first; the preview's beside it
    texts = [m.value for m in seen.markdown]
    assert [i for i, t in enumerate(texts) if "most probable class" in t] == [0, 1, 2]
    assert texts.index(preview) == 3
    assert [s.key for s in seen.slider] == ["draw_stroke"]  # after them, not above the canvas
    assert not source.slider and len(source.button) == 2  # the canvas's Undo and Clear
