"""The Class page's "Learn our handwriting" section, headless: students cannot start it, the
teacher teaches models half of the drawings, sees before and after, and the adapted models join
the sidebar's list; Cancel saves nothing; too few drawings are one line."""

from __future__ import annotations

import pytest
import torch

from app.learn import RUN_KEY
from app.ui import all_checkpoints
from core.adapt.live import Plan, start
from core.jobs.owners import Visitor
from core.paths import user_model_dir
from core.storage.checkpoints import read_metadata
from core.storage.user_models import list_user_checkpoints
from tests.app.test_app_classroom import (  # noqa: F401
    class_db,
    class_page,
    fresh_throttle,
    small_models,
    submit_some,
)

LABELS = [i % 10 for i in range(14)]


def test_a_student_cannot_start_it(small_models):  # noqa: F811
    submit_some("physics1", LABELS)
    at = class_page(teacher=False)
    assert any("Only the teacher can start this" in i.value for i in at.info)
    assert not [b for b in at.button if b.key == "learn_start"]
    plan = Plan(("mlp",), torch.rand(8, 1, 28, 28), torch.arange(8) % 4)
    with pytest.raises(PermissionError, match="only the teacher"):
        start(Visitor("student"), plan)


def teach(at, **params):
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    at.button(key="learn_start").click().run()
    assert not at.exception, at.exception
    return at.session_state[RUN_KEY]


def test_the_teacher_teaches_two_models_and_they_join_the_sidebar(small_models):  # noqa: F811
    submit_some("physics1", LABELS)
    at = class_page()
    run = teach(at, learn_models="bbb_mixture,mlp", learn_steps="25", learn_curve="1")
    assert run.join(300)
    at.run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    table = at.table[-1].value
    assert len(table) == 4 and "MNIST error" in table.columns
    saved = {i.spec.name for i in list_user_checkpoints()}
    assert saved == {"user:physics1-learned-bbb_mixture", "user:physics1-learned-mlp"}
    assert read_metadata(user_model_dir() / "physics1-learned-mlp.pt")["owner"]  # the teacher's
    assert any("Saved" in s.value for s in at.success)
    listed = [i.spec.name for i in all_checkpoints() if i.available]  # the sidebar's list
    assert {"user:physics1-learned-mlp", "user:physics1-learned-bbb_mixture"} <= set(listed)
    assert len(at.get("plotly_chart")) > 6  # the curve beside the models' figures
    captions = [c for image in at.get("image") for c in image.captions]
    assert sum(" · MI " in c for c in captions) == 7  # BALD's picks: all 7 drawings learned


def test_cancel_saves_nothing(small_models):  # noqa: F811
    submit_some("physics1", LABELS)
    at = class_page()
    run = teach(at, learn_models="mlp", learn_steps="400")
    at.button(key="learn_cancel").click().run()
    assert run.join(120)
    at.run()
    assert any("no model was saved" in i.value for i in at.info)
    assert not list(user_model_dir().glob("*.pt"))


def test_too_few_drawings_are_one_line(small_models):  # noqa: F811
    submit_some("physics1", [1, 2, 3, 4])
    at = class_page()
    at.button(key="learn_start").click().run()
    assert RUN_KEY not in at.session_state
    assert any("at least 3" in e.value for e in at.error)
