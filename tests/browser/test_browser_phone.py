"""A student on a phone (390 × 844, touch only, in a real Chromium): draws a "1" with a finger,
reads the verdict right under the canvas without scrolling, scrolls the page with a swipe in the
gutter beside the canvas (which draws nothing), undoes a stroke with a large button, sends the
drawing to the class, and scrolls the page with a swipe that starts on a chart (the chart does
not take the swipe); nothing is wider than the screen and the controls are a finger wide."""

from __future__ import annotations

import pytest

from core.classroom.store import ClassStore
from core.storage.database_errors import DB_ENV
from harness.browser import (
    PHONE,
    choose_class_label,
    chromium_page,
    messages_sent,
    press,
    record_timings,
    require_chromium,
    scored_default_models,
    serve_app,
    swipe_up,
    touch_draw,
    wait_for_enabled,
    wait_for_script,
    wait_for_text,
)

pytestmark = [pytest.mark.browser, require_chromium()]

CLASS = "phone-test"
ONE = [[(0.5, 0.15), (0.5, 0.85)]]
SCRIBBLE = [[(0.2, 0.9), (0.8, 0.9)]]
PANEL = "Send my drawing to the class"
FINGER_PX = 44
HEIGHT = PHONE["viewport"]["height"]
PROMPT = "Draw a digit on the black square."


SCROLLED = (
    "Math.max(window.scrollY, ...[...document.querySelectorAll("
    "'[data-testid=stMain], [data-testid=stAppViewContainer]')].map(e => e.scrollTop))"
)
"""How far the app's main area is scrolled (Streamlit scrolls it, not the window)."""


VERDICT = "[class*='st-key-prediction_']"
CHART = "[data-testid='stPlotlyChart']"
BOXES_JS = """(selectors) => {
  const rects = selectors.map(s => document.querySelector(s)?.getBoundingClientRect());
  if (!rects.every(r => r && r.height > 0)) return false;
  return rects.map(r => ({x: r.x, y: r.y, width: r.width, height: r.height}));
}"""


def drawn_boxes(page, *selectors: str) -> list[dict]:
    """The first element of each selector, once all are drawn, read in one step of the page
    (a rerun may replace an element between two separate reads); viewport coordinates."""
    return page.wait_for_function(BOXES_JS, arg=list(selectors)).json_value()


def test_a_phone_draws_with_a_finger_undoes_sends_and_scrolls_past_charts(tmp_path, monkeypatch):
    scored_default_models()
    database = f"sqlite:///{tmp_path / 'class.sqlite'}"
    monkeypatch.setenv(DB_ENV, database)
    with serve_app(env={DB_ENV: database}) as url, chromium_page(phone=True) as page:
        record_timings(page)
        page.goto(f"{url}/draw?class={CLASS}")
        page.wait_for_selector("canvas.upper-canvas")
        wait_for_script(page)
        touch_draw(page, ONE)
        page.wait_for_selector(VERDICT)
        wait_for_script(page)
        # The first verdict shows without scrolling, above what the models see.
        (verdict,) = drawn_boxes(page, VERDICT)
        assert page.evaluate(f"() => {SCROLLED}") == 0
        assert verdict["y"] >= 0 and verdict["y"] + verdict["height"] <= HEIGHT

        # A swipe in the gutter beside the canvas scrolls the page and draws nothing.
        canvas = page.locator("canvas.upper-canvas").bounding_box()
        assert canvas["x"] + canvas["width"] + FINGER_PX <= PHONE["viewport"]["width"]
        sent = messages_sent(page)
        gutter = (canvas["x"] + canvas["width"] + PHONE["viewport"]["width"]) / 2
        swipe_up(page, gutter, canvas["y"] + canvas["height"] * 0.8, 250)
        page.wait_for_function(f"() => {SCROLLED} > 100", timeout=10_000)
        wait_for_script(page)
        assert messages_sent(page) == sent  # the canvas sent no stroke
        page.evaluate(
            "() => { window.scrollTo(0, 0); document.querySelectorAll("
            "'[data-testid=stMain], [data-testid=stAppViewContainer]')"
            ".forEach(e => { e.scrollTop = 0; }); }"
        )
        sent = messages_sent(page)
        touch_draw(page, SCRIBBLE)
        page.wait_for_function(f"() => window.__sent.length > {sent}")  # the canvas sent it
        wait_for_script(page)
        width = PHONE["viewport"]["width"]
        assert page.evaluate("() => document.documentElement.scrollWidth") <= width

        buttons = drawn_boxes(page, ".st-key-draw_undo button", ".st-key-draw_clear button")
        assert all(button["height"] >= FINGER_PX for button in buttons)
        undo = page.locator(".st-key-draw_undo button")
        clear = page.locator(".st-key-draw_clear button")
        undo.tap()  # the scribble goes; the "1" stays and is read again
        wait_for_script(page)
        page.wait_for_selector(VERDICT)
        assert page.get_by_text(PROMPT).count() == 0

        # The first verdict comes before any chart, right under the canvas and its buttons.
        verdict, chart = drawn_boxes(page, VERDICT, CHART)
        assert verdict["y"] < chart["y"]

        page.wait_for_function(  # in one step of the page: a rerun may replace the chart
            "(s) => { const e = document.querySelector(s); e?.scrollIntoView({block: 'center'});"
            " return !!e; }",
            arg=CHART,
        )
        (box,) = drawn_boxes(page, CHART)
        before = page.evaluate(f"() => {SCROLLED}")
        swipe_up(page, box["x"] + box["width"] / 2, box["y"] + box["height"] / 2, 300)
        # The page scrolled: the chart did not take the swipe.
        page.wait_for_function(f"() => {SCROLLED} > {before + 100}", timeout=10_000)

        page.get_by_text(PANEL).tap()
        wait_for_text(page, f"Class code in use: {CLASS}")
        choose_class_label(page, "1", tap=True)
        submit = page.get_by_role("button", name="Submit")
        submit.wait_for(state="visible")
        assert submit.bounding_box()["height"] >= FINGER_PX
        wait_for_enabled(page, "Submit")
        press(page, submit, tap=True)
        wait_for_text(page, f"Sent as a 1. Class {CLASS} now has 1 drawing(s).")
        assert ClassStore().count(CLASS) == 1

        clear.tap()
        wait_for_text(page, PROMPT)
