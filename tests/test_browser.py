"""Real-browser test: draw a "1" and a "0" on the Draw page's canvas in headless Chromium."""

from __future__ import annotations

import math
import re
import time

import pytest

from app.ui import default_models
from core.data import DatasetUnavailable
from core.storage.checkpoints import list_checkpoints
from core.studies import evaluations
from tests.browser_util import (
    chromium_page,
    messages_sent,
    record_timings,
    require_chromium,
    rerun_latency_ms,
    serve_app,
    wait_for_script,
)

pytestmark = [pytest.mark.browser, require_chromium()]

STROKES = {
    "1": [[(0.5, 0.15), (0.5, 0.85)]],
    "0": [
        [
            (0.5 + 0.22 * math.sin(t), 0.5 - 0.33 * math.cos(t))
            for t in (2 * math.pi * k / 40 for k in range(42))
        ]
    ],
}
PREDICTION = "[class*='st-key-prediction_']"


def draw(page, strokes: list[list[tuple[float, float]]]) -> None:
    """Draw polylines given in canvas fractions on the canvas, with the mouse (a move event
    about every 8 pixels, as a hand would give)."""
    box = page.locator("canvas.upper-canvas").bounding_box()
    for stroke in strokes:
        points = [
            (box["x"] + fx * box["width"], box["y"] + fy * box["height"]) for fx, fy in stroke
        ]
        page.mouse.move(*points[0])
        page.mouse.down()
        for (x0, y0), (x, y) in zip(points, points[1:], strict=False):
            page.mouse.move(x, y, steps=max(2, int(math.dist((x0, y0), (x, y)) / 8)))
        page.mouse.up()


def predictions(page) -> dict[str, str]:
    """Verdict text per model key, once predictions (or the no-model warning) are shown."""
    page.wait_for_selector(f"{PREDICTION}, [data-testid='stAlertContentWarning']")
    wait_for_script(page)
    return {
        el.get_attribute("class"): el.inner_text() for el in page.query_selector_all(PREDICTION)
    }


@pytest.fixture(scope="module")
def scored_models() -> list[str]:
    """The sidebar's default models, with their "I don't know" thresholds computed (a one-time
    MNIST scoring per checkpoint, cached on disk and shared with other tests) so that the
    browser part times the page, not that."""
    names = default_models([i.spec.name for i in list_checkpoints() if i.available])
    try:
        for name in names:
            evaluations.rejection_thresholds(name)
    except DatasetUnavailable:
        pass  # the page then shows predictions without verdicts
    return names


def test_draw_one_and_zero(scored_models):
    with serve_app() as url, chromium_page() as page:
        record_timings(page)
        page.goto(f"{url}/draw")
        page.wait_for_selector("canvas.upper-canvas", timeout=30_000)
        wait_for_script(page)
        page.get_by_text("Draw a digit on the black square").wait_for()
        for digit, strokes in STROKES.items():
            sent = messages_sent(page)
            draw(page, strokes)
            start = time.perf_counter()
            found = predictions(page)
            assert len(found) == len(scored_models)
            print(
                f"drew {digit}: predictions shown {time.perf_counter() - start:.2f} s after "
                f"mouse-up; rerun done {rerun_latency_ms(page, sent):.0f} ms after the canvas "
                f"message ({len(found)} models)"
            )
            page.get_by_text("What the models see").wait_for()
            for text in found.values():
                predicted = re.search(r"most probable class: (\d)", text)
                assert predicted, text
                assert predicted.group(1) == digit, f"drew {digit}, model said: {text}"
            page.get_by_role("button", name="Reset canvas & history").click()
            page.get_by_text("Draw a digit on the black square").wait_for()
            wait_for_script(page)
