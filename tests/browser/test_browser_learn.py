"""Real-browser test of "Learn our handwriting": six students send drawings from the Draw page,
a student cannot start the teaching, the teacher signs in and teaches Bayes by Backprop and the
plain MLP, and both adapted models are offered in the Draw page's sidebar."""

from __future__ import annotations

import math

import pytest

from core.classroom.store import ClassStore
from core.storage.database import DB_ENV
from core.storage.user_models import list_user_checkpoints
from harness.browser import (
    chromium_browsers,
    open_sidebar,
    record_timings,
    require_chromium,
    scored_default_models,
    serve_app,
    sign_in_as_teacher,
    wait_for_polled_text,
    wait_for_script,
    wait_for_text,
)
from harness.classroom import students_send
from tests.conftest import TEACHER_KEY

pytestmark = [pytest.mark.browser, require_chromium()]

CLASS = "learn-test"
ONE = [[(0.5, 0.15), (0.5, 0.85)]]
SEVEN = [[(0.25, 0.2), (0.75, 0.2), (0.45, 0.85)]]
ZERO = [
    [
        (0.5 + 0.2 * math.sin(t / 8 * math.pi), 0.5 - 0.3 * math.cos(t / 8 * math.pi))
        for t in range(17)
    ]
]
SENT = [(ONE, 1), (SEVEN, 7), (ZERO, 0)] * 2  # six students, in this order
SETTINGS = "learn_models=bbb_gaussian,mlp&learn_steps=25&learn_curve=0&learn_ask=0"


def test_six_students_send_and_the_teacher_teaches_bbb_and_the_mlp(tmp_path, monkeypatch):
    scored_default_models()
    database = tmp_path / "class.sqlite"
    monkeypatch.setenv(DB_ENV, f"sqlite:///{database}")
    with serve_app(env={DB_ENV: f"sqlite:///{database}"}) as url, chromium_browsers(7) as pages:
        students, teacher = pages[:6], pages[6]
        for page in students:
            record_timings(page)
        students_send(students, f"{url}/draw?class={CLASS}", SENT, CLASS)
        assert ClassStore().drawings(CLASS).labels.tolist() == [1, 7, 0, 1, 7, 0]

        student = students[0]
        student.goto(f"{url}/classroom?class={CLASS}&{SETTINGS}")
        wait_for_text(student, "Only the teacher can start this")
        assert student.get_by_role("button", name="Teach the networks").count() == 0

        record_timings(teacher)
        teacher.goto(f"{url}/classroom?class={CLASS}&{SETTINGS}")
        wait_for_text(teacher, f"6 drawing(s) in class {CLASS}")
        sign_in_as_teacher(teacher, TEACHER_KEY, polled=True)
        wait_for_script(teacher)
        teacher.get_by_role("button", name="Teach the networks").click()
        wait_for_polled_text(teacher, "pick them in the sidebar", deadline_s=600)
        saved = {i.spec.name for i in list_user_checkpoints()}
        assert saved == {f"user:{CLASS}-learned-bbb_gaussian", f"user:{CLASS}-learned-mlp"}

        teacher.goto(f"{url}/draw")
        wait_for_script(teacher)
        open_sidebar(teacher)
        teacher.locator("[data-testid='stSidebar'] [data-testid='stMultiSelect']").first.click()
        teacher.keyboard.type(CLASS)  # the list is long: filter it to the adapted models
        for name in saved:
            wait_for_text(teacher, f"{name.removeprefix('user:')} (user-trained)")
