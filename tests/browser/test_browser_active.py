"""Real-browser test of the Active learning page's live run (short settings:
``tests/support/active_app.py``): both learners' strips advance together, the live area is
never dimmed for longer than a refresh while the run computes, and the finished run stays on
the page with a Run again button."""

from __future__ import annotations

import re

import pytest

from harness.browser import (
    chromium_page,
    page_text,
    press,
    record_timings,
    require_chromium,
    serve_app,
    wait_for_script,
    wait_for_text,
)

pytestmark = [pytest.mark.browser, require_chromium()]

POLL_S = 1.0  # the page's refresh period while a run computes (pages/active.py)
# Every 50 ms: the label counts in the live area's captions, and whether any of its elements is
# dimmed (a computed opacity below 0.9: Streamlit fades an element that a running script has not
# redrawn yet to 0.33, starting 0.5 s after the run began); kept in window.__live.
_WATCH = """
window.__live = [];
setInterval(() => {
  const area = document.querySelector(".st-key-active_live_area");
  if (!area) return;
  const boxes = [...area.querySelectorAll("[data-testid='stElementContainer']")];
  const dimmed = boxes.some((b) => parseFloat(getComputedStyle(b).opacity) < 0.9);
  const counts = [...area.querySelectorAll("[data-testid='stImageCaption']")]
    .map((c) => c.innerText.match(/picked these after (\\d+) labels/))
    .filter(Boolean).map((m) => Number(m[1]));
  window.__live.push({t: performance.now(), dimmed, counts});
}, 50);
"""


def dimmed_stretches(samples: list[dict]) -> list[tuple[float, float, list[int]]]:
    """Stretches of consecutive samples with the live area dimmed: (start, seconds, the label
    counts shown then), the start in seconds since the first sample."""
    stretches, first = [], None
    for sample in samples:
        if not sample["dimmed"]:
            first = None
            continue
        if first is None:
            first = sample
            stretches.append(None)
        t0 = samples[0]["t"]
        stretches[-1] = (
            round((first["t"] - t0) / 1000, 2),
            round((sample["t"] - first["t"]) / 1000, 2),
            sample["counts"],
        )
    return stretches


def test_the_live_run_advances_both_strips_together_undimmed_and_ends_with_run_again():
    with serve_app("tests/support/active_app.py") as url, chromium_page() as page:
        record_timings(page)
        page.add_init_script(_WATCH)
        page.goto(url)
        wait_for_text(page, "Watch it live")
        wait_for_script(page)
        press(page, page.get_by_role("button", name="Start a new run"))
        page.get_by_role("button", name="Stop").wait_for()
        page.get_by_role("button", name="Run again").wait_for(timeout=600_000)
        wait_for_text(page, "Finished: 5 rounds, both at 60 labels")
        wait_for_script(page)
        samples = page.evaluate("window.__live")
        shown = [s["counts"] for s in samples if s["counts"]]
        assert shown, page_text(page)
        assert [c for c in shown if len(c) != 2 or c[0] != c[1]] == []
        seen = [c[0] for c in shown]
        assert seen == sorted(seen), seen  # the strips only move forward
        # Seen growing, not only the end: a round quicker than a refresh may be skipped.
        assert len(set(seen)) >= 2, seen
        assert shown[-1] == [50, 50]  # the strips stay: the last picks, before the last round
        stretches = dimmed_stretches(samples)
        assert max((s[1] for s in stretches), default=0) <= POLL_S, stretches
        assert page.get_by_role("button", name="Run again").is_enabled()
        assert not page.get_by_role("button", name=re.compile("Resume|Stop")).count()
        assert page.locator(".st-key-active_live_area img").count() == 2
        assert page.get_by_text("Random picked these after 50 labels").is_visible()
