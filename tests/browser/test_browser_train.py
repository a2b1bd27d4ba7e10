"""Real-browser test of the Train page: start a job, reload mid-run, the job and its curve are
still there, and it finishes into a user checkpoint."""

from __future__ import annotations

import signal
import time
from urllib.parse import urlparse

import pytest

from core.jobs import JobStatus, JobStore, make_request
from core.jobs.running import STOPPED
from harness.browser import (
    choose,
    chromium_browsers,
    chromium_page,
    record_timings,
    require_chromium,
    serve_app,
    serve_app_process,
    server_log,
    sign_in_as_teacher,
    wait_for_polled_text,
    wait_for_script,
    wait_for_setting,
    wait_for_text,
)

pytestmark = [pytest.mark.browser, require_chromium()]


QUICK_EVAL = "train_test_subset=500&train_eval_samples=1"
"""Link settings for a quick evaluation: the curves on 500 test images, the saved test error
with one pass (the defaults evaluate 10,000 images, the last time with 100 passes)."""


def test_a_job_survives_a_reload_and_finishes(tmp_path, mnist_small):
    models = tmp_path / "models"
    env = {"BNN_MODELS_DIR": str(models), "BNN_CACHE_DIR": str(tmp_path / "cache")}
    with serve_app(env=env) as url, chromium_page() as page:
        page.goto(f"{url}/train?{QUICK_EVAL}")
        wait_for_script(page)
        epochs = page.get_by_label("Epochs")
        epochs.fill("4")
        epochs.press("Enter")
        wait_for_setting(page, "train_epochs", "4")
        page.get_by_text("Training images", exact=True).wait_for()
        sliders = [
            handle
            for handle in page.get_by_role("slider").all()
            if "Training images" in (handle.get_attribute("aria-label") or "")
        ]
        slider = sliders[0] if sliders else page.get_by_role("slider").first
        slider.focus()
        slider.press("Home")  # the smallest subset: 1,000 images
        wait_for_setting(page, "train_subset", "1000")
        page.get_by_role("textbox", name="Name of the new model").fill("browser_run")
        page.get_by_role("button", name="Start training").click()
        wait_for_text(page, "Job #1")
        wait_for_polled_text(page, "running")
        page.reload()
        wait_for_script(page)
        wait_for_text(page, "Job #1")  # re-attached after the reload
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and not (models / "browser_run.pt").is_file():
            time.sleep(1)
        assert (models / "browser_run.pt").is_file()
        wait_for_text(page, "Saved: test error")
        # The job's end triggers one full rerun of the page, during which the charts re-mount:
        # wait for that run to finish and for the curves to be drawn, instead of counting at
        # an arbitrary instant.
        wait_for_script(page)
        page.locator(".js-plotly-plot").first.wait_for()  # the curves
        wait_for_text(page, "Saved: test error")


def test_a_method_from_a_shared_link_trains_with_its_own_controls(tmp_path, mnist_small):
    """SWAG, opened from a link that sets its generated controls, trains into a model."""
    models = tmp_path / "models"
    env = {"BNN_MODELS_DIR": str(models), "BNN_CACHE_DIR": str(tmp_path / "cache")}
    link = f"train?train_kind=swag&train_rank=3&train_epochs=2&train_subset=1000&{QUICK_EVAL}"
    with serve_app(env=env) as url, chromium_page() as page:
        page.goto(f"{url}/{link}")
        wait_for_text(page, "Rank K")  # SWAG's own settings, drawn from its declaration
        wait_for_text(page, "Weight decay")
        wait_for_script(page)
        page.get_by_role("textbox", name="Name of the new model").fill("swag_run")
        page.get_by_role("button", name="Start training").click()
        wait_for_text(page, "Job #1")
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and not (models / "swag_run.pt").is_file():
            time.sleep(1)
        assert (models / "swag_run.pt").is_file()
        wait_for_text(page, "Saved: test error")
    from core.storage.checkpoints import load_checkpoint

    model, meta = load_checkpoint(models / "swag_run.pt")
    assert meta["model_config"]["kind"] == "swag" and model.config.params["rank"] == 3
    assert int(model.n_collected) == 6  # 2·K iterates in the second half


def test_a_second_browser_cannot_cancel_the_first_ones_job(tmp_path, mnist_small):
    """On a server with a teacher key, a job belongs to the browser that started it, across
    reloads; another browser sees it in the queue without a Cancel button."""
    env = {
        "BNN_MODELS_DIR": str(tmp_path / "models"),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
        "BNN_TEACHER_KEY": "s3cret",
    }
    query = "train_epochs=50&train_subset=1000&train_name=annas"
    with serve_app(env=env) as url, chromium_browsers(2) as (anna, ben):
        anna.goto(f"{url}/train?{query}")
        wait_for_script(anna)
        wait_for_setting(anna, "train_epochs", "50")
        anna.get_by_role("button", name="Start training").click()
        wait_for_text(anna, "Job #1")
        wait_for_polled_text(anna, "running")
        anna.reload()  # a new session of the same browser: still the owner
        wait_for_script(anna)
        wait_for_text(anna, "Job #1")
        cancel = anna.get_by_role("button", name="Cancel")
        cancel.wait_for()
        ben.goto(f"{url}/train")
        wait_for_script(ben)
        wait_for_text(ben, "Job #1")
        wait_for_polled_text(ben, "running")
        assert ben.get_by_role("button", name="Cancel").count() == 0
        cancel.click()
        wait_for_polled_text(anna, "Cancelled: nothing was saved.")


def test_a_stopped_server_says_what_happened_to_each_job_and_the_next_one_runs_the_queue(
    tmp_path, mnist_small
):
    """SIGTERM while a job trains and another waits: the running job is failed with one line
    (the server stops it cleanly), the waiting one stays queued, and the restarted server shows
    both and trains the waiting one."""
    db = f"sqlite:///{tmp_path / 'lab.sqlite'}"
    models = tmp_path / "models"
    env = {
        "BNN_CLASS_DB": db,
        "BNN_MODELS_DIR": str(models),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
    }
    small = {"n_train": 1000, "n_test": 200, "n_eval_samples": 1}
    store = JobStore(db)
    long = store.add(make_request("long", "mlp", epochs=100, **small))
    short = store.add(make_request("short", "mlp", epochs=1, **small))
    with serve_app_process(env=env) as (url, server), chromium_page() as page:
        page.goto(f"{url}/train")  # the first visit starts the server's workers
        wait_for_text(page, "Job #1")
        deadline = time.monotonic() + 300
        while store.get(long).fraction == 0 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert store.get(long).status is JobStatus.RUNNING and store.get(long).fraction > 0
        server.send_signal(signal.SIGTERM)
        assert server.wait(60) == 0
        log = server_log(urlparse(url).port).read_text()
    assert "terminate called" not in log, log[-2000:]
    stopped = store.get(long)
    assert stopped.status is JobStatus.FAILED and stopped.error == STOPPED
    assert store.get(short).status is JobStatus.QUEUED
    with serve_app(env=env) as url, chromium_page() as page:
        page.goto(f"{url}/train")
        wait_for_text(page, "Job #2")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and store.get(short).status.active:
            time.sleep(0.5)  # the model file is written just before the job is marked done
        assert store.get(short).status is JobStatus.DONE and (models / "short.pt").is_file()
        # The page notices the end on its next poll and reruns once (which would close an open
        # list): pick job #1 after that.
        wait_for_polled_text(page, "Saved: test error")
        wait_for_script(page)
        choose(page, page.get_by_role("combobox", name="Show job"), "#1")
        wait_for_text(page, STOPPED)


@pytest.mark.xdist_group("ray")  # the worker with the session's Ray head (test_ray_jobs)
def test_two_replicas_on_one_postgresql_database_and_ray_share_the_queue(
    tmp_path, mnist_small, postgres_server, ray_address
):
    """Two app servers (replicas) on one PostgreSQL database, one Ray head and one model
    folder: a job started in a browser on the first replica trains on a Ray worker, its live
    curve shows on the second (without Cancel, for another student); the teacher cancels it
    there and the first sees it stop; a job trained next ends as a model both replicas list."""
    from harness.cluster import new_database

    db = new_database(postgres_server)
    models = tmp_path / "models"
    env = {
        "BNN_CLASS_DB": db,
        "BNN_MODELS_DIR": str(models),
        "BNN_CACHE_DIR": str(tmp_path / "cache"),
        "BNN_TEACHER_KEY": "s3cret",
        "BNN_RAY_ADDRESS": ray_address,
    }
    store = JobStore(db)
    long = "train_epochs=200&train_subset=1000&train_name=annas_long"
    short = f"train_epochs=1&train_subset=1000&train_name=annas_short&{QUICK_EVAL}"
    with (
        serve_app_process(env=env) as (first, first_server),
        serve_app_process(env=env) as (second, second_server),
        chromium_browsers(2) as (anna, ben),
    ):
        anna.goto(f"{first}/train?{long}")
        wait_for_script(anna)
        wait_for_setting(anna, "train_epochs", "200")
        anna.get_by_role("button", name="Start training").click()
        wait_for_text(anna, "Job #1")
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and not store.get(1).steps:
            time.sleep(0.5)
        actor, _, process = store.get(1).worker.partition("@")  # ray:<actor>@host:pid:token
        assert actor.startswith("ray:bnn-job-")  # a detached Ray actor trains it
        assert int(process.split(":")[1]) not in (first_server.pid, second_server.pid)
        record_timings(ben)  # for the sign-in's press
        ben.goto(f"{second}/train")
        wait_for_text(ben, "Job #1")
        ben.locator('[data-testid="stPlotlyChart"]').first.wait_for(timeout=120_000)
        assert ben.get_by_role("button", name="Cancel").count() == 0
        sign_in_as_teacher(ben, "s3cret", polled=True)
        ben.get_by_role("button", name="Cancel").click()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and store.get(1).status.active:
            time.sleep(0.5)
        stopped = store.get(1)
        assert stopped.status is JobStatus.CANCELLED, (stopped, ben.inner_text("body")[-3000:])
        wait_for_polled_text(anna, "Cancelled: nothing was saved.")
        assert stopped.fraction < 1
        assert not (models / "annas_long.pt").exists()
        anna.goto(f"{first}/train?{short}")
        wait_for_script(anna)
        wait_for_setting(anna, "train_epochs", "1")
        anna.get_by_role("button", name="Start training").click()
        wait_for_text(anna, "Job #2")
        deadline = time.monotonic() + 400
        while time.monotonic() < deadline and store.get(2).status.active:
            time.sleep(0.5)
        assert store.get(2).status is JobStatus.DONE and (models / "annas_short.pt").is_file()
        ben.goto(f"{second}/train")
        wait_for_text(ben, "done in")
        wait_for_text(ben, "annas_short")
