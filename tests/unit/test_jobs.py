"""User training: ad-hoc requests, one run (saved only when finished), the server's job queue
(order, queue positions, cancel, failures, threads), user checkpoints (list, rename, delete,
kill mid-save), the CLI, and the shipped Fashion-MNIST models against their targets."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from dataclasses import replace
from pathlib import Path

import pytest
import torch

import core.jobs.training
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, load_dataset
from core.engine.interface import ModelConfig
from core.jobs import (
    JobQueue,
    JobStatus,
    TrainOutcome,
    make_request,
    run_training,
)
from core.methods import build_model
from core.storage.checkpoints import (
    CheckpointError,
    checkpoint_dataset,
    load_checkpoint,
    read_metadata,
    resolve_checkpoint,
    save_checkpoint,
    user_key,
)
from core.storage.metadata import partial_note
from core.storage.user_models import (
    delete_user_checkpoint,
    list_user_checkpoints,
    rename_user_checkpoint,
    user_title,
)
from core.training import TrainConfig, train

REPO_ROOT = Path(__file__).resolve().parents[2]
FASHION_TARGETS = {"fashion_mlp": 0.110, "fashion_dropout": 0.110, "fashion_bbb_mixture": 0.115}
SMALL = {"hidden": (32,), "n_train": 400, "n_test": 200, "n_eval_samples": 2}


@pytest.fixture
def user_dir(tmp_path, monkeypatch) -> Path:
    """An empty user-model folder (``BNN_MODELS_DIR``)."""
    folder = tmp_path / "models"
    monkeypatch.setenv("BNN_MODELS_DIR", str(folder))
    return folder


@pytest.fixture(scope="module")
def mnist_available() -> None:
    try:
        load_dataset("mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")


def no_temporaries(folder: Path) -> bool:
    return not folder.exists() or not any(p.name.endswith(".tmp") for p in folder.iterdir())


# --- requests ------------------------------------------------------------------------------


def test_make_request_takes_the_kinds_defaults_and_the_given_settings():
    bbb = make_request("my_bbb", "bbb", prior="mixture", beta=1.0, impl="vmap_lrt", epochs=2)
    template = REGISTRY["bbb_gaussian"].training
    params = bbb.model.params
    assert bbb.model.kind == "bbb" and params["prior"] == "mixture"
    assert (params["beta"], bbb.training.epochs, params["impl"]) == (1.0, 2, "vmap_lrt")
    assert bbb.training.lr_decay == template.lr_decay  # unset settings from the shipped BBB
    ensemble = make_request("e", "ensemble", members=3, dataset="fashion_mnist")
    assert ensemble.model.params["members"] == 3
    assert ensemble.dataset == "fashion_mnist"
    laplace = make_request("l", "laplace")
    assert laplace.training.epochs == REGISTRY["mlp"].training.epochs  # trains as the MLP
    epochs = REGISTRY["mlp"].training.epochs
    assert make_request("m", "mlp").describe() == f"mlp on MNIST, {epochs} epochs × all images"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"name": "a b"}, "not a valid model name"),
        ({"name": "../x"}, "not a valid model name"),
        ({"kind": "svm"}, "kind must be one of"),
        ({"dataset": "kmnist"}, "dataset must be one of"),
        ({"n_train": 0}, "n_train must be"),
        ({"colour": "red"}, "unknown settings: colour"),
        ({"kind": "sgld", "temperature": -1}, "temperature must be"),
        ({"kind": "bbb", "impl": "fast"}, "impl must be one of"),
    ],
)
def test_make_request_rejects_bad_input(arguments, message):
    kwargs = {"name": "ok", "kind": "mlp", **arguments}
    with pytest.raises(ValueError, match=message):
        make_request(kwargs.pop("name"), kwargs.pop("kind"), **kwargs)


# --- the training loop's running averages ---------------------------------------------------


def test_step_averages_end_at_the_epoch_averages(mnist_small):
    (xtr, ytr), (xte, yte) = mnist_small
    model = build_model(ModelConfig(kind="bbb", hidden=(16,)))
    steps, epochs = [], []
    config = TrainConfig(epochs=2, batch_size=100, n_eval_samples=2)
    train(
        model,
        config,
        (xtr[:1000], ytr[:1000]),
        (xte[:100], yte[:100]),
        on_step=steps.append,
        on_epoch=epochs.append,
    )
    assert [s.fraction for s in steps] == [0.5, 1.0]  # every 20 steps and at each epoch's end
    for step, epoch in zip(steps, epochs, strict=True):
        assert step.epoch == epoch.epoch
        for key in ("elbo_loss", "nll", "kl", "train_error"):
            assert getattr(step, key) == pytest.approx(getattr(epoch, key), rel=1e-6)


# --- one run -------------------------------------------------------------------------------


def test_finished_run_is_a_user_checkpoint_with_the_shipped_metadata(user_dir, mnist_available):
    request = make_request("tiny", "mlp", epochs=2, **SMALL)
    outcome = run_training(request)
    assert outcome.path == user_dir / "tiny.pt" and not outcome.cancelled
    meta = read_metadata(outcome.path)
    assert meta["dataset"] == "mnist" and meta["epochs"] == 2 and meta["user_trained"]
    assert meta["complete"] is True and partial_note(meta) == ""
    assert meta["test_error"] == outcome.metrics["test_error"]
    assert outcome.metrics["num_examples"] == 10_000  # the saved error: the whole test set
    assert {"nll", "train_seconds", "device", "versions", "date", "training"} <= set(meta)
    assert [h["epoch"] for h in meta["history"]] == [1, 2]
    model, _ = load_checkpoint(user_key("tiny"))
    assert model.config == request.model
    assert resolve_checkpoint("user:tiny") == outcome.path
    (info,) = list_user_checkpoints()
    assert info.available and info.spec.name == "user:tiny"
    assert info.spec.title == "tiny (user-trained)" and info.spec.dataset == "mnist"
    again = run_training(replace(request, owner="anna"))  # never overwrites: a free name
    assert again.path == user_dir / "tiny-2.pt" and outcome.path.is_file()
    assert "owner" not in meta and read_metadata(again.path)["owner"] == "anna"


def test_cancelled_run_saves_nothing(user_dir, mnist_available):
    cancel = threading.Event()
    request = make_request("stopped", "bbb", epochs=3, **SMALL)
    outcome = run_training(request, cancel=cancel, on_epoch=lambda stats: cancel.set())
    assert outcome.cancelled and outcome.path is None and len(outcome.history) == 1
    assert not (user_dir / "stopped.pt").exists() and no_temporaries(user_dir)


def test_queued_jobs_failed_or_cancelled_after_an_epoch_leave_no_model(
    user_dir, mnist_available, monkeypatch
):
    """The queue with the real runner: a job cancelled after its first epoch and one failing in
    its final evaluation (after every epoch) save nothing, not even a partial model."""

    def out_of_memory(*args, **kwargs):
        raise RuntimeError("out of memory")

    queue = JobQueue(workers=1, threads=1, directory=user_dir)
    try:
        # 2,500 epochs (1,000,000 images, the most one job may have): far longer than the test
        # waits, so the job is still running when cancelled
        stopped = queue.submit(make_request("stopped", "mlp", epochs=2500, **SMALL))
        wait_for(lambda: queue.get(stopped).history, timeout=300)
        assert queue.cancel(stopped)
        assert queue.wait(stopped, 300).status is JobStatus.CANCELLED
        monkeypatch.setattr(core.jobs.training, "evaluate_model", out_of_memory)
        failed = queue.wait(queue.submit(make_request("failed", "mlp", epochs=2, **SMALL)), 300)
        assert failed.status is JobStatus.FAILED and len(failed.history) == 2
    finally:
        queue.shutdown()
    assert not user_dir.exists() or list(user_dir.iterdir()) == []


def test_post_hoc_kind_trains_its_network_then_fits(user_dir, mnist_available):
    settings = {**SMALL, "n_train": 2000}
    outcome = run_training(make_request("lap", "laplace", epochs=2, **settings))
    meta = read_metadata(outcome.path)
    assert meta["posterior"]["prior_precision"] > 0
    assert meta["test_error"] < 0.5  # the trained network's weights, not a random start


def test_fashion_run_records_and_uses_its_task(user_dir):
    try:
        load_dataset("fashion_mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"Fashion-MNIST unavailable: {exc}")
    request = make_request("clothes", "bbb", dataset="fashion_mnist", epochs=1, **SMALL)
    outcome = run_training(request)
    assert checkpoint_dataset("user:clothes") == "fashion_mnist"
    assert list_user_checkpoints()[0].spec.title == "clothes (user-trained, Fashion-MNIST)"
    _, labels = load_dataset("fashion_mnist", "test")
    model, _ = load_checkpoint(outcome.path)
    from core.evaluation.metrics import evaluate_model

    images, _ = load_dataset("fashion_mnist", "test")
    torch.manual_seed(0)
    assert evaluate_model(model, images, labels, 2)["num_examples"] == len(labels)


def test_dataset_of_registered_user_and_old_checkpoints(tmp_path, monkeypatch):
    assert checkpoint_dataset("fashion_bbb_mixture") == "fashion_mnist"  # by its spec
    assert checkpoint_dataset("mlp") == "mnist"
    monkeypatch.setenv("BNN_MODELS_DIR", str(tmp_path))
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    save_checkpoint("old", model, {}, tmp_path)  # saved before datasets were recorded
    save_checkpoint("new", model, {"dataset": "fashion_mnist"}, tmp_path)
    assert checkpoint_dataset("user:old") == "mnist"
    assert checkpoint_dataset("user:new") == checkpoint_dataset(tmp_path / "new.pt")
    assert checkpoint_dataset("user:new") == "fashion_mnist"


# --- the queue, with a stand-in runner -------------------------------------------------------


class Gate:
    """A runner that reports progress and waits until released (or cancelled)."""

    def __init__(self, fail: set[str] = frozenset()) -> None:
        self.release = threading.Event()
        self.fail = fail
        self.lock = threading.Lock()
        self.running = 0
        self.most = 0
        self.order: list[str] = []
        self.threads: list[int] = []

    def __call__(self, request, *, progress, on_epoch, on_step, cancel, directory):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.order.append(request.name)
            self.threads.append(torch.get_num_threads())
        try:
            progress(0.5, "half way")
            if request.name in self.fail:
                raise RuntimeError("boom")
            while not self.release.wait(0.01):
                if cancel.is_set():
                    return TrainOutcome(None, True)
            path = Path(directory) / f"{request.name}.pt"
            return TrainOutcome(path, False, metrics={"test_error": 0.1, "nll": 0.3})
        finally:
            with self.lock:
                self.running -= 1


def wait_for(predicate, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


@pytest.fixture
def gated(tmp_path):
    gate = Gate(fail={"broken"})
    queue = JobQueue(workers=1, threads=1, runner=gate, directory=tmp_path)
    yield gate, queue
    gate.release.set()
    queue.shutdown()


def test_jobs_run_one_at_a_time_first_in_first_out(gated):
    gate, queue = gated
    ids = [queue.submit(make_request(name, "mlp")) for name in ("a", "b", "c")]
    wait_for(lambda: queue.get(ids[0]).fraction == 0.5)  # reported within REPORT_S
    assert [queue.position(i) for i in ids] == [None, 1, 2]
    assert queue.get(ids[1]).status is JobStatus.QUEUED
    running = queue.get(ids[0])
    assert running.status is JobStatus.RUNNING and running.eta() is not None and running.started
    gate.release.set()
    assert all(queue.wait(i, 30).status is JobStatus.DONE for i in ids)
    assert gate.order == ["a", "b", "c"] and gate.most == 1
    assert queue.get(ids[2]).metrics["test_error"] == 0.1


def test_more_workers_run_jobs_side_by_side(tmp_path):
    gate = Gate()
    queue = JobQueue(workers=2, threads=1, runner=gate, directory=tmp_path)
    try:
        ids = [queue.submit(make_request(name, "mlp")) for name in ("a", "b", "c")]
        wait_for(lambda: gate.most == 2)
        assert queue.position(ids[2]) == 1
        gate.release.set()
        assert all(queue.wait(i, 30).status is JobStatus.DONE for i in ids)
    finally:
        gate.release.set()
        queue.shutdown()


def test_cancel_removes_a_queued_job_and_stops_a_running_one(gated):
    gate, queue = gated
    first, second = (queue.submit(make_request(n, "mlp")) for n in ("first", "second"))
    wait_for(lambda: queue.get(first).status is JobStatus.RUNNING)
    assert queue.cancel(second) and queue.get(second).status is JobStatus.CANCELLED
    assert queue.position(second) is None
    assert queue.cancel(first)
    assert queue.wait(first, 30).status is JobStatus.CANCELLED
    assert gate.order == ["first"]  # the cancelled queued job never started
    assert not queue.cancel(first)  # ended already


def test_failed_job_is_reported_and_the_next_one_runs(gated):
    gate, queue = gated
    gate.release.set()
    bad, good = (queue.submit(make_request(n, "mlp")) for n in ("broken", "fine"))
    failed = queue.wait(bad, 30)
    assert failed.status is JobStatus.FAILED and failed.error == "RuntimeError: boom"
    assert "RuntimeError" in failed.details
    assert queue.wait(good, 30).status is JobStatus.DONE


def test_names_in_use_are_refused(gated, tmp_path):
    _, queue = gated
    queue.submit(make_request("taken", "mlp"))
    with pytest.raises(ValueError, match="named 'taken' already"):
        queue.submit(make_request("taken", "mlp"))
    (tmp_path / "exists.pt").write_bytes(b"")
    with pytest.raises(ValueError, match="exists already"):
        queue.submit(make_request("exists", "mlp"))


def test_worker_sets_its_own_thread_count_once(tmp_path):
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    torch.ones(64, 64) @ torch.ones(64, 64)  # this thread's count is in use
    gate = Gate()
    gate.release.set()
    queue = JobQueue(workers=1, threads=1, runner=gate, directory=tmp_path)
    try:
        queue.wait(queue.submit(make_request("t", "mlp")), 30)
        assert gate.threads == [1]
        assert torch.get_num_threads() == 2  # with OpenMP the setting is per thread
    finally:
        queue.shutdown()
        torch.set_num_threads(before)


# --- user checkpoints ----------------------------------------------------------------------


def small_user_model(folder: Path, name: str, **meta) -> Path:
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    return save_checkpoint(name, model, {"dataset": "mnist", **meta}, folder)


def test_a_partial_user_model_is_listed_and_titled_as_partial(user_dir):
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    meta = {"dataset": "fashion_mnist", "epochs": 1, "epochs_planned": 15}
    save_checkpoint("half", model, meta, user_dir, complete=False)
    small_user_model(user_dir, "whole")
    half, whole = list_user_checkpoints()
    assert half.available and whole.available
    assert half.spec.title == "half (user-trained, Fashion-MNIST, partial: 1 of 15 epochs)"
    assert user_title("user:half") == half.spec.title
    assert whole.spec.title == user_title("user:whole") == "whole (user-trained)"


def test_rename_and_delete_user_models(user_dir):
    small_user_model(user_dir, "first")
    small_user_model(user_dir, "other")
    path = rename_user_checkpoint("user:first", "second")
    assert path == user_dir / "second.pt" and not (user_dir / "first.pt").exists()
    assert not (user_dir / "first.json").exists()
    assert read_metadata(path)["name"] == "second" and load_checkpoint("user:second")
    with pytest.raises(CheckpointError, match="exists already"):
        rename_user_checkpoint("second", "other")
    with pytest.raises(ValueError, match="not a valid model name"):
        rename_user_checkpoint("second", "bad name!")
    with pytest.raises(CheckpointError, match="no such user-trained model"):
        rename_user_checkpoint("gone", "x")
    delete_user_checkpoint("user:second")
    assert [i.spec.name for i in list_user_checkpoints()] == ["user:other"]
    with pytest.raises(CheckpointError, match="no such user-trained model"):
        delete_user_checkpoint("second")


KILLED_WRITER = textwrap.dedent(
    """
    import sys, time, torch
    from core.engine.interface import ModelConfig
    from core.methods import build_model
    from core.storage.checkpoints import save_checkpoint

    real_save = torch.save

    def slow_save(obj, f):  # write half of the file, then hang until killed
        real_save(obj, f)
        f.flush()
        f.truncate(f.tell() // 2)
        f.flush()
        print("writing", flush=True)
        time.sleep(600)

    torch.save = slow_save
    model = build_model(ModelConfig(kind="mlp", hidden=(8,)))
    folder = __import__("pathlib").Path(sys.argv[1])
    save_checkpoint("victim", model, {"v": 2, "dataset": "mnist"}, folder)
    """
)


def test_killing_the_writer_mid_save_leaves_the_previous_file(user_dir):
    old = small_user_model(user_dir, "victim", v=1)
    before = old.read_bytes()
    process = subprocess.Popen(
        [sys.executable, "-c", KILLED_WRITER, str(user_dir)],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    try:
        assert process.stdout.readline().strip() == "writing"
        assert any(p.name.endswith(".tmp") for p in user_dir.iterdir())
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(30)
    assert old.read_bytes() == before and read_metadata(old)["v"] == 1
    (info,) = list_user_checkpoints()  # also removes the dead writer's temporary file
    assert info.available and no_temporaries(user_dir)


# --- command line --------------------------------------------------------------------------


def cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "OMP_NUM_THREADS": "1", **(env or {})},
        timeout=300,
    )


def test_cli_train_help_gives_each_ad_hoc_settings_default():
    """An ad-hoc model's method settings take the method's defaults, not the registered
    model's (``--kind sgld`` samples at T = 1): the help says which."""
    from core.methods import METHODS

    text = " ".join(cli("train", "--help").stdout.split())
    assert "take their defaults" in text
    assert "Temperature T (default 1.0)" in text
    assert "Weight samples kept (default 5 for ensemble, 8 for sgld, 8 for sgmcmc_cyclic)" in text
    assert f"Implementation (default {METHODS['bbb'].setting('impl').default})" in text


def test_cli_trains_an_adhoc_configuration_and_lists_it(tmp_path, mnist_available):
    env = {"BNN_MODELS_DIR": str(tmp_path)}
    run = cli(
        "train",
        "--kind",
        "bbb",
        "--prior",
        "mixture",
        "--beta",
        "0.5",
        "--epochs",
        "1",
        "--train-subset",
        "300",
        "--eval-samples",
        "1",
        "--name",
        "cli_bbb",
        env=env,
    )
    assert run.returncode == 0, run.stderr
    assert "use it as user:cli_bbb" in run.stdout and "epoch 1:" in run.stdout
    assert "train cli_bbb [" in run.stderr  # the same progress bar
    meta = json.loads((tmp_path / "cli_bbb.json").read_text())
    params = meta["model_config"]["params"]
    assert params["prior"] == "mixture" and params["beta"] == 0.5 and meta["dataset"] == "mnist"
    listing = cli("list", env=env)
    assert listing.returncode == 0
    line = next(s for s in listing.stdout.splitlines() if s.startswith("user:cli_bbb"))
    assert "bbb" in line and "MNIST" in line and "test error" in line
    evaluated = cli("evaluate", "--checkpoint", "user:cli_bbb", "--samples", "1", "--json", env=env)
    assert json.loads(evaluated.stdout)["dataset"] == "mnist"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--kind", "mlp"], "--kind needs --name NAME"),
        (["mlp", "--beta", "0.5"], "--beta: only with --kind"),
        (["mlp", "--kind", "mlp", "--name", "x"], "either a registered name"),
        (["--kind", "mlp", "--name", "bad name"], "not a valid model name"),
        ([], "give a registered name or --kind"),
    ],
)
def test_cli_train_reports_bad_options_in_one_line(tmp_path, args, message):
    run = cli("train", *args, env={"BNN_MODELS_DIR": str(tmp_path)})
    assert run.returncode == 1 and message in run.stderr and "Traceback" not in run.stderr
    assert not list(tmp_path.glob("*.pt"))


# --- shipped Fashion-MNIST models ----------------------------------------------------------


@pytest.mark.parametrize("name", sorted(FASHION_TARGETS))
def test_shipped_fashion_model_meets_its_target(name):
    if not (REPO_ROOT / "checkpoints" / f"{name}.pt").is_file():
        pytest.skip(f"{name} not shipped yet")
    try:
        load_dataset("fashion_mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"Fashion-MNIST unavailable: {exc}")
    run = cli("evaluate", "--checkpoint", name, "--samples", "10", "--json")
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout)
    assert result["dataset"] == "fashion_mnist" and result["n_samples"] == 10
    assert result["test_error"] <= FASHION_TARGETS[name]
