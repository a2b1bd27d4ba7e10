"""Presenter mode on a 1920 × 1080 projector, in a real Chromium: every page opened with
``?present=1`` shows its tables as static tables (not grids drawn on a canvas at a fixed small
size), every table cell and every chart's legend and tick label at 18 px or more, and no table
wider than its place on the page (clipped at the right)."""

from __future__ import annotations

import uuid

import pytest
import torch

from app.main import PAGES
from core.classroom.store import ClassStore
from core.storage.database_errors import DB_ENV
from harness.browser import (
    chromium_page,
    draw,
    require_chromium,
    scored_default_models,
    serve_app,
    wait_for_script,
)

pytestmark = [pytest.mark.browser, require_chromium()]

SMALLEST_PX = 18
WIDTH, HEIGHT = 1920, 1080
CHARTS = {"": 0, "draw": 0, "train": 0, "classroom": 0}
"""Pages whose default view shows no chart (others show at least one)."""
ONE = [[(0.5, 0.15), (0.5, 0.85)]]
CLASS = "projector"

READY_JS = """(charts) => {
  const idle = document.querySelector("[data-testid='stApp'][data-test-script-state='notRunning']");
  const shown = [...document.querySelectorAll("[data-testid='stPlotlyChart']")];
  return !!idle && !!document.querySelector('h1') && shown.length >= charts
    && shown.every(c => c.querySelector('.main-svg .infolayer'));
}"""
"""The page's run is over and plotly has drawn every chart of it."""

MEASURE_JS = """(smallest) => {
  const px = e => parseFloat(getComputedStyle(e).fontSize);
  const main = document.querySelector("[data-testid='stMain']");
  const texts = [
    ...[...main.querySelectorAll('td, th')].map(e => ['table cell', e]),
    ...[...main.querySelectorAll('.legendtext')].map(e => ['legend', e]),
    ...[...main.querySelectorAll("g[class$='tick'] text")].map(e => ['tick', e]),
  ].filter(([, e]) => e.textContent.trim());
  const clipped = [...main.querySelectorAll("[data-testid='stTable']")]
    .filter(t => t.querySelector('table').getBoundingClientRect().right
      > t.getBoundingClientRect().right + 1)
    .map(t => t.innerText.slice(0, 60));
  return {
    small: texts.filter(([, e]) => px(e) < smallest)
      .map(([kind, e]) => `${kind} "${e.textContent.slice(0, 30)}" at ${px(e)} px`),
    texts: texts.length,
    grids: main.querySelectorAll("[data-testid='stDataFrame']").length,
    clipped,
  };
}"""


def measure(page, charts: int) -> dict:
    """Wait until the page is drawn, then read its texts' sizes, grids and clipped tables."""
    page.wait_for_function(READY_JS, arg=charts)
    return page.evaluate(MEASURE_JS, SMALLEST_PX)


def send_drawings(labels: list[int]) -> None:
    """The class's drawings: a bar each (its brightness varies), labelled ``labels``."""
    store = ClassStore()
    for i, label in enumerate(labels):
        image = torch.zeros(28, 28)
        image[4:24, 11 + i % 4 : 17 + i % 4] = 0.4 + 0.05 * i
        store.submit(image, label, CLASS, str(uuid.uuid4()))


def test_every_page_in_presenter_mode_reads_at_18_px_or_more(tmp_path, monkeypatch):
    scored_default_models()
    database = f"sqlite:///{tmp_path / 'class.sqlite'}"
    monkeypatch.setenv(DB_ENV, database)
    send_drawings([1, 1, 7, 4, 1, 0, 9, 1])
    paths = [p.path.stem for p in PAGES]
    assert "draw" in paths and paths[0] == "home"
    problems, texts = {}, 0
    with serve_app(env={DB_ENV: database}) as url, chromium_page(WIDTH, HEIGHT) as page:
        for name in ["", *paths[1:]]:
            page.goto(f"{url}/{name}?present=1")
            found = measure(page, CHARTS.get(name, 1))
            texts += found["texts"]
            if found["small"] or found["grids"] or found["clipped"]:
                problems[name or "home"] = found
        # The Draw page's charts: a drawn "1", turned through the rotation sweep.
        page.goto(f"{url}/draw?present=1&draw_sweep=1&draw_sweep_steps=4")
        page.wait_for_selector("canvas.upper-canvas")
        wait_for_script(page)
        draw(page, ONE)
        page.wait_for_selector("[class*='st-key-prediction_']")
        found = measure(page, 2)
        texts += found["texts"]
        legends = page.locator(".legendtext").filter(has_text="per network").count()
        assert legends >= 1  # the sweep was drawn with its classes' legend
        if found["small"] or found["grids"] or found["clipped"]:
            problems["draw (a drawn 1)"] = found
        # The Class page with the class's drawings: its table and reliability diagrams.
        page.goto(f"{url}/classroom?present=1&class={CLASS}")
        found = measure(page, 2)
        texts += found["texts"]
        assert page.locator("[data-testid='stTable'] td").count() >= 3  # a row per model
        if found["small"] or found["grids"] or found["clipped"]:
            problems["classroom (8 drawings)"] = found
    assert texts > 500  # the pages' tables and charts were there to be measured
    assert not problems, problems
