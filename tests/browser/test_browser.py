"""Real-browser test: draw a "1" and a "0" on the Draw page's canvas in headless Chromium."""

from __future__ import annotations

import math
import re
import time

import pytest

from harness.browser import (
    chromium_page,
    draw,
    messages_sent,
    record_timings,
    require_chromium,
    rerun_latency_ms,
    scored_default_models,
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


def predictions(page) -> dict[str, str]:
    """Verdict text per model key, once predictions (or the no-model warning) are shown."""
    page.wait_for_selector(f"{PREDICTION}, [data-testid='stAlertContentWarning']")
    wait_for_script(page)
    return {
        el.get_attribute("class"): el.inner_text() for el in page.query_selector_all(PREDICTION)
    }


@pytest.fixture(scope="module")
def scored_models() -> list[str]:
    """See :func:`harness.browser.scored_default_models`."""
    return scored_default_models()


def test_draw_one_and_zero(scored_models):
    with serve_app() as url, chromium_page() as page:
        record_timings(page)
        page.goto(f"{url}/draw")
        page.wait_for_selector("canvas.upper-canvas")
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


CONTROL_FONTS_JS = """() => Object.entries({
    selectbox: "[data-testid='stSelectbox'] input",
    multiselect: "[data-testid='stMultiSelect'] span",
    number: "[data-testid='stNumberInputContainer'] input",
    label: "[data-testid='stWidgetLabel'] p",
    text: "[data-testid='stMain'] [data-testid='stMarkdownContainer'] p",
  }).flatMap(([kind, selector]) => Array.from(document.querySelectorAll(selector))
    .filter(el => (el.value || el.textContent).trim())
    .map(el => [kind, (el.value || el.textContent).slice(0, 30),
                parseFloat(getComputedStyle(el).fontSize)]))"""
"""The text of every select box, multiselect, number box, control label and paragraph."""


def test_presenter_mode_draws_controls_as_large_as_their_labels():
    with serve_app() as url, chromium_page(1920, 1080) as page:
        page.goto(f"{url}/regression?present=1")
        page.get_by_role("heading", name="Regression playground").wait_for()
        wait_for_script(page, timeout_ms=300_000)
        # the widgets' values can be drawn after the script's run ends: wait for every kind
        page.wait_for_function(
            f"() => new Set(({CONTROL_FONTS_JS})().map(found => found[0])).size >= 5",
            timeout=60_000,
        )
        found = page.evaluate(CONTROL_FONTS_JS)
    kinds = {kind for kind, _, _ in found}
    assert kinds == {"selectbox", "multiselect", "number", "label", "text"}, kinds
    small = [f for f in found if f[2] < 22]  # 1.2rem of presenter mode's 20 px is 24 px
    assert not small, small
