"""Teacher and students in core: the teacher key (set, or made once and kept private), the
teacher-only actions refused to a student, and the throttle of wrong keys on a fake clock."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch

from core.classroom.drawings import check_class_code, new_class_code
from core.classroom.export import csv_png_zip
from core.classroom.store import ClassStore
from core.classroom.teacher import clear_class, export_class
from core.jobs.owners import Visitor
from core.roles import (
    KEY_FILE,
    TEACHER_ONLY,
    KeyThrottle,
    TeacherKeyUnavailable,
    TooManyGuesses,
    is_teacher_key,
    key_file,
    require_teacher,
    stored_key,
    teacher_key,
    wait_text,
)
from core.studies.training_speed_runs import result_filename, save_shared_result

ROOT = Path(__file__).resolve().parents[2]
STUDENT, TEACHER = Visitor("anna"), Visitor("ben", teacher=True)


@pytest.fixture
def no_key(tmp_path, monkeypatch) -> Path:
    """No BNN_TEACHER_KEY and an empty data folder: the key is made there."""
    monkeypatch.delenv("BNN_TEACHER_KEY")
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "data"))
    return tmp_path / "data"


def test_a_set_key_is_used_as_written(monkeypatch, tmp_path):
    monkeypatch.setenv("BNN_TEACHER_KEY", "s3cret")
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path))
    key = teacher_key()
    assert key.value == "s3cret" and not key.generated
    assert is_teacher_key("s3cret") and is_teacher_key(" s3cret ")
    assert not is_teacher_key("s3cre") and not is_teacher_key("") and not is_teacher_key("S3CRET")
    assert not (tmp_path / KEY_FILE).exists()  # nothing made


def test_without_a_key_one_is_made_once_kept_private_and_reused(no_key):
    key = teacher_key()
    path = key_file()
    assert key.generated and key.source == str(path) and path.parent == no_key
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # the server's user only
    assert path.read_text() == key.value + "\n"
    groups = key.value.split("-")
    assert [len(g) for g in groups] == [5, 5, 5, 5] and key.value.islower()
    assert teacher_key() == key  # a later start reuses it: the teacher's note stays valid
    assert is_teacher_key(key.value) and not is_teacher_key("")
    assert [p.name for p in no_key.iterdir() if p.name.endswith(".tmp")] == []
    assert stored_key(path) == key.value  # what a later start reads
    path.write_text("")
    assert teacher_key() == key  # made once per process: a running server keeps its key
    fresh = stored_key(path)  # a later start finds the file emptied: a new key, kept again
    assert fresh and fresh != key.value and path.read_text() == fresh + "\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_processes_starting_at_once_agree_on_one_key(no_key):
    script = "from core.roles import teacher_key; print(teacher_key().value)"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    keys = {proc.communicate(timeout=60)[0].strip() for proc in procs}
    assert len(keys) == 1 and keys == {key_file().read_text().strip()}


def test_a_data_folder_that_cannot_keep_the_key_says_so_in_one_line(tmp_path, monkeypatch):
    monkeypatch.delenv("BNN_TEACHER_KEY")
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("BNN_DATA_DIR", str(blocker))
    with pytest.raises(TeacherKeyUnavailable, match="set BNN_TEACHER_KEY") as info:
        is_teacher_key("anything")
    assert "\n" not in str(info.value)


def test_the_server_prints_a_made_key_once_at_start(no_key, capsys):
    from app.serve import announce_teacher_key

    announce_teacher_key()
    key = teacher_key().value
    out = capsys.readouterr().out
    assert out.count(key) == 1 and out.startswith(f"Teacher key: {key} (enter it on the Class")
    announce_teacher_key()  # a restart: the same key
    assert key in capsys.readouterr().out


def test_a_set_key_is_not_echoed(monkeypatch, capsys):
    from app.serve import announce_teacher_key

    monkeypatch.setenv("BNN_TEACHER_KEY", "s3cret")
    announce_teacher_key()
    out = capsys.readouterr().out
    assert "s3cret" not in out and "the one set in BNN_TEACHER_KEY" in out


def test_teacher_only_actions_refuse_a_student_with_one_line():
    for action, what in TEACHER_ONLY.items():
        with pytest.raises(PermissionError, match=f"^only the teacher can {what}$"):
            require_teacher(STUDENT, action)
        require_teacher(TEACHER, action)
    with pytest.raises(KeyError):
        require_teacher(TEACHER, "format_the_disk")


def drawing() -> torch.Tensor:
    image = torch.zeros(28, 28)
    image[4:24, 12:16] = 1.0
    return image


def test_a_student_can_neither_export_nor_clear_a_class():
    store = ClassStore()
    ids = [store.submit(drawing(), 1, "physics-3b", str(uuid.uuid4())) for _ in range(2)]
    with pytest.raises(PermissionError, match="only the teacher can export"):
        export_class(STUDENT, "physics-3b", csv_png_zip, None)
    with pytest.raises(PermissionError, match="only the teacher can clear"):
        clear_class(STUDENT, "physics-3b", None, None)
    assert store.count("physics-3b") == 2  # nothing deleted
    assert export_class(TEACHER, "physics-3b", csv_png_zip, None)[:2] == b"PK"
    assert clear_class(TEACHER, "physics-3b", ids[0], None) == 1
    assert store.records("physics-3b")[0].id == ids[1]


def test_saving_a_run_is_the_teachers_and_never_replaces_a_saved_one(tmp_path):
    result = {"device": "cpu (1 thread)", "date": "2026-12-04T10:00:00+00:00", "timings": []}
    with pytest.raises(PermissionError, match="only the teacher can save"):
        save_shared_result(STUDENT, result, tmp_path)
    assert list(tmp_path.iterdir()) == []
    first = save_shared_result(TEACHER, result, tmp_path)
    second = save_shared_result(TEACHER, result | {"timings": [1]}, tmp_path)
    assert first.name == result_filename(result) == "cpu-1-thread-2026-12-04.json"
    assert second.name == "cpu-1-thread-2026-12-04-2.json"
    assert json.loads(first.read_text())["timings"] == []  # the first run is kept


def test_class_codes_have_no_default_and_fresh_ones_are_readable():
    for missing in (None, "", "  "):
        with pytest.raises(ValueError, match="no class code"):
            check_class_code(missing)
    codes = {new_class_code() for _ in range(50)}
    assert len(codes) > 40
    for code in codes:
        assert check_class_code(code) == code
        adjective, animal, number = code.split("-")
        assert adjective.isalpha() and animal.isalpha() and len(number) == 2


# --- the throttle, on a fake clock ---------------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def wrong() -> bool:
    return False


def test_wrong_keys_wait_longer_and_longer_and_a_refused_try_is_not_checked():
    clock = Clock()
    throttle = KeyThrottle(free=3, first_wait_s=5, longest_wait_s=40, clock=clock)
    for _ in range(3):
        assert throttle.guess("anna", wrong) is False
    waits, checked = [], []
    for _ in range(5):
        waits.append(throttle.wait_s("anna"))
        with pytest.raises(TooManyGuesses, match="try again in") as info:
            throttle.guess("anna", lambda: checked.append(1) or True)
        assert checked == [] and info.value.wait_s == waits[-1]  # not even checked
        clock.now += waits[-1]
        assert throttle.guess("anna", wrong) is False
    assert waits == [5, 10, 20, 40, 40]  # doubling, up to the longest wait
    assert throttle.wait_s("ben") == 0  # another browser is not held up by one
    clock.now += 40
    assert throttle.guess("anna", lambda: True) is True  # the right key, once it may try
    assert throttle.wait_s("anna") == 0
    assert throttle.guess("anna", wrong) is False and throttle.wait_s("anna") == 0  # afresh


def test_many_browsers_together_are_throttled_too():
    """A private window is a new browser identity: the server-wide count still holds it."""
    clock = Clock()
    throttle = KeyThrottle(free=3, overall_free=6, first_wait_s=5, clock=clock)
    for i in range(6):  # two guesses per private window, never three
        assert throttle.guess(f"window-{i // 2}", wrong) is False
    assert throttle.wait_s("window-99") == 5  # a fresh window waits as well
    with pytest.raises(TooManyGuesses):
        throttle.guess("window-99", lambda: True)
    clock.now += 5
    assert throttle.guess("window-99", wrong) is False
    assert throttle.wait_s("window-100") == 10


def test_wrong_keys_are_forgotten_after_a_quiet_hour_and_identities_are_bounded():
    clock = Clock()
    throttle = KeyThrottle(free=2, first_wait_s=5, forget_s=3600, most_identities=3, clock=clock)
    throttle.guess("anna", wrong)
    throttle.guess("anna", wrong)
    assert throttle.wait_s("anna") == 5
    clock.now += 3601
    assert throttle.wait_s("anna") == 0
    throttle.guess("anna", wrong)
    assert throttle.wait_s("anna") == 0  # counting from one again
    for name in ("b", "c", "d"):
        throttle.guess(name, wrong)
    assert "anna" not in throttle._by_identity and len(throttle._by_identity) == 3


def test_waits_are_said_in_seconds_then_minutes():
    assert [wait_text(s) for s in (0.2, 5, 59.1, 119, 120, 899.5)] == [
        "1 s",
        "5 s",
        "60 s",
        "119 s",
        "2 min",
        "15 min",
    ]
