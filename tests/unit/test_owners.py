"""Owners and limits of training jobs and user models: a student acts only on their own, the
teacher and the command line on all; also without a key set (the server makes one)."""

from __future__ import annotations

import pytest

from core.jobs import JobQueue, JobStatus, make_request
from core.jobs.limits import LimitError
from core.jobs.owners import Visitor, delete_model, model_owner, rename_model
from core.jobs.queue import NOBODY
from core.methods import ModelConfig, build_model
from core.storage.checkpoints import save_checkpoint
from tests.unit.test_jobs import Gate, wait_for

ANNA, BEN = Visitor("anna"), Visitor("ben")
TEACHER = Visitor("ben", teacher=True)
SMALL = {"n_train": 1000, "epochs": 2}


@pytest.fixture
def shared(monkeypatch):
    monkeypatch.setenv("BNN_TEACHER_KEY", "s3cret")


@pytest.fixture
def queue(tmp_path):
    gate = Gate()
    queue = JobQueue(workers=1, threads=1, runner=gate, directory=tmp_path)
    yield queue
    gate.release.set()
    queue.shutdown()


def test_only_the_owner_or_the_teacher_cancels_a_job_on_a_shared_server(shared, queue):
    running = queue.submit(make_request("annas", "mlp", **SMALL), ANNA)
    waiting = queue.submit(make_request("annas_next", "mlp", **SMALL), ANNA)
    wait_for(lambda: queue.get(running).status is JobStatus.RUNNING)
    assert queue.get(running).owner == "anna"
    for job in (running, waiting):
        with pytest.raises(PermissionError, match="another student"):
            queue.cancel(job, BEN)
        assert queue.get(job).status.active  # untouched
    assert queue.cancel(waiting, ANNA)
    assert queue.cancel(running, TEACHER)
    wait_for(lambda: queue.get(running).status is JobStatus.CANCELLED)


def test_without_a_teacher_key_owners_still_hold_and_the_command_line_acts_on_all(
    queue, tmp_path, monkeypatch
):
    monkeypatch.delenv("BNN_TEACHER_KEY")  # the default: the server makes a key
    monkeypatch.setenv("BNN_DATA_DIR", str(tmp_path / "data"))
    first = queue.submit(make_request("annas", "mlp", **SMALL), ANNA)
    second = queue.submit(make_request("annas_next", "mlp", **SMALL), ANNA)
    with pytest.raises(PermissionError, match="another student"):
        queue.cancel(second, BEN)
    assert queue.cancel(second, NOBODY) and queue.cancel(first, NOBODY)


def test_limits_refuse_too_many_jobs_and_too_large_ones_with_one_line(queue, monkeypatch):
    monkeypatch.setenv("BNN_JOBS_PER_VISITOR", "2")
    for name in ("a1", "a2"):
        queue.submit(make_request(name, "mlp", **SMALL), ANNA)
    with pytest.raises(LimitError, match="2 jobs queued or running"):
        queue.submit(make_request("a3", "mlp", **SMALL), ANNA)
    queue.submit(make_request("b1", "mlp", **SMALL), BEN)  # another student's own allowance
    with pytest.raises(LimitError, match=r"12,000,000 images .* at most 1,000,000"):
        queue.submit(make_request("huge", "mlp", epochs=200), BEN)  # 200 × 60,000
    assert [j.request.name for j in queue.jobs()] == ["a1", "a2", "b1"]


def test_models_record_their_owner_and_only_they_or_the_teacher_change_them(shared, tmp_path):
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    save_checkpoint("annas", model, {"dataset": "mnist", "owner": "anna"}, tmp_path)
    save_checkpoint("old", model, {"dataset": "mnist"}, tmp_path)  # before owners
    assert model_owner("annas", tmp_path) == "anna"
    for act in (
        lambda v: rename_model(v, "annas", "mine", tmp_path),
        lambda v: delete_model(v, "annas", tmp_path),
        lambda v: delete_model(v, "old", tmp_path),
    ):
        with pytest.raises(PermissionError, match="another student"):
            act(BEN)
    assert (tmp_path / "annas.pt").exists() and (tmp_path / "old.pt").exists()
    assert rename_model(ANNA, "annas", "mine", tmp_path).stem == "mine"
    delete_model(TEACHER, "old", tmp_path)
    delete_model(ANNA, "mine", tmp_path)
    assert not list(tmp_path.glob("*.pt"))


def test_the_browser_token_is_the_same_under_every_mask():
    from app.ui import browser_token

    def cookie(token: bytes, mask: bytes) -> str:
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(token))
        return f"2|{mask.hex()}|{masked.hex()}|1795630725"

    token = bytes.fromhex("14c15fbb25a3")
    first = browser_token(cookie(token, b"\x04\xb2\x14\x26"))
    assert first == browser_token(cookie(token, b"\x99\x01\x02\x03")) and len(first) == 16
    assert browser_token(cookie(bytes.fromhex("15c15fbb25a3"), b"\x04\xb2\x14\x26")) != first
    assert browser_token("") == browser_token("garbage") == browser_token("1|ab|cd|1") == ""
