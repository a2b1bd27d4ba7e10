"""Headless tests of the Train page's limits: a refused job gets one line, a student sees their
jobs and the class's room left, the teacher's jobs show first in the queue, and only the
teacher sees and changes the class's limits, which the database keeps."""

from __future__ import annotations

import pytest

from app import ui
from core.jobs import JobQueue, JobStore, make_request, set_training_queue, training_queue
from core.jobs.limits import Limits
from core.jobs.owners import Visitor
from tests.app.test_app_train import job_table, page
from tests.unit.test_jobs import Gate, wait_for

SMALL = {"n_train": 1000, "epochs": 2}


@pytest.fixture
def gate(tmp_path):
    """A fresh training queue (one worker) whose jobs wait until released or cancelled."""
    gate = Gate()
    queue = JobQueue(workers=1, threads=1, runner=gate, directory=tmp_path / "models")
    old = set_training_queue(queue)
    yield gate
    gate.release.set()
    queue.shutdown()
    set_training_queue(old)


def captions(at) -> list[str]:
    return [c.value for c in at.caption]


def test_a_refused_job_is_one_line_and_a_student_sees_their_jobs_and_the_room_left(gate):
    at = page(train_epochs=200, train_subset=60_000)  # 12,000,000 images
    assert "You have 0 of 3 jobs queued or running; the class's queue has room for 12 more " in (
        " ".join(captions(at))
    )
    at.button(key="train_start").click().run()
    assert not at.exception, at.exception
    assert [e.value for e in at.error] == [
        "This job would train on 12,000,000 images in all (epochs × training images); one job "
        "may train on at most 1,000,000: use fewer epochs or images."
    ]
    assert not any("images in all" in t.value for t in at.text)  # said once, not twice
    assert JobStore().jobs() == []
    at.number_input(key="train_epochs").set_value(1)
    at.select_slider(key="train_subset").set_value(1_000)
    at.text_input(key="train_name").set_value("small").run()
    at.button(key="train_start").click().run()
    assert not at.error, [e.value for e in at.error]
    assert any(c.startswith("You have 1 of 3 jobs queued or running") for c in captions(at))
    assert any("room for 11 more of 12" in c for c in captions(at))


def test_the_teachers_queued_job_shows_first(gate):
    queue = training_queue()
    queue.store.add(make_request("running", "mlp", **SMALL), Visitor("anna"))
    queue.resume()
    wait_for(lambda: gate.running == 1)
    queue.store.add(make_request("annas", "mlp", **SMALL), Visitor("anna"))
    queue.store.add(make_request("teachers", "mlp", **SMALL), Visitor("t", teacher=True))
    table = job_table(page())
    assert table.loc["running", "status"].startswith("running")
    teachers, annas = table.loc["teachers", "status"], table.loc["annas", "status"]
    assert teachers.startswith("queued, position 1 (the teacher's: goes first), starts ")
    assert annas.startswith("queued, position 2, starts ")


def test_a_student_sees_their_jobs_place_in_the_queue_and_its_expected_wait(gate):
    queue = training_queue()
    queue.store.add(make_request("running", "mlp", **SMALL), Visitor("anna"))
    queue.resume()
    wait_for(lambda: gate.running == 1)  # reports half done at once: nearly no time left
    whole = {"n_train": None, "epochs": 3}  # 180,000 images and 100 passes: 197 s modelled
    queue.store.add(make_request("annas", "mlp", **whole), Visitor("anna"))
    queue.store.add(make_request("teachers", "mlp", **whole), Visitor("t", teacher=True))
    at = page()  # a student with no job of their own: the running one is watched
    at.text_input(key="train_name").set_value("mine")
    at.button(key="train_start").click().run()
    assert not at.exception, at.exception
    table = job_table(at)
    assert table.loc["mine", "status"] == "queued, position 3, starts in about 7 min"
    (bar,) = at.get("progress")  # the session watches its own job
    assert bar.proto.text == (
        "waiting, position 3 in the queue (2 jobs ahead, 1 job trains at a time): "
        "starts in about 7 min"
    )
    assert any("how long the last jobs took" in c for c in captions(at))


def test_only_the_teacher_sets_the_class_limits_and_they_are_kept(gate):
    student = page()
    with pytest.raises(KeyError):
        student.number_input(key="train_limit_class")
    teacher = page(**{ui.TEACHER_FLAG: True})
    assert any(c.startswith("Teacher: your jobs go first") for c in captions(teacher))
    assert teacher.number_input(key="train_limit_class").value == 12
    teacher.number_input(key="train_limit_class").set_value(20)
    teacher.number_input(key="train_limit_images").set_value(2_000_000)
    teacher.button(key="train_limits_save").click().run()
    assert not teacher.exception, teacher.exception
    assert "Saved: these limits hold from now on." in [s.value for s in teacher.success]
    assert JobStore().limits() == Limits(student_jobs=3, class_jobs=20, job_images=2_000_000)
    student.run()
    text = " ".join(captions(student))
    assert "room for 20 more of 20" in text and "at most 2,000,000 images" in text
