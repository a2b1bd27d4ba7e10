"""Real-browser test of the queue's limits: on a server with a teacher key, three private windows
(separate browser contexts, each its own cookies) of one computer share one student's
allowance of 3 jobs; the 4th is refused with one line. Behind a trusted proxy, the address is the
last hop of the ``X-Forwarded-For`` header the browser's connection carried.

The server listens on this machine's network address, not loopback, so that it sees the
browsers' address as a classroom server does; its queue's jobs wait until cancelled
(``tests/support/queue_app.py``), so they stay active without training."""

from __future__ import annotations

import pytest

from core.jobs import JobStore
from harness.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    chromium_browsers,
    network_address,
    page_text,
    press,
    record_timings,
    require_chromium,
    serve_app,
    wait_for_script,
    wait_for_text,
)
from tests.unit.test_jobs import wait_for

pytestmark = [pytest.mark.browser, require_chromium()]


def submit(page, name: str, shown) -> None:
    """Type a model name and press Start until the page shows ``shown`` (a locator).

    A press that reached the server shows the new job or a refusal; one that a polling page's
    rerun swallowed shows nothing, and is made again (the same name again could only be refused,
    never queued twice).
    """
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    for _ in range(3):
        wait_for_script(page)
        page.get_by_role("textbox", name="Name of the new model").fill(name)
        press(page, page.get_by_role("button", name="Start training"))
        try:
            shown.filter(visible=True).first.wait_for(timeout=60_000)
            return
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"the page never showed the outcome of Start:\n{page_text(page)}")


def test_private_windows_of_one_computer_get_three_jobs_in_all(tmp_path):
    db = f"sqlite:///{tmp_path / 'lab.sqlite'}"
    env = {
        "BNN_CLASS_DB": db,
        "BNN_MODELS_DIR": str(tmp_path / "models"),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
        "BNN_TEACHER_KEY": "s3cret",
    }
    address = network_address()
    small = "train_kind=mlp&train_epochs=1&train_subset=1000"
    with (
        serve_app("tests/support/queue_app.py", env=env, address=address) as url,
        chromium_browsers(3) as windows,
    ):
        for window in windows:  # all open before any job: no page polls the queue yet
            record_timings(window)
            window.goto(f"{url}/?{small}")
            wait_for_text(window, "No training job yet.")
        for n, window in enumerate(windows):
            submit(window, f"window{n}", window.get_by_text(f"Job #{n + 1}"))
        room = windows[2].get_by_text("jobs queued or running; the class's queue has room")
        assert room.inner_text().startswith("You have 3 of 3 jobs"), page_text(windows[2])
        first = windows[0]
        refusal = first.get_by_text("You have 3 jobs queued or running (from this browser")
        submit(first, "one_more", refusal.or_(first.get_by_text("Job #4")))
        assert refusal.count() == 1, page_text(first)
        errors = first.get_by_test_id("stAlertContentError")
        assert errors.count() == 1
        assert "\n" not in errors.inner_text().strip()
        jobs = JobStore(db).jobs()
        assert [j.request.name for j in jobs] == ["window0", "window1", "window2"]
        assert len({j.owner for j in jobs}) == 3  # three browsers…
        rows = JobStore(db).db.rows("SELECT DISTINCT address FROM jobs")
        assert rows == [(address,)]  # …one computer


def test_behind_a_trusted_proxy_a_student_is_the_last_forwarded_hop(tmp_path):
    """With ``BNN_TRUSTED_PROXY=1`` the address recorded with a job is the last entry of the
    ``X-Forwarded-For`` header the browser's connection carried (as a proxy adds it), not the
    entries before it, which the client writes itself."""
    from playwright.sync_api import sync_playwright

    db = f"sqlite:///{tmp_path / 'lab.sqlite'}"
    env = {
        "BNN_CLASS_DB": db,
        "BNN_MODELS_DIR": str(tmp_path / "models"),
        "BNN_TRUSTED_PROXY": "1",
    }
    forwarded = {"X-Forwarded-For": "6.6.6.6, 198.51.100.23"}
    with serve_app("tests/support/queue_app.py", env=env) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            window = browser.new_context(extra_http_headers=forwarded).new_page()
            record_timings(window)
            window.goto(f"{url}/?train_kind=mlp&train_epochs=1&train_subset=1000")
            wait_for_text(window, "No training job yet.")
            submit(window, "proxied", window.get_by_text("Job #1"))
        finally:
            browser.close()
    assert JobStore(db).db.rows("SELECT name, address FROM jobs") == [("proxied", "198.51.100.23")]


def test_the_class_cap_holds_for_ten_students_pressing_start_at_once(tmp_path):
    """Ten browsers of ten computers (behind a trusted proxy, each its own forwarded address)
    press Start together on a class whose queue holds 4 students' jobs: 4 are queued, the other
    6 students each read the one-line refusal."""
    from playwright.sync_api import sync_playwright

    db = f"sqlite:///{tmp_path / 'lab.sqlite'}"
    env = {
        "BNN_CLASS_DB": db,
        "BNN_MODELS_DIR": str(tmp_path / "models"),
        "BNN_TRUSTED_PROXY": "1",
        "BNN_QUEUE_JOBS": "4",
    }
    full = "The class's queue is full"
    with serve_app("tests/support/queue_app.py", env=env) as url, sync_playwright() as pw:
        browser = pw.chromium.launch(
            executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS
        )
        try:
            windows = []
            for n in range(10):
                hop = {"X-Forwarded-For": f"198.51.100.{n + 1}"}
                window = browser.new_context(extra_http_headers=hop).new_page()
                window.goto(f"{url}/?train_kind=mlp&train_epochs=1&train_subset=1000")
                windows.append(window)
            for n, window in enumerate(windows):  # all open before any job exists
                wait_for_text(window, "No training job yet.")
                window.get_by_role("textbox", name="Name of the new model").fill(f"student{n}")
            for window in windows:  # the ten presses, without waiting between them
                window.get_by_role("button", name="Start training").click()
            store = JobStore(db)

            def answered() -> list[int]:
                queued = {j.request.name for j in store.jobs()}
                return [
                    n
                    for n, window in enumerate(windows)
                    if f"student{n}" in queued or window.get_by_text(full).count()
                ]

            wait_for(lambda: len(answered()) == 10, timeout=180)
            refused = [n for n, window in enumerate(windows) if window.get_by_text(full).count()]
        finally:
            browser.close()
    jobs = store.jobs()
    assert len(jobs) == 4, [j.request.name for j in jobs]
    assert len(set(store.db.rows("SELECT address FROM jobs"))) == 4  # four computers
    assert len(refused) == 6 and {f"student{n}" for n in refused}.isdisjoint(
        j.request.name for j in jobs
    )
