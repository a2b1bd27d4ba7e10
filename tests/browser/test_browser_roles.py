"""Real-browser test of teacher and students on two app servers ("replicas") sharing one SQLite
database and one model folder, with a teacher key: a student's browser sees no control over
what is not theirs on either replica (clear, export, the database, another's job and model) and
cannot guess the key; the teacher's browser signs in and clears the class and cancels the job.

Another student's running job is held by a gated runner in this test process (a worker of its
own queue on the same database), so no training costs CPU while the browsers look."""

from __future__ import annotations

import pytest

from core.classroom.store import ClassStore
from core.jobs import JobQueue, JobStatus, make_request
from core.jobs.owners import Visitor
from core.methods import ModelConfig, build_model
from core.storage.checkpoints import save_checkpoint
from core.storage.database_errors import DB_ENV
from harness.browser import (
    chromium_browsers,
    press,
    record_timings,
    require_chromium,
    serve_app,
    sign_in_as_teacher,
    wait_for_enabled,
    wait_for_polled_text,
    wait_for_text,
)
from tests.unit.test_jobs import Gate, wait_for
from tests.unit.test_roles import drawing

pytestmark = [pytest.mark.browser, require_chromium()]

KEY = "roles-test-key"
CLASS = "roles-3b"
ANNA = Visitor("anna")  # another student, who owns the job and the model
CLASS_PAGE = f"/classroom?class={CLASS}&sidebar_models=mlp"


def student_sees_nothing_to_change(page, url: str, database: str) -> None:
    """On one replica: the class without its teacher's controls, Anna's job and model without
    Cancel, Rename or Delete."""
    page.goto(f"{url}{CLASS_PAGE}")
    wait_for_text(page, f"2 drawing(s) in class {CLASS}")
    body = page.inner_text("body")
    for hidden in ("Teacher: export or clear", "Download", "Clear the class", "Database:"):
        assert hidden not in body
    assert database not in body and "sqlite" not in body.lower()
    page.goto(f"{url}/train")
    wait_for_polled_text(page, "running")
    wait_for_polled_text(page, "Models trained by other students can be picked")
    for button in ("Cancel", "Rename", "Delete"):
        assert page.get_by_role("button", name=button, exact=True).count() == 0
    assert "You can cancel, rename and delete your own jobs and models only." in page.inner_text(
        "body"
    )


def test_a_student_changes_nothing_on_either_replica_and_the_teacher_clears_the_class(
    tmp_path, monkeypatch
):
    database = f"sqlite:///{tmp_path / 'lab.sqlite'}"
    models = tmp_path / "models"
    env = {DB_ENV: database, "BNN_TEACHER_KEY": KEY, "BNN_MODELS_DIR": str(models)}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store = ClassStore(database)
    for label in (1, 7):
        store.submit(drawing(), label, CLASS, f"00000000-0000-4000-8000-00000000000{label}")
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    save_checkpoint("annas_model", model, {"dataset": "mnist", "owner": ANNA.id}, models)
    gate = Gate()
    queue = JobQueue(workers=1, threads=1, runner=gate, directory=models, url=database)
    try:
        job = queue.submit(make_request("annas_job", "mlp", n_train=1000, epochs=2), ANNA)
        wait_for(lambda: queue.get(job).status is JobStatus.RUNNING)
        with (
            serve_app(env=env) as first,
            serve_app(env=env) as second,
            chromium_browsers(2) as (student, teacher),
        ):
            record_timings(student)
            record_timings(teacher)
            for url in (first, second):
                student_sees_nothing_to_change(student, url, str(tmp_path))
            student.goto(f"{first}{CLASS_PAGE}")
            wait_for_text(student, f"2 drawing(s) in class {CLASS}")
            student.get_by_text("Teacher sign-in").click()
            student.get_by_label("Teacher key").fill("not-the-key")
            press(student, student.get_by_role("button", name="Sign in"))
            wait_for_text(student, "Wrong key.")
            assert student.get_by_text("Teacher: export or clear").count() == 0
            assert store.count(CLASS) == 2 and queue.get(job).status is JobStatus.RUNNING

            teacher.goto(f"{second}{CLASS_PAGE}")
            wait_for_text(teacher, f"2 drawing(s) in class {CLASS}")
            sign_in_as_teacher(teacher, KEY)
            teacher.get_by_text("Teacher: export or clear").click()
            download = teacher.get_by_role("button", name="Download CSV + PNG (zip)")
            download.wait_for()  # the panel opens on the next rerun: follow the page's state
            assert download.count() == 1
            teacher.get_by_text("Yes, delete the 2 drawing(s)").click()
            wait_for_enabled(teacher, "Clear the class")
            press(teacher, teacher.get_by_role("button", name="Clear the class"))
            wait_for_text(teacher, f"Deleted 2 drawing(s) of {CLASS}.")
            assert store.count(CLASS) == 0

            teacher.goto(f"{first}/train")  # a new session: the key is asked again
            wait_for_polled_text(teacher, "running")
            sign_in_as_teacher(teacher, KEY, polled=True)
            press(teacher, teacher.get_by_role("button", name="Cancel"))
            wait_for(lambda: queue.get(job).status is JobStatus.CANCELLED, timeout=60)
            delete = teacher.get_by_role("button", name="Delete", exact=True)
            assert delete.count() == 1  # of Anna's model, for the teacher
    finally:
        gate.release.set()
        queue.shutdown()
