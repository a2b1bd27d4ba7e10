"""A class in real browsers: every student opens the class's link and sends one drawing."""

from __future__ import annotations

from collections.abc import Sequence

from harness.browser import send_to_class

Strokes = list[list[tuple[float, float]]]
"""A drawing as strokes of (x, y) points, each in [0, 1] of the canvas."""


def students_send(
    pages: Sequence,
    link: str,
    drawings: Sequence[tuple[Strokes, int]],
    code: str,
    *,
    phones: Sequence = (),
) -> None:
    """Open ``link`` in every student's page, then have each send its drawing to class ``code``.

    All pages load before the first drawing is sent, so the students' pages start together as
    in a lesson. Call :func:`harness.browser.record_timings` on the pages first if their times
    are wanted.

    Args:
        pages: The students' Playwright pages, one per drawing.
        link: The Draw page with ``?class=code`` (and whatever else the lesson's link sets).
        drawings: ``(strokes, digit)`` of each student, in the order of ``pages``.
        code: The class code the page shows in use.
        phones: Those of ``pages`` that draw and press with a finger.
    """
    for page in pages:
        page.goto(link)
    for page in pages:
        page.wait_for_selector("canvas.upper-canvas")
    for page, (strokes, label) in zip(pages, drawings, strict=True):
        send_to_class(page, strokes, label, code, tap=any(page is p for p in phones))
