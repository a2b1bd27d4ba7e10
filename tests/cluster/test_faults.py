"""Faults a classroom or a careless user can cause, one test (or a few) per defect of issue 22.

Each test reproduces the probe that found the defect: overlapping reruns and the process-wide
thread count, a small file holding a huge image, a training run killed mid-way, a damaged
checkpoint, user text rendered as Markdown, a server open to every network. New faults go here.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import tomllib
from pathlib import Path

import pytest
import torch
from PIL import Image
from streamlit.testing.v1 import AppTest

import core.catalogue
import core.storage.checkpoints
from app import ui
from core.atomic import (
    STALE_SECONDS,
    atomic_write_text,
    remove_stale_temporaries,
    writer_tag,
)
from core.catalogue import REGISTRY
from core.data import DatasetUnavailable, load_dataset
from core.engine.sampler import predictive_samples
from core.evaluation.uncertainty import summarize
from core.methods import build_model
from core.paths import REPO_ROOT, data_search_path
from core.storage.checkpoints import CheckpointError, save_checkpoint
from tests.app.test_app_draw import MAIN

SHIPPED = REPO_ROOT / "checkpoints"


def run_cli(
    *args: str, env: dict | None = None, timeout: float = 300
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "core", *args],
        cwd=REPO_ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def untrained_models(tmp_path, monkeypatch):
    """Small untrained BBB, MLP and dropout checkpoints in place of checkpoints/, and the
    "I don't know" thresholds made instant (they are not what these tests probe)."""
    import core.studies.evaluations as evaluations

    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path)
    monkeypatch.setattr(evaluations, "evaluation_jobs", lambda *args, **kwargs: [])
    limits = {"p90": 0.5, "p99": 1.5}
    monkeypatch.setattr(
        evaluations, "rejection_thresholds", lambda *a, **k: dict.fromkeys(SCORE_NAMES, limits)
    )
    for name in ("bbb_gaussian", "mlp", "dropout_mlp"):
        save_checkpoint(name, build_model(REGISTRY[name].model), {"note": "untrained"})
    return tmp_path


SCORE_NAMES = (
    "predictive_entropy",
    "mutual_information",
    "expected_entropy",
    "variation_ratio",
    "max_prob",
    "softmax_std",
)


# --- 1. no request changes the process-wide thread count ----------------------------------


def test_overlapping_per_input_predictions_leave_the_thread_count_alone():
    """What the Draw page does per model and rerun, from 8 sessions at once."""
    model = build_model(REGISTRY["bbb_gaussian"].model).eval().requires_grad_(False)
    before = torch.get_num_threads()
    torch.set_num_threads(3)  # a value no code would pick by itself
    start, errors = threading.Barrier(8), []

    def session() -> None:
        try:
            start.wait()
            for _ in range(20):
                summarize(predictive_samples(model, torch.rand(1, 1, 28, 28), 100))
        except Exception as exc:  # reported below
            errors.append(repr(exc))

    sessions = [threading.Thread(target=session) for _ in range(8)]
    try:
        for s in sessions:
            s.start()
        for s in sessions:
            s.join()
        assert errors == [] and torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(before)


def test_every_run_applies_the_one_start_up_thread_policy(untrained_models, monkeypatch):
    """Only the start-up value is ever set (by every script run, before model work), never a
    saved-and-restored one; 1 thread per computation unless BNN_TORCH_THREADS says otherwise."""
    from app.main import DEFAULT_THREADS

    calls = []
    real = torch.set_num_threads
    monkeypatch.setattr(torch, "set_num_threads", lambda n: (calls.append(n), real(n)))
    monkeypatch.delenv("BNN_TORCH_THREADS", raising=False)
    before = torch.get_num_threads()
    try:
        at = AppTest.from_file(MAIN, default_timeout=120).run()
        at.switch_page("../pages/draw.py").run()
        at.session_state["draw_canvas"] = {}
        at.run()
    finally:
        real(before)
    assert calls and set(calls) == {DEFAULT_THREADS} and DEFAULT_THREADS == 1


def test_no_page_or_shared_module_sets_torch_threads():
    offenders = [
        str(path.relative_to(REPO_ROOT))
        for folder in ("app", "pages", "core/studies", "core/engine", "core/evaluation")
        for path in (REPO_ROOT / folder).rglob("*.py")
        if "set_num_threads" in path.read_text() and path.name != "main.py"
    ]
    assert offenders == []  # only app/main.py's start-up policy and the CLI's --threads


# --- 2. a small file with a huge image ------------------------------------------------------


def png_file(tmp_path: Path, size: int, mode: str = "RGBA") -> Path:
    image = Image.new(mode, (size, size), (0, 0, 0, 0)[: len(mode)])
    image.paste(
        (255,) * len(mode), (size // 3, size // 8, size // 3 + size // 10, size - size // 8)
    )
    buf = io.BytesIO()
    image.save(buf, "PNG")
    path = tmp_path / f"{size}.png"
    path.write_bytes(buf.getvalue())
    return path


PEAK_RSS_SCRIPT = """
import importlib.util, sys
# Load the decoder alone (not the core package, whose torch import would dwarf the peak).
spec = importlib.util.spec_from_file_location("upload", "core/data/upload.py")
upload = importlib.util.module_from_spec(spec)
spec.loader.exec_module(upload)


def peak_kb():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1])


data = open(sys.argv[1], "rb").read()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # reset the peak: a child starts with its parent's
before = peak_kb()
try:
    image = upload.read_image(data)
    outcome = f"accepted {image.shape[0]}x{image.shape[1]}"
except upload.ImageError as exc:
    outcome = f"rejected: {exc}"
print(f"{(peak_kb() - before) / 1024:.1f}")
print(outcome)
"""


@pytest.mark.parametrize("side", [4000, 2000])
def test_big_image_uploads_are_rejected_or_decoded_within_50_mb(tmp_path, side):
    path = png_file(tmp_path, side)
    assert path.stat().st_size < 200_000  # a small file ...
    result = subprocess.run(
        [sys.executable, "-c", PEAK_RSS_SCRIPT, str(path)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    growth_mb, outcome = result.stdout.strip().splitlines()
    print(f"{side}x{side} RGBA PNG ({path.stat().st_size} bytes): +{growth_mb} MB, {outcome}")
    assert float(growth_mb) <= 50.0  # ... never costs the server more than ~50 MB
    if side == 4000:
        assert outcome.startswith("rejected") and "megapixels" in outcome
    else:
        assert outcome == "accepted 500x500"  # reduced 4× while decoding


# --- 3 and 4. a killed training run ----------------------------------------------------------


def mnist_available() -> bool:
    try:
        load_dataset("mnist", "test", n_inputs=1)
    except DatasetUnavailable:
        return False
    return True


def ended_pid() -> int:
    """The PID of a process that has ended."""
    return int(
        subprocess.run(
            [sys.executable, "-c", "import os; print(os.getpid())"], text=True, capture_output=True
        ).stdout
    )


@pytest.mark.skipif(not mnist_available(), reason="MNIST unavailable")
def test_killed_training_leaves_shipped_checkpoints_intact_and_no_temporaries(tmp_path):
    shipped = {p.name: sha256(p) for p in SHIPPED.glob("*.pt")}
    data = tmp_path / "data"
    search = os.pathsep.join(str(p) for p in data_search_path())
    env = {
        "BNN_DATA_DIR": str(data),
        "BNN_MODELS_DIR": str(data / "models"),
        "BNN_DATA_PATH": search,
        "PYTHONUNBUFFERED": "1",
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "core", "train", "mlp", "--epochs", "50", "--train-subset", "2000"],
        cwd=REPO_ROOT,
        env={**os.environ, **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    user_model = data / "models" / "mlp.pt"
    try:
        deadline = time.monotonic() + 240
        while not user_model.is_file() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert user_model.is_file(), "no epoch finished in time"
        time.sleep(0.3)  # well into a later epoch (or a save)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert {p.name: sha256(p) for p in SHIPPED.glob("*.pt")} == shipped
    folder = user_model.parent
    dead = ended_pid()
    (folder / f".mlp.pt.{writer_tag()}.{dead}.abcd1234.tmp").write_bytes(b"")  # a writer gone
    atomic_write_text(folder / "note.txt", "the next write")
    assert sorted(p.name for p in folder.iterdir() if p.suffix == ".tmp") == []


def test_promote_replaces_a_shipped_file_only_with_a_loadable_model(tmp_path, monkeypatch):
    shipped, user = tmp_path / "shipped", tmp_path / "user"
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", shipped)
    old = save_checkpoint("mlp", build_model(REGISTRY["mlp"].model), {"v": 1}, shipped)
    before = old.read_bytes()
    (user / "mlp.pt").parent.mkdir()
    (user / "mlp.pt").write_bytes(b"half a model")
    with pytest.raises(core.storage.checkpoints.CheckpointError, match="corrupt"):
        core.catalogue.promote("mlp", user)
    assert old.read_bytes() == before
    new = save_checkpoint("mlp", build_model(REGISTRY["mlp"].model), {"v": 2}, user)
    assert core.catalogue.promote("mlp", user) == old
    assert old.read_bytes() == new.read_bytes() and before != new.read_bytes()
    assert core.storage.checkpoints.read_metadata(old)["v"] == 2


def test_promote_refuses_a_partial_model_new_or_old(tmp_path, monkeypatch):
    shipped, user = tmp_path / "shipped", tmp_path / "user"
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", shipped)
    monkeypatch.setenv("BNN_MODELS_DIR", str(user))
    save_checkpoint("mlp", build_model(REGISTRY["mlp"].model), {"v": 1}, shipped)
    before = {p.name: p.read_bytes() for p in shipped.iterdir()}
    model = build_model(REGISTRY["mlp"].model)
    meta = {"epochs": 1, "epochs_planned": 15}
    path = save_checkpoint("mlp", model, meta, user, complete=False)
    refused = r"mlp.pt: not promoted, its training did not finish \(partial: 1 of 15 epochs\)"
    with pytest.raises(CheckpointError, match=refused) as error:
        core.catalogue.promote("mlp")
    assert "\n" not in str(error.value)
    assert ui.model_title("user:mlp") == "mlp (user-trained, partial: 1 of 15 epochs)"
    # the file: saved after epoch 1 of 15 before completeness was recorded
    old = {"name": "mlp", "epochs": 1, "training": {"epochs": 15}, "test_error": 0.0362}
    atomic_write_text(path.with_suffix(".json"), json.dumps(old))
    with pytest.raises(CheckpointError, match=refused):
        core.catalogue.promote("mlp")
    assert {p.name: p.read_bytes() for p in shipped.iterdir()} == before
    atomic_write_text(path.with_suffix(".json"), json.dumps(old | {"epochs": 15}))
    core.catalogue.promote("mlp")  # an old finished model is still promoted
    assert (shipped / "mlp.pt").read_bytes() == path.read_bytes()


# --- 5. damaged files give one clear line --------------------------------------------------


@pytest.fixture
def damaged_copy(tmp_path) -> Path:
    """A copy of the shipped folder with ``mlp.pt`` truncated to half its size."""
    folder = tmp_path / "checkpoints"
    shutil.copytree(SHIPPED, folder)
    blob = (folder / "mlp.pt").read_bytes()
    (folder / "mlp.pt").write_bytes(blob[: len(blob) // 2])
    return folder


def test_truncated_checkpoint_one_line_exit_1_and_list_marks_it(damaged_copy):
    env = {"BNN_CHECKPOINT_DIR": str(damaged_copy)}
    result = run_cli("evaluate", "--checkpoint", "mlp", "--samples", "1", env=env)
    print(result.stderr)
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in result.stderr
    assert "mlp.pt" in lines[0] and "corrupt or truncated" in lines[0]
    assert "git checkout checkpoints/mlp.pt" in lines[0]
    listing = run_cli("list", env=env)
    assert listing.returncode == 0
    (row,) = [line for line in listing.stdout.splitlines() if line.startswith("mlp ")]
    assert "BROKEN" in row and "corrupt" in row
    healthy = [line for line in listing.stdout.splitlines() if line.startswith("bbb_gaussian")]
    assert "test error" in healthy[0]


def test_malformed_metadata_is_reported_not_ignored(damaged_copy):
    (damaged_copy / "bbb_lrt.json").write_text("{not json")
    listing = run_cli("list", env={"BNN_CHECKPOINT_DIR": str(damaged_copy)})
    (row,) = [line for line in listing.stdout.splitlines() if line.startswith("bbb_lrt")]
    assert "BROKEN" in row and "bbb_lrt.json" in row and "not valid JSON" in row


def test_missing_dataset_is_one_line(tmp_path):
    # 3 passes: not among the shipped evaluations (100 passes), so the test set must be read
    empty = {"BNN_DATA_DIR": str(tmp_path), "BNN_DATA_PATH": "", "BNN_CACHE_DIR": str(tmp_path)}
    result = run_cli("evaluate", "--checkpoint", "mlp", "--samples", "3", env=empty)
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len([line for line in result.stderr.splitlines() if line.strip()]) == 1


# --- 6. user text is never Markdown --------------------------------------------------------


def test_a_markdown_file_name_is_shown_literally(untrained_models):
    at = AppTest.from_file(MAIN, default_timeout=120).run()
    at.switch_page("../pages/draw.py").run()
    at.radio(key="draw_source").set_value("Upload an image").run()
    name = "[click me](http://evil.example) ![x](http://evil.example/x.png) **bold**.png"
    at.file_uploader[0].set_value((name, b"not an image", "image/png")).run()
    assert not at.exception
    assert any(name in t.value for t in at.text)  # shown as plain text, character for character
    rendered = [m.value for m in (*at.markdown, *at.error, *at.caption, *at.info)]
    assert not any("evil.example" in value for value in rendered)


# --- 7. served to this computer only by default --------------------------------------------


def test_server_binds_to_loopback_by_default():
    config = tomllib.loads((REPO_ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["address"] == "127.0.0.1"


# --- 8. an interrupted training run is partial and never promoted ----------------------------


@pytest.fixture
def train_env(tmp_path) -> dict:
    """Environment for ``core train``/``promote`` in ``tmp_path``: an empty user-model folder
    and a copy of the shipped MLP as the shipped folder (what ``promote`` replaces)."""
    shipped = tmp_path / "checkpoints"
    shipped.mkdir()
    for suffix in (".pt", ".json"):
        shutil.copy(SHIPPED / f"mlp{suffix}", shipped)
    return {
        "BNN_DATA_DIR": str(tmp_path / "data"),
        "BNN_DATA_PATH": os.pathsep.join(str(p) for p in data_search_path()),
        "BNN_MODELS_DIR": str(tmp_path / "models"),
        "BNN_CHECKPOINT_DIR": str(shipped),
        "OMP_NUM_THREADS": "1",
        "PYTHONUNBUFFERED": "1",
    }


def train_mlp(*args: str) -> list[str]:
    return ["train", "mlp", "--train-subset", "1000", "--eval-samples", "1", *args]


def user_row(env: dict) -> str:
    listing = run_cli("list", env=env)
    assert listing.returncode == 0, listing.stderr
    (row,) = [line for line in listing.stdout.splitlines() if line.startswith("user:mlp ")]
    return row


def shipped_files(env: dict) -> dict[str, str]:
    return {p.name: sha256(p) for p in Path(env["BNN_CHECKPOINT_DIR"]).iterdir()}


@pytest.mark.skipif(not mnist_available(), reason="MNIST unavailable")
def test_killed_training_is_listed_partial_and_promote_refuses_it(train_env):
    shipped = shipped_files(train_env)
    weights = Path(train_env["BNN_MODELS_DIR"]) / "mlp.pt"
    meta_file = weights.with_suffix(".json")
    process = subprocess.Popen(
        [sys.executable, "-m", "core", *train_mlp("--epochs", "5")],
        cwd=REPO_ROOT,
        env={**os.environ, **train_env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 300
        while not weights.is_file():  # a partial save writes its weights after its metadata
            assert process.poll() is None, "training ended before its first save"
            assert time.monotonic() < deadline, "no epoch finished in time"
            time.sleep(0.05)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
    meta = json.loads(meta_file.read_text())
    assert meta["complete"] is False and meta["epochs_planned"] == 5
    done = meta["epochs"]
    assert 1 <= done < 5
    assert f"partial: {done} of 5 epochs" in user_row(train_env)

    refused = run_cli("promote", "mlp", env=train_env)
    lines = [line for line in refused.stderr.splitlines() if line.strip()]
    assert refused.returncode == 1 and len(lines) == 1, refused.stderr
    assert "not promoted" in lines[0] and f"{done} of 5 epochs" in lines[0]
    assert "python -m core train mlp --resume" in lines[0]
    assert shipped_files(train_env) == shipped

    resumed = run_cli(*train_mlp("--resume"), env=train_env)  # on to the 5 epochs it asked for
    assert resumed.returncode == 0, resumed.stderr
    meta = json.loads(meta_file.read_text())
    assert meta["complete"] is True and meta["epochs"] == 5
    assert [h["epoch"] for h in meta["history"]] == [1, 2, 3, 4, 5]
    assert "partial" not in user_row(train_env)


@pytest.mark.skipif(not mnist_available(), reason="MNIST unavailable")
def test_finished_training_is_complete_and_promoted(train_env):
    trained = run_cli(*train_mlp("--epochs", "2"), env=train_env)
    assert trained.returncode == 0, trained.stderr
    user = Path(train_env["BNN_MODELS_DIR"]) / "mlp.pt"
    meta = json.loads(user.with_suffix(".json").read_text())
    assert meta["complete"] is True and meta["epochs"] == meta["epochs_planned"] == 2
    row = user_row(train_env)
    assert "partial" not in row and "test error" in row
    promoted = run_cli("promote", "mlp", env=train_env)
    assert promoted.returncode == 0, promoted.stderr
    shipped = Path(train_env["BNN_CHECKPOINT_DIR"])
    assert sha256(shipped / "mlp.pt") == sha256(user)
    assert sha256(shipped / "mlp.json") == sha256(user.with_suffix(".json"))


# --- 9. folders shared by several hosts (or PID namespaces) ----------------------------------

LISTER = """
import sys
from pathlib import Path

from core.storage.cache import CacheEntry
from core.storage.user_models import list_user_checkpoints

folder, stop, action = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
entry = CacheEntry(folder / "result.json", "json")
print("ready", flush=True)
calls = 0
while not stop.exists():
    if action == "list":
        list_user_checkpoints(folder)  # what every page's sidebar does
    else:
        entry.save({"call": calls})  # a study's result saved in a shared BNN_CACHE_DIR
    calls += 1
print(calls, flush=True)
"""


def in_another_pid_namespace(command: list[str]) -> list[str]:
    """``command`` run in a new PID namespace (its own ``/proc``), as another host's would be.

    Skips where ``unshare`` is missing or not permitted (not root); fails in CI, which runs as
    root.
    """
    from harness.cluster import missing

    wrapper = ["unshare", "--pid", "--fork", "--mount-proc"]
    try:
        probe = subprocess.run([*wrapper, "true"], capture_output=True, text=True, timeout=30)
    except FileNotFoundError:
        probe = None
    if probe is None or probe.returncode != 0:
        why = "no unshare command" if probe is None else probe.stderr.strip()
        missing(f"cannot start a process in a new PID namespace ({why}); it needs root")
    return [*wrapper, *command]


@pytest.mark.parametrize("action", ["list", "cache"])
def test_saves_beside_another_pid_namespaces_lister_or_writer_never_fail(tmp_path, action):
    """A writer saving in a loop while another namespace's sidebar lists the folder (or saves
    a cached result in it): that process cannot see the writer's, and must not take its
    temporary files for a dead writer's (on the code before issue 60, 951 and 787 of the 1,000
    saves failed so)."""
    folder, stop = tmp_path / "models", tmp_path / "stop"
    folder.mkdir()
    lister = subprocess.Popen(
        in_another_pid_namespace([sys.executable, "-c", LISTER, str(folder), str(stop), action]),
        cwd=REPO_ROOT,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        stdout=subprocess.PIPE,
        text=True,
    )
    model = build_model(REGISTRY["mlp"].model)
    failures = []
    try:
        assert lister.stdout.readline().strip() == "ready"
        for i in range(1000):
            try:
                save_checkpoint("shared", model, {"save": i}, folder)
            except OSError as exc:
                failures.append(repr(exc))
    finally:
        stop.touch()
        calls = lister.communicate(timeout=120)[0]
    print(f"{len(failures)} of 1000 saves failed beside {calls.strip()} calls of {action}")
    assert lister.returncode == 0 and int(calls) > 0
    assert failures == []


def test_only_this_namespaces_dead_writers_files_go_at_once_others_after_an_hour(tmp_path):
    dead = ended_pid()
    alive, here = os.getpid(), writer_tag()
    elsewhere = "w0123456789abcdef-4026531836"  # another host's boot (or another namespace)
    names = {
        f".a.pt.{here}.{dead}.x1.tmp": "gone",  # this namespace, its writer is gone
        f".a.pt.{here}.{alive}.x2.tmp": "kept",  # this namespace, still writing
        f".a.pt.{elsewhere}.{dead}.x3.tmp": "kept",  # cannot be checked from here: by age only
        f".a.pt.r0123456789abcdef.{dead}.x4.tmp": "kept",  # a host without /proc: by age only
        f".a.pt.{dead}.x5.tmp": "kept",  # written before writers were tagged: by age only
        ".notes.tmp": "kept",  # not a temporary file of atomic_write
    }
    for name in names:
        (tmp_path / name).write_bytes(b"")
    old = time.time() - STALE_SECONDS - 60
    for name in (f".a.pt.{elsewhere}.{alive}.y1.tmp", f".a.pt.{dead}.y2.tmp"):
        (tmp_path / name).write_bytes(b"")
        os.utime(tmp_path / name, (old, old))
        names[name] = "gone"  # over an hour old: whoever wrote it is not writing any more
    removed = remove_stale_temporaries(tmp_path)
    assert sorted(p.name for p in removed) == sorted(
        n for n, fate in names.items() if fate == "gone"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        n for n, fate in names.items() if fate == "kept"
    )
