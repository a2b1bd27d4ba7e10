"""Headless tests of the Train page: a tiny real job (2,000 images × 1 epoch) shows progress
and ends as a user checkpoint in the model lists; cancel leaves no checkpoint; a second job
queues behind the first; a new session re-attaches; rename, delete and bad names.

The queue's runner is the real :func:`core.jobs.training.run_training`, paused at its first
progress report until the test has looked at the page, so what the page shows mid-run is
checked deterministically."""

from __future__ import annotations

import os
import re
import threading
import time
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.jobs import (
    JobQueue,
    JobStatus,
    make_request,
    run_training,
    set_training_queue,
    training_queue,
)
from core.methods import METHODS
from core.storage.user_models import list_user_checkpoints

PAGE = "../../pages/train.py"
MAIN = str(Path(__file__).resolve().parents[2] / "app" / "main.py")
TINY = {
    "train_kind": "mlp",
    "train_dataset": "mnist",
    "train_epochs": 1,
    "train_subset": 2_000,
    "train_test_subset": 500,
    "train_eval_samples": 1,
}


class Paused:
    """``run_training`` that stops at its first progress report until released.

    :meth:`wait` returns once that report has reached the database (the worker reports every
    ``REPORT_S``), so the page shows it.
    """

    def __init__(self) -> None:
        self.reached = threading.Event()
        self.release = threading.Event()

    def __call__(self, request, *, progress, **kwargs):
        def held(fraction: float, message: str) -> None:
            progress(fraction, message)
            if fraction > 0 and not self.release.is_set():
                self.reached.set()
                assert self.release.wait(120), "the test never released the job"

        return run_training(request, progress=held, **kwargs)

    def wait(self, job_id: int) -> bool:
        if not self.reached.wait(120):
            return False
        wait_until(lambda: training_queue().get(job_id).fraction > 0)
        return True


@pytest.fixture
def paused(mnist_small, tmp_path, monkeypatch):
    """A fresh training queue (one worker) with a :class:`Paused` runner; empty user folder."""
    monkeypatch.setenv("BNN_MODELS_DIR", str(tmp_path / "models"))
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    runner = Paused()
    queue = JobQueue(workers=1, threads=1, runner=runner)
    old = set_training_queue(queue)
    yield runner
    runner.release.set()
    queue.shutdown()
    set_training_queue(old)


def page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in {**TINY, **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def start(at: AppTest, name: str) -> int:
    """Type ``name``, press Start; returns the new job's id."""
    at.text_input(key="train_name").set_value(name)
    at.button(key="train_start").click().run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return max(j.id for j in training_queue().jobs())


def watch_list(at: AppTest):
    """The "Show job" list (its key changes each time the page changes the watched job)."""
    (found,) = [s for s in at.selectbox if s.label == "Show job"]
    return found


def job_table(at: AppTest):
    return at.dataframe[0].value.set_index("name")


def wait_until(predicate, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_tiny_job_shows_progress_then_appears_in_the_model_lists(paused):
    at = page()
    assert "No training job yet." in [c.value for c in at.caption]
    job_id = start(at, "tiny")
    assert paused.wait(job_id)
    at.run()
    assert not at.exception, at.exception
    assert job_table(at).loc["tiny", "status"].startswith("running, ")
    (bar,) = at.get("progress")
    assert 0 < bar.proto.value < 100 and "ETA" in bar.proto.text
    assert at.button(key=f"train_cancel_{job_id}")
    paused.release.set()
    job = training_queue().wait(job_id, 120)
    assert job.status is JobStatus.DONE and job.path.name == "tiny.pt"
    at.run()
    assert not at.exception, at.exception
    assert job_table(at).loc["tiny", "status"].startswith("done in ")
    assert "tiny (user-trained)" in [t.value for t in at.text]
    assert len(at.get("plotly_chart")) == 2  # objective/NLL and errors (an MLP has no KL)
    mine = at.dataframe[1].value.set_index("name")
    assert mine.loc["tiny", "task"] == "MNIST" and mine.loc["tiny", "epochs"] == 1
    assert re.fullmatch(r"\d\d:\d\d", mine.loc["tiny", "trained"])  # today: the time only
    assert re.fullmatch(r"CPU, \d+ threads?", mine.loc["tiny", "device"])  # not "cpu (1 threads)"
    assert mine.loc["tiny", "test error"] == f"{job.metrics['test_error']:.2%}"
    app = AppTest.from_file(MAIN, default_timeout=120).run()
    assert not app.exception, app.exception
    assert "tiny (user-trained)" in app.sidebar.multiselect[0].options


def test_a_late_value_of_the_list_drawn_before_the_press_leaves_the_page_on_the_new_job(paused):
    """A polling rerun can reach the server after the press's run with the "Show job" value the
    browser held before it (it had not drawn the new list yet). That value is not the
    visitor's pick: the page stays on the job just started."""
    queue = training_queue()
    first = queue.store.add(make_request("a", "mlp", epochs=1, n_train=1000, n_test=200))
    queue.resume()
    assert paused.wait(first)
    at = page()
    assert watch_list(at).value == first  # nothing of this visitor's yet: the running job
    at.text_input(key="train_name").set_value("mine")
    before_press = at._tree.get_widget_states()  # what the browser sends until it redraws
    mine = start(at, "mine")
    assert watch_list(at).value == mine
    at._run(before_press)  # the polling rerun with the list's old value
    assert not at.exception, at.exception
    at.run()
    assert watch_list(at).value == mine
    watch_list(at).set_value(first).run()  # the old value, seconds after the press
    at.run()
    assert watch_list(at).value == mine
    assert any(m.value.startswith(f"**Job #{mine}**") for m in at.markdown)
    paused.release.set()
    assert queue.wait(mine, 120).status is JobStatus.DONE


def test_until_a_job_is_picked_the_page_watches_the_running_one_as_the_queue_moves(paused):
    queue = training_queue()  # its workers start at the first submission or resume
    small = {"epochs": 1, "n_train": 1000, "n_test": 200, "n_eval_samples": 1}
    first, second = (queue.store.add(make_request(n, "mlp", **small)) for n in ("a", "b"))
    at = page()  # both queued, none running: the newest is watched
    assert watch_list(at).value == second
    queue.resume()  # a worker claims the first one (held once it has started)
    assert paused.wait(first)
    at.run()
    assert not at.exception, at.exception
    assert watch_list(at).value == first
    assert any(m.value.startswith(f"**Job #{first}**") for m in at.markdown)
    watch_list(at).set_value(second).run()
    at.run()
    assert watch_list(at).value == second  # the visitor's pick stays
    paused.release.set()
    assert queue.wait(second, 120).status is JobStatus.DONE


def test_cancel_leaves_no_checkpoint(paused, tmp_path):
    at = page(train_kind="bbb")
    job_id = start(at, "doomed")
    assert paused.wait(job_id)
    at.run()
    at.button(key=f"train_cancel_{job_id}").click().run()
    assert not at.exception, at.exception
    assert job_table(at).loc["doomed", "status"] in ("cancelling…", "cancelled, nothing saved")
    paused.release.set()
    assert training_queue().wait(job_id, 120).status is JobStatus.CANCELLED
    at.run()
    assert "Cancelled: nothing was saved." in [i.value for i in at.info]
    folder = tmp_path / "models"
    assert not folder.exists() or not list(folder.iterdir())  # no checkpoint, no temporary
    assert list_user_checkpoints() == []


def test_runs_of_one_lesson_are_named_by_what_differs_and_dated_for_people(paused):
    queue = training_queue()
    small = {"epochs": 3, "n_train": 10_000, "n_test": 200, "n_eval_samples": 1}
    for name, beta in (("b1", 1.0), ("b01", 0.1)):  # a student may have three jobs
        queue.store.add(make_request(name, "bbb", beta=beta, **small))
    queue.store.add(make_request("other", "mlp", **small))
    at = page()
    what = job_table(at)["what"]
    line = "Bayes by Backprop (BBB) on MNIST, 3 epochs × 10,000 images"
    assert what["b1"] == f"{line} · KL weight β = 1"
    assert what["b01"] == f"{line} · KL weight β = 0.1"
    assert "·" not in what["other"]  # the only run of its line: nothing to tell apart
    texts = [e.value for kind in ("markdown", "caption", "info") for e in at.get(kind)]
    shown = " ".join(texts + [d.value.to_string() for d in at.dataframe])
    assert not re.search(r"\dT\d\d:|\bNone\b|\bnull\b|\.json|issue", shown)


def test_second_job_queues_behind_the_first_and_a_new_session_reattaches(paused):
    at = page()
    first = start(at, "first")
    assert paused.wait(first)
    second = start(at, "second")
    at.run()
    table = job_table(at)
    assert table.loc["first", "status"].startswith("running")
    assert table.loc["second", "status"].startswith("queued, position 1, starts ")
    (bar,) = at.get("progress")  # this session watches its latest job: the queued one
    assert bar.proto.text.startswith("waiting, position 1 in the queue (0 jobs ahead, ")
    reopened = page()  # a new tab: same server, same queue
    assert list(job_table(reopened).index) == ["second", "first"]
    watch_list(reopened).set_value(first).run()
    assert "ETA" in reopened.get("progress")[0].proto.text
    at.button(key=f"train_cancel_{second}").click().run()
    assert training_queue().get(second).status is JobStatus.CANCELLED
    assert training_queue().get(second).started is None  # it never ran
    paused.release.set()
    assert training_queue().wait(first, 120).status is JobStatus.DONE
    assert [i.spec.name for i in list_user_checkpoints()] == ["user:first"]


def test_rename_and_delete_from_the_page(paused):
    paused.release.set()
    at = page()
    job_id = start(at, "keep")
    assert training_queue().wait(job_id, 120).status is JobStatus.DONE
    at.run()
    at.text_input(key="train_new_name").set_value("kept")
    at.button(key="train_rename").click().run()
    assert not at.exception, at.exception
    assert "Renamed keep to kept." in [t.value for t in at.text]
    assert [i.spec.name for i in list_user_checkpoints()] == ["user:kept"]
    assert at.button(key="train_delete").disabled  # not without confirming
    at.checkbox(key="train_delete_confirm").check().run()
    at.button(key="train_delete").click().run()
    assert "Deleted kept." in [t.value for t in at.text]
    assert list_user_checkpoints() == []
    assert "No user-trained model yet." in [c.value for c in at.caption]


def test_delete_right_after_a_new_pick_deletes_the_picked_model(paused):
    """A click on Delete can reach the app before the run of the pick it follows: Delete acts
    on the model picked when it was pressed, never on the one picked before."""
    paused.release.set()
    at = page()
    for name in ("alpha", "beta"):
        assert training_queue().wait(start(at, name), 120).status is JobStatus.DONE
    at.run()
    pick = at.selectbox(key="train_manage_model")
    other = next(name for name in pick.options if name != pick.value)
    at.checkbox(key="train_delete_confirm").check().run()
    at.selectbox(key="train_manage_model").set_value(other)  # sent with the click, one run
    at.button(key="train_delete").click().run()
    assert not at.exception, at.exception
    assert f"Deleted {other}." in [t.value for t in at.text]
    assert [i.spec.name for i in list_user_checkpoints()] == [f"user:{pick.value}"]


def test_bad_name_is_refused_in_plain_text(paused):
    at = page()
    at.text_input(key="train_name").set_value("**bold** name")
    at.button(key="train_start").click().run()
    assert not at.exception, at.exception
    assert at.error[0].value == "The job was not started."
    assert any("'**bold** name' is not a valid model name" in t.value for t in at.text)
    assert training_queue().jobs() == []


@pytest.mark.parametrize("kind", list(METHODS))
def test_every_method_offers_its_settings(paused, kind):
    at = page(train_kind=kind, train_dataset="fashion_mnist")
    keys = {w.key for w in at.main if getattr(w, "key", None)}
    own = {
        "bbb": {"train_prior", "train_beta", "train_init_sigma", "train_n_samples", "train_impl"},
        "dropout": {"train_dropout"},
        "ensemble": {"train_members"},
        "sgld": {"train_prior", "train_temperature", "train_burn_in", "train_members"},
        "sgmcmc_cyclic": {"train_cycles", "train_exploration", "train_temperature"},
        "swag": {"train_rank", "train_burn_in", "train_weight_decay"},
    }.get(kind, set())
    assert own == {f"train_{s.name}" for s in METHODS[kind].settings if s.when is None} & own
    assert own <= keys
    assert {"train_epochs", "train_lr", "train_batch", "train_subset"} <= keys
    if kind == "bbb":
        at.radio(key="train_prior").set_value("mixture").run()
        assert {"train_pi", "train_sigma1", "train_sigma2"} <= {
            w.key for w in at.main if getattr(w, "key", None)
        }


def test_a_student_acts_only_on_their_own_also_when_no_key_was_set(paused, tmp_path, monkeypatch):
    """Two browser sessions on a server started without BNN_TEACHER_KEY (the default, which
    makes a key): B sees A's job and model but gets no control over them until the teacher
    key is entered; A keeps full control of its own."""
    from core.paths import data_search_path
    from core.roles import teacher_key

    monkeypatch.delenv("BNN_TEACHER_KEY")
    monkeypatch.setenv("BNN_DATA_PATH", os.pathsep.join(map(str, data_search_path())))
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "data"))  # the made key goes here
    anna = page()
    job_id = start(anna, "annas")
    assert paused.wait(job_id)
    ben = page()
    assert job_table(ben).loc["annas", "yours"] == ""
    said = [c.value for c in ben.caption]
    assert "You can cancel, rename and delete your own jobs and models only." in said
    assert any(c.startswith("Jobs train on the lab's server, 1 at a time") for c in said)
    watch_list(ben).set_value(job_id).run()
    with pytest.raises(KeyError):
        ben.button(key=f"train_cancel_{job_id}")  # no control over another's job
    anna.run()
    assert job_table(anna).loc["annas", "yours"] == "yes"
    assert anna.button(key=f"train_cancel_{job_id}")
    paused.release.set()
    assert training_queue().wait(job_id, 120).status is JobStatus.DONE
    ben.run()
    assert "Models trained by other students can be picked in the sidebar, not changed." in [
        c.value for c in ben.caption
    ]
    with pytest.raises(KeyError):
        ben.button(key="train_delete")
    ben.text_input(key="teacher_key").set_value("wrong")
    ben.button(key="teacher_sign_in").click().run()
    assert "Wrong key." in [e.value for e in ben.sidebar.error]
    ben.text_input(key="teacher_key").set_value(teacher_key().value)
    ben.button(key="teacher_sign_in").click().run()
    assert not ben.exception, ben.exception
    assert ben.selectbox(key="train_manage_model").options == ["annas"]  # the teacher may
    said = [c.value for c in ben.caption]
    assert "Teacher mode: you can act on every job and model." in said
    assert any(c.startswith(f"Jobs train on {training_queue().executor.where}") for c in said)
    anna.run()
    anna.text_input(key="train_new_name").set_value("anna_final")
    anna.button(key="train_rename").click().run()
    assert "Renamed annas to anna_final." in [t.value for t in anna.text]


def test_presenter_mode_shows_the_job_list_as_a_static_table(paused):
    """A grid is drawn on a canvas at a fixed small size: projected, the job list is static."""
    job_id = start(page(), "tiny")
    projected = AppTest.from_file(PAGE, default_timeout=120)
    for key, value in TINY.items():
        projected.session_state[key] = value
    projected.query_params["present"] = "1"
    projected.run()
    assert not projected.exception, projected.exception
    assert not projected.dataframe
    jobs = projected.table[0].value
    assert jobs.set_index("name").loc["tiny", "job"] == f"#{job_id}"


def test_a_links_settings_are_the_started_jobs(paused):
    at = AppTest.from_file(PAGE, default_timeout=120)
    link = {"train_kind": "bbb", "train_epochs": "1", "train_subset": "1000"}
    link |= {"train_eval_samples": "1", "train_name": "linked"}
    for key, value in link.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    at.button(key="train_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    (job,) = [j for j in training_queue().jobs() if j.request.name == "linked"]
    assert (job.request.training.epochs, job.request.n_train) == (1, 1000)
    assert job.request.n_eval_samples == 1 and job.request.model.kind == "bbb"
