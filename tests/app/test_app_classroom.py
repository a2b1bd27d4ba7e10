"""Headless tests of the Class page and of the Draw page's "Send my drawing to the class" panel,
with small untrained checkpoints and a database file in a temporary folder; what a student and
the teacher (signed in with the key) each see and may do."""

from __future__ import annotations

import io
import time
import uuid
import zipfile
from functools import partial

import pytest
import torch
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
import core.studies.evaluations
from app.ui import SAMPLES_KEY, TEACHER_FLAG, _kept
from core.catalogue import REGISTRY
from core.classroom.drawings import check_class_code
from core.classroom.report import model_report
from core.classroom.store import ClassStore
from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import SCORES
from core.storage.checkpoints import load_checkpoint
from core.storage.database_errors import DB_ENV
from tests.conftest import TEACHER_KEY
from tests.support.checkpoint_util import save_small_checkpoints

PAGE = "../../pages/classroom.py"
MODELS = ("bbb_mixture", "mlp", "dropout_mlp")  # the sidebar's default models
TITLES = [REGISTRY[name].title for name in MODELS]
N_SAMPLES = 6
PUBLIC_URL = "http://10.0.0.5:8501"
LIMITS = {score: {"p90": 0.5, "p99": 1.5} for score in SCORES}  # untrained: mostly above p99


@pytest.fixture
def class_db(tmp_path, monkeypatch):
    path = tmp_path / "class.sqlite"
    monkeypatch.setenv(DB_ENV, f"sqlite:///{path}")
    return path


@pytest.fixture(autouse=True)
def fresh_throttle():
    """No wrong keys of earlier tests (the server's throttle is kept in memory)."""
    _kept.clear()


@pytest.fixture
def small_models(tmp_path, monkeypatch, class_db):
    """784-16-10 untrained checkpoints under the default names, fixed "I don't know" limits; a
    public address, so that the students' link is known (the others:
    tests/app/test_class_join.py)."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    monkeypatch.setenv("BNN_PUBLIC_URL", PUBLIC_URL)
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(core.studies.evaluations, "evaluation_jobs", lambda *a, **k: [])
    monkeypatch.setattr(core.studies.evaluations, "rejection_thresholds", lambda *a, **k: LIMITS)
    save_small_checkpoints(MODELS)


def digit(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    image = torch.zeros(28, 28)
    image[4:24, 11:17] = 0.5 + 0.5 * torch.rand(20, 6, generator=g)
    return image


def submit_some(code: str, labels: list[int]) -> list[int]:
    store = ClassStore()
    return [store.submit(digit(i), y, code, str(uuid.uuid4())) for i, y in enumerate(labels)]


def class_page(code: str | None = "physics1", teacher: bool = True, **state) -> AppTest:
    """The page in a new session, run once; ``teacher``: signed in (else a student)."""
    at = AppTest.from_file(PAGE, default_timeout=120)
    at.session_state[TEACHER_FLAG] = teacher
    if code is not None:
        at.query_params["class"] = code
    at.session_state[SAMPLES_KEY] = N_SAMPLES
    for key, value in state.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def captions(at: AppTest) -> str:
    return " ".join(c.value for c in at.caption)


def gallery_captions(at: AppTest) -> list[str]:
    return at.get("image")[0].captions if at.get("image") else []


def test_an_empty_class_gets_a_friendly_caption(small_models, class_db):
    at = class_page()
    assert at.title[0].value == "Class drawings"
    assert at.text_input(key="classroom_code").value == "physics1"
    assert "No drawings in class `physics1` yet" in captions(at)
    link = next(m.value for m in at.markdown if "</p>" in m.value)  # under the QR code
    assert f">{PUBLIC_URL}/draw?class=physics1</p>" in link  # the Draw page, in full
    assert not at.error and not at.get("image")
    assert all("drawings" not in t.value.columns for t in at.table)  # no results, only the study
    assert not class_db.exists()  # looking creates no database


def test_the_page_shows_gallery_accuracy_figures_and_exports(small_models):
    labels = [3, 1, 4, 1, 5, 9, 2]
    ids = submit_some("physics1", labels)
    submit_some("other", [7])
    at = class_page()
    assert "7 drawing(s) in class `physics1`" in captions(at)
    shown = gallery_captions(at)
    assert shown == [f"{y} · #{i}" for i, y in zip(ids, labels, strict=True)][::-1]  # newest first
    table = at.table[0].value
    assert list(table.index) == TITLES
    assert table["drawings"].tolist() == [len(labels)] * len(MODELS)
    images, truth, _, _ = ClassStore().drawings("physics1")
    for name, title in zip(MODELS, TITLES, strict=True):
        model = load_checkpoint(name, "cpu")[0]
        with torch.random.fork_rng():
            torch.manual_seed(ids[0])  # one batch, seeded by its first drawing's id
            mean = predictive_samples(model, images, N_SAMPLES).mean(0).cpu()
        accuracy = (mean.argmax(-1) == truth).double().mean().item()
        assert table.loc[title, "accuracy"] == f"{accuracy:.1%}"
        report = model_report(name, model, images, truth, N_SAMPLES, LIMITS, seed=ids[0])
        assert table.loc[title, '"I don\'t know"'] == str(len(report.dont_know))
    assert len(at.get("plotly_chart")) == 2 * len(MODELS)  # confusion + reliability per model
    assert [t.label for t in at.tabs] == TITLES
    downloads = [d.proto.label for d in at.get("download_button")]
    assert downloads == ["Download CSV + PNG (zip)", "Download MNIST IDX pair (zip)"]
    assert at.button(key="class_clear").disabled


def test_a_refresh_without_new_drawings_reuses_the_evaluation(small_models, monkeypatch):
    import core.classroom.report as report_module

    submit_some("physics1", [1, 2])
    at = class_page()
    calls = []
    real = report_module.seeded_summary
    monkeypatch.setattr(
        report_module, "seeded_summary", lambda *a, **k: (calls.append(1), real(*a, **k))[1]
    )
    at.run()
    assert not at.exception and calls == []  # cached by the set of drawings
    submit_some("physics1", [7])
    at.run()
    assert "3 drawing(s)" in captions(at)
    assert len(calls) == len(MODELS)  # a new drawing: each model evaluated once
    calls.clear()
    other = class_page()  # another session: the server already holds the predictions
    assert "3 drawing(s)" in captions(other) and calls == []


def test_exports_are_built_only_when_the_teacher_downloads(small_models, monkeypatch):
    import core.classroom.export as export_module

    built = []
    for name in ("csv_png_zip", "idx_zip"):
        real = getattr(export_module, name)
        monkeypatch.setattr(
            export_module, name, lambda d, real=real, name=name: (built.append(name), real(d))[1]
        )
    deferred = {}  # file id → the callable Streamlit runs when the button is clicked
    add_deferred = MediaFileManager.add_deferred

    def recording(manager, data, *args, **kwargs):
        deferred[file_id := add_deferred(manager, data, *args, **kwargs)] = data
        return file_id

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording)
    submit_some("physics1", [3, 1, 4])
    at = class_page()
    at.run()
    assert built == []  # opening and refreshing the page packs nothing
    clicks = {d.proto.label: deferred[d.proto.deferred_file_id] for d in at.get("download_button")}
    submit_some("physics1", [5])  # packed when clicked: what is stored then
    with zipfile.ZipFile(io.BytesIO(clicks["Download CSV + PNG (zip)"]())) as archive:
        assert len([n for n in archive.namelist() if n.endswith(".png")]) == 4
    assert built == ["csv_png_zip"]
    with zipfile.ZipFile(io.BytesIO(clicks["Download MNIST IDX pair (zip)"]())) as archive:
        assert sorted(archive.namelist()) == sorted(export_module.IDX_NAMES)
    assert built == ["csv_png_zip", "idx_zip"]


def test_a_large_class_is_evaluated_over_several_refreshes(small_models, monkeypatch):
    import core.classroom.live as live_module

    monkeypatch.setattr(live_module, "live_reports", partial(live_module.live_reports, budget_s=0))
    submit_some("physics1", [i % 10 for i in range(live_module.BATCH + 6)])
    at = class_page()
    assert "6 to go" in at.info[0].value
    assert at.table[0].value["drawings"].tolist() == [live_module.BATCH] * len(MODELS)
    at.run()
    assert not at.info
    assert at.table[0].value["drawings"].tolist() == [live_module.BATCH + 6] * len(MODELS)


def test_a_full_class_tells_the_teacher(small_models, monkeypatch):
    monkeypatch.setenv("BNN_CLASS_LIMIT", "3")
    submit_some("physics1", [1, 2])
    assert not class_page().warning
    submit_some("physics1", [3])
    assert "The class is full: it holds 3 drawings" in class_page().warning[0].value


def test_clear_needs_the_confirmation_and_keeps_other_classes(small_models):
    submit_some("physics1", [1, 2, 3])
    submit_some("other", [4])
    at = class_page()
    at.checkbox(key="classroom_confirm").check().run()
    assert not at.button(key="class_clear").disabled
    at.button(key="class_clear").click().run()
    assert not at.exception, at.exception
    assert any("Deleted 3 drawing(s)" in s.value for s in at.success)
    assert "No drawings in class `physics1` yet" in captions(at)
    at.run()  # a live refresh: the outcome stays up for the teacher to read
    assert any("Deleted 3 drawing(s)" in s.value for s in at.success)
    kind, text, _ = at.session_state["classroom_message"]
    at.session_state["classroom_message"] = (kind, text, time.monotonic() - 61)
    assert not at.run().success  # and goes once its minute is up
    assert ClassStore().classes() == {"other": 1}


def test_a_drawing_sent_after_the_teacher_confirmed_is_kept_by_the_clear(small_models):
    submit_some("physics1", [1, 2, 3])
    at = class_page()
    at.checkbox(key="classroom_confirm").check().run()
    assert at.checkbox(key="classroom_confirm").label.startswith("Yes, delete the 3 drawing(s)")
    late = submit_some("physics1", [4])  # sent while the teacher reaches for the button
    at.button(key="class_clear").click().run()
    assert not at.exception, at.exception
    assert any(
        "Deleted 3 drawing(s) of `physics1`. 1 drawing(s) sent since were kept." in s.value
        for s in at.success
    )
    assert ClassStore().drawings("physics1").ids == late
    assert gallery_captions(at) == [f"4 · #{late[0]}"]
    assert not at.checkbox(key="classroom_confirm").value
    assert at.checkbox(key="classroom_confirm").label.startswith("Yes, delete the 1 drawing(s)")


def test_without_a_class_in_the_link_a_fresh_code_is_proposed(small_models):
    at = class_page(code=None)
    code = at.text_input(key="classroom_code").value
    assert code != "default" and check_class_code(code) == code and code.count("-") == 2
    assert "A new class code is proposed" in at.info[0].value
    assert at.query_params["class"] == code  # a link to share
    assert class_page(code=None).text_input(key="classroom_code").value != code  # fresh


def test_a_bad_class_code_in_the_link_is_replaced_by_a_fresh_one(small_models):
    at = class_page(code="no spaces allowed!")
    assert "cannot be used" in at.warning[0].value
    code = at.text_input(key="classroom_code").value
    assert check_class_code(code) == code and f"No drawings in class `{code}` yet" in captions(at)
    at.text_input(key="classroom_code").input("bad/code").run()
    assert not at.exception
    assert "That class code cannot be used." in [e.value for e in at.error]
    assert "bad class code" in " ".join(t.value for t in at.text)
    at.text_input(key="classroom_code").input("").run()
    assert "no class code" in " ".join(t.value for t in at.text)


def test_a_corrupt_database_shows_one_generic_line_and_the_details_to_the_teacher(
    small_models, class_db
):
    class_db.write_bytes(b"not a database at all" * 10)
    line = "The class's drawings cannot be read right now; try again in a moment."
    student = class_page(teacher=False)
    assert [e.value for e in student.error] == [line]
    shown = " ".join(t.value for t in student.text) + captions(student)
    assert str(class_db) not in shown and "SQLite" not in shown  # no file, host or port
    teacher = class_page()
    assert [e.value for e in teacher.error] == [line]
    assert any("not a SQLite database" in t.value for t in teacher.text)
    assert class_db.read_bytes() == b"not a database at all" * 10


def test_a_student_sees_the_class_but_no_export_clear_or_database(small_models, class_db):
    submit_some("physics1", [3, 1])
    at = class_page(teacher=False)
    assert "2 drawing(s) in class `physics1`" in captions(at)
    assert at.table  # the results are everyone's
    assert not at.get("download_button") and not at.checkbox
    assert "Teacher: export or clear" not in [e.label for e in at.expander]
    with pytest.raises(KeyError):
        at.button(key="class_clear")
    assert str(class_db) not in captions(at) and "Database:" not in captions(at)
    assert "Teacher sign-in" in [e.label for e in at.sidebar.expander]


def test_the_clear_callback_refuses_a_session_that_is_no_longer_the_teacher(small_models):
    """The button is hidden from students, and its callback checks again (core refuses)."""
    submit_some("physics1", [1, 2])
    at = class_page()
    at.checkbox(key="classroom_confirm").check().run()
    at.session_state[TEACHER_FLAG] = False  # e.g. signed out in another run meanwhile
    at.button(key="class_clear").click().run()
    assert not at.exception, at.exception
    assert "The class could not be cleared; nothing was deleted." in [e.value for e in at.error]
    assert "only the teacher can clear a class's drawings" in [t.value for t in at.text]
    assert ClassStore().count("physics1") == 2


def sign_in(at: AppTest, key: str) -> AppTest:
    at.text_input(key="teacher_key").set_value(key)
    at.button(key="teacher_sign_in").click().run()
    assert not at.exception, at.exception
    return at


def test_the_teacher_signs_in_and_wrong_keys_are_throttled(small_models):
    submit_some("physics1", [5])
    at = class_page(teacher=False)
    assert [e.value for e in sign_in(at, "guess").sidebar.error] == ["Wrong key."]
    assert not at.get("download_button")
    for _ in range(2):
        sign_in(at, "guess")
    refused = sign_in(at, TEACHER_KEY).sidebar.error  # the right key, but too soon
    assert [e.value for e in refused] == ["Too many wrong keys: try again in 5 s."]
    assert not at.get("download_button")
    other = class_page(teacher=False)  # another session (a private window) is not the teacher
    assert not other.get("download_button")
    _kept.clear()  # as if the wait were over
    sign_in(at, TEACHER_KEY)
    assert not at.sidebar.error
    assert len(at.get("download_button")) == 2 and at.checkbox(key="classroom_confirm")
    assert any("Teacher mode" in c.value for c in at.sidebar.caption)
    at.run()  # teacher mode lasts for the session
    assert len(at.get("download_button")) == 2
    at.button(key="teacher_sign_out").click().run()
    assert not at.get("download_button")


# --- the submission panel ------------------------------------------------------------------


def panel_script(kind: str) -> None:
    """A page with only the panel; ``kind`` picks the image (``st.session_state["seed"]``
    changes the drawing)."""
    import streamlit as st
    import torch

    from app.classroom import submission_panel

    if kind == "none":
        image = None
    elif kind == "empty":
        image = torch.zeros(1, 28, 28)
    else:
        g = torch.Generator().manual_seed(st.session_state.get("seed", 0))
        image = torch.zeros(28, 28)
        image[5:23, 12:16] = 0.5 + 0.5 * torch.rand(18, 4, generator=g)
    submission_panel(image)


def panel(kind: str = "digit", code: str | None = "lab") -> AppTest:
    at = AppTest.from_function(panel_script, args=(kind,), default_timeout=60)
    if code is not None:
        at.query_params["class"] = code
    at.run()
    assert not at.exception, at.exception
    return at


def send(at: AppTest, label: int) -> AppTest:
    at.radio(key="class_label").set_value(label).run()
    at.button(key="class_submit").click().run()
    assert not at.exception, at.exception
    return at


def test_submit_stores_once_per_drawing(class_db):
    at = panel()
    assert at.expander[0].label == "Send my drawing to the class"
    assert "Class code in use: `lab`" in captions(at)
    assert at.button(key="class_submit").disabled  # until a digit is picked
    send(at, 7)
    assert "Sent as a 7. Class `lab` now has 1 drawing(s)." in [s.value for s in at.success]
    at.button(key="class_submit").click().run()  # a second click
    assert "Already sent as a 7" in at.info[0].value
    assert ClassStore().count("lab") == 1
    at.session_state["seed"] = 1  # another drawing: a new submission
    at.run()
    assert at.radio(key="class_label").value is None  # the digit is picked again
    assert at.button(key="class_submit").disabled
    send(at, 1)
    assert "now has 2 drawing(s)" in at.success[0].value
    assert ClassStore().drawings("lab").labels.tolist() == [7, 1]


def test_without_a_class_in_the_link_the_student_types_the_teachers_code(class_db):
    at = panel(code=None)
    assert "Type the class code your teacher gave" in captions(at)
    assert not at.radio and "class" not in at.query_params  # nothing to send to yet
    at.text_input(key="class_code_typed").input("bad code").run()
    assert "That class code cannot be used." in [e.value for e in at.error] and not at.radio
    at.text_input(key="class_code_typed").input("physics-3b").run()
    assert "Class code in use: `physics-3b`" in captions(at)
    assert at.query_params["class"] == "physics-3b"  # kept in the link, for the next pages
    send(at, 4)
    assert ClassStore().classes() == {"physics-3b": 1}


def test_a_full_class_says_so_and_keeps_what_it_has(class_db, monkeypatch):
    monkeypatch.setenv("BNN_CLASS_LIMIT", "1")
    at = send(panel(), 7)
    assert "now has 1 drawing(s)" in at.success[0].value
    at.session_state["seed"] = 1  # another drawing
    at.run()
    send(at, 1)
    assert "This class is full" in at.error[0].value and "1 drawings" in at.text[0].value
    assert ClassStore().drawings("lab").labels.tolist() == [7]


def test_panel_errors_are_clear(class_db):
    at = send(panel("empty"), 3)
    assert "The drawing was not sent." in [e.value for e in at.error]
    assert "empty drawing" in at.text[0].value
    assert "Draw a digit first." in captions(panel("none"))
    bad = panel(code="a b")
    assert "cannot be used" in bad.error[0].value and not bad.radio
    class_db.write_bytes(b"garbage" * 100)
    at = send(panel(), 2)
    assert "nothing stored is lost" in at.error[0].value
    assert not at.text  # a student sees no file, host or port
    at.session_state[TEACHER_FLAG] = True
    at.button(key="class_submit").click().run()
    assert "not a SQLite database" in at.text[0].value  # the teacher sees the details
    assert class_db.read_bytes() == b"garbage" * 100


class FakePreparation:
    """Stands in for the server's preparation: records who started and cancelled it."""

    def __init__(self):
        self.calls = []
        self.running = False

    def state(self):
        from core.prepare import PreparationState

        return PreparationState(running=self.running, fraction=0.25, message="5/23 /ood", total=23)

    def start(self, actor):
        self.calls.append(("start", actor.teacher))
        self.running = True

    def cancel(self, actor):
        self.calls.append(("cancel", actor.teacher))


def test_only_the_teacher_sees_prepare_for_class_with_its_bar_and_cancel(small_models, monkeypatch):
    import app.prepare

    fake = FakePreparation()
    monkeypatch.setattr(app.prepare, "preparation", lambda: fake)
    student = class_page(teacher=False)
    assert not [b for b in student.button if b.key in ("prepare_start", "prepare_cancel")]
    assert "Teacher: prepare for class" not in [e.label for e in student.expander]
    at = class_page()
    at.button(key="prepare_start").click().run()
    assert fake.calls == [("start", True)]
    assert not at.exception, at.exception
    bars = at.get("progress")
    assert bars and "5/23 /ood" in bars[0].proto.text
    at.button(key="prepare_cancel").click().run()
    assert fake.calls == [("start", True), ("cancel", True)]
