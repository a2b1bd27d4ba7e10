"""Real-browser test of the class's drawings: draw a "1" on the Draw page opened with
``?class=...``, send it to the class, see it in the Class page's gallery, sign in as the
teacher, download it (the zip is built when the button is clicked) and clear the class while
the page refreshes live.

Needs the panel wired into the Draw page (``submission_panel(x[0])`` under the predictions) and
the Class page in ``app.main.PAGES`` (``classroom.py``)."""

from __future__ import annotations

import zipfile

import pytest

from core.classroom.store import ClassStore
from core.storage.database_errors import DB_ENV
from harness.browser import (
    choose_class_label,
    chromium_browsers,
    chromium_page,
    draw_until_sent,
    record_timings,
    require_chromium,
    scored_default_models,
    serve_app,
    sign_in_as_teacher,
    wait_for_enabled,
    wait_for_script,
    wait_for_text,
)
from tests.conftest import TEACHER_KEY

pytestmark = [pytest.mark.browser, require_chromium()]

CLASS = "browser-test_1"
ONE = [[(0.5, 0.15), (0.5, 0.85)]]
PANEL = "Send my drawing to the class"


@pytest.fixture(scope="module")
def scored_models() -> list[str]:
    """See :func:`harness.browser.scored_default_models`."""
    return scored_default_models()


def send_a_one(page, url: str) -> None:
    """Draw a "1" on the Draw page of ``url`` opened with the class code and send it."""
    record_timings(page)
    page.goto(f"{url}/draw?class={CLASS}")
    page.wait_for_selector("canvas.upper-canvas")
    draw_until_sent(page, ONE)
    shown = page.wait_for_selector(
        "[class*='st-key-prediction_'], [data-testid='stAlertContentWarning'], "
        "[data-testid='stException']"
    )
    assert shown.get_attribute("data-testid") != "stException", shown.inner_text()
    wait_for_script(page)
    page.get_by_text(PANEL).click()
    wait_for_text(page, f"Class code in use: {CLASS}")
    choose_class_label(page, "1")
    submit = page.get_by_role("button", name="Submit")
    submit.wait_for()
    wait_for_enabled(page, "Submit")
    submit.click()
    wait_for_text(page, f"Sent as a 1. Class {CLASS} now has 1 drawing(s).")


def test_draw_submit_and_see_it_in_the_class_gallery(scored_models, tmp_path, monkeypatch):
    database = tmp_path / "class.sqlite"
    monkeypatch.setenv(DB_ENV, f"sqlite:///{database}")
    with serve_app(env={DB_ENV: f"sqlite:///{database}"}) as url, chromium_page() as page:
        send_a_one(page, url)
        submit = page.get_by_role("button", name="Submit")
        submit.click()  # a second click stores nothing more
        wait_for_text(page, "Already sent as a 1")
        assert ClassStore().count(CLASS) == 1

        page.goto(f"{url}/classroom?class={CLASS}")
        wait_for_text(page, f"1 drawing(s) in class {CLASS}")
        gallery = page.locator("[class*='st-key-class_gallery'] img")
        gallery.first.wait_for()
        assert gallery.count() == 1
        row = ClassStore().drawings(CLASS)
        assert row.labels.tolist() == [1]
        wait_for_text(page, f"1 · #{row.ids[0]}")
        wait_for_text(page, "How the models do on the class's drawings")

        assert page.get_by_text("Teacher: export or clear").count() == 0  # not a student's
        sign_in_as_teacher(page, TEACHER_KEY)
        page.get_by_text("Teacher: export or clear").click()  # the zip is built on the click
        with page.expect_download() as download:
            page.get_by_role("button", name="Download CSV + PNG (zip)").click()
        assert download.value.suggested_filename == f"class-{CLASS}-drawings.zip"
        with zipfile.ZipFile(download.value.path()) as archive:
            assert archive.namelist() == ["drawings.csv", f"png/{CLASS}-{row.ids[0]:06d}-1.png"]

        page.get_by_text("Yes, delete the 1 drawing(s)").click()  # while the page refreshes live
        wait_for_enabled(page, "Clear the class")
        wait_for_script(page)
        page.get_by_role("button", name="Clear the class").click()
        wait_for_text(page, f"Deleted 1 drawing(s) of {CLASS}.")
        wait_for_text(page, f"No drawings in class {CLASS} yet")
        assert ClassStore().count(CLASS) == 0


def test_a_drawing_sent_on_one_replica_shows_in_the_gallery_on_the_other(
    scored_models, postgres_server
):
    """Two app servers (replicas) on one PostgreSQL database: a student sends a drawing through
    the first, the teacher's gallery on the second shows it, stored once."""
    from harness.cluster import new_database

    database = new_database(postgres_server)
    env = {DB_ENV: database}
    with (
        serve_app(env=env) as first,
        serve_app(env=env) as second,
        chromium_browsers(2) as (student, teacher),
    ):
        teacher.goto(f"{second}/classroom?class={CLASS}")
        wait_for_text(teacher, f"No drawings in class {CLASS}")
        send_a_one(student, first)
        row = ClassStore(database).drawings(CLASS)
        assert row.labels.tolist() == [1]
        teacher.reload()
        wait_for_text(teacher, f"1 drawing(s) in class {CLASS}")
        wait_for_text(teacher, f"1 · #{row.ids[0]}")
        gallery = teacher.locator("[class*='st-key-class_gallery'] img")
        gallery.first.wait_for()
        assert gallery.count() == 1
