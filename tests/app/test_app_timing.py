"""Headless tests of the Timing page: saved results, the labelled reference, a tiny run."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import torch
from streamlit.testing.v1 import AppTest

import core.storage.checkpoints
from app.figures.timing import run_label
from core.catalogue import REGISTRY
from core.methods import build_model
from core.storage.checkpoints import save_checkpoint
from core.studies.training_speed_goals import fits, goals, speedups
from core.studies.training_speed_runs import REFERENCE_FILE, RUNS, result_filename, save_result
from tests.conftest import TEACHER_KEY

ROOT = Path(__file__).resolve().parents[2]
PAGE = str(ROOT / "pages" / "timing.py")


def fake_result(device: str, date: str, seconds_per_sample: float) -> dict:
    """A saved-result dict with synthetic timings (no benchmark is run)."""
    timings = [
        {
            "impl": impl,
            "samples": s,
            "step_seconds": t / 469,
            "epoch_seconds": t,
            "repeat_step_seconds": [t / 469],
        }
        for s in (1, 2, 4, 8)
        for impl, t in (
            ("sequential", 2 + seconds_per_sample * s),
            ("vmap", 3 + 0.5 * seconds_per_sample * s),
            ("vmap_lrt", 4 + 0.1 * seconds_per_sample * s),
        )
    ]
    mlp = {"impl": "mlp", "samples": None, "step_seconds": 0.002, "epoch_seconds": 0.9}
    result = {
        "schema": 1,
        "reference": False,
        "task": "mnist",
        "device": device,
        "date": date,
        "data": "mnist",
        "timings": timings,
        "mlp": mlp,
        "fits": fits(timings),
        "speedups": speedups(timings),
    }
    result["goals"] = goals(result)
    return result


@pytest.fixture
def bench_folder(tmp_path, monkeypatch):
    """A folder of stored timing runs: two saved runs and the committed reference."""
    shipped = RUNS.path(REFERENCE_FILE)
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    RUNS.folder.mkdir()
    shutil.copy(shipped, RUNS.folder)
    save_result(fake_result("cpu (2 threads)", "2026-11-20T10:00:00+00:00", 10.0))
    save_result(fake_result("NVIDIA H100", "2026-11-21T10:00:00+00:00", 1.0))
    return RUNS.folder


def run_page() -> AppTest:
    """The page on its own, run once: it must render without an exception."""
    at = AppTest.from_file(PAGE, default_timeout=60).run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Training speed"
    return at


def shown_text(at: AppTest) -> str:
    """Everything the page wrote: text, tables' cells and the options' labels."""
    texts = [e.value for kind in ("markdown", "caption", "info", "subheader") for e in at.get(kind)]
    cells = [d.value.to_string() + " ".join(map(str, d.value.columns)) for d in at.dataframe]
    options = [o for m in at.multiselect for o in m.options]  # their labels
    return " ".join(texts + cells + options)


def assert_student_text(at: AppTest) -> None:
    """No file names, issue numbers, empty values or ISO timestamps reach the students."""
    text = shown_text(at)
    for word in (".json", "issue", "None", "null", "threads)", "report seed"):
        assert word not in text, word
    assert not re.search(r"\bnan\b", text, re.IGNORECASE)
    assert not re.search(r"\dT\d\d:", text)


def fit_table(at: AppTest):
    """The saved runs' table of fitted lines (one row per run and implementation)."""
    return next(d.value for d in at.dataframe if "run" in d.value.columns)


def test_saved_runs_and_reference_render_without_benchmarking(bench_folder):
    at = run_page()
    saved = at.multiselect(key="timing_saved")
    assert saved.value == ["nvidia-h100-2026-11-21.json"]  # newest first; the file is a key
    assert len(saved.options) == 2  # the reference is not offered as one of our runs
    assert saved.options == ["NVIDIA H100 · 21 Nov 2026", "CPU, 2 threads · 20 Nov 2026"]
    assert "timing_result" not in at.session_state  # nothing was run
    table = fit_table(at)
    assert len(table) == 6 and table["run"].str.startswith("Published").sum() == 3
    ref_rows = table[table["run"].str.contains("A100")]
    assert sorted(float(v) for v in ref_rows["s per epoch per extra sample"]) == [0.8, 4.1, 8.8]
    assert (ref_rows["fixed s per epoch (fitted)"] == "–").all()  # not measured: a dash
    assert any("not measured by this lab" in c.value for c in at.caption)
    assert_student_text(at)

    saved.set_value(["nvidia-h100-2026-11-21.json", "cpu-2-threads-2026-11-20.json"]).run()
    assert not at.exception, at.exception
    table = fit_table(at)
    assert len(table) == 9 and table["run"].nunique() == 3
    assert "CPU, 2 threads · 20 Nov 2026" in set(table["run"])
    assert_student_text(at)


def test_gpu_rows_with_and_without_cuda_graphs_beside_the_cpu(bench_folder):
    gpu = fake_result("NVIDIA H100", "2026-11-26T10:00:00+00:00", 0.1)
    eager = fake_result("NVIDIA H100", "2026-11-26T10:00:00+00:00", 1.0)
    gpu |= {"device_type": "cuda", "cuda_graphs": True, "eager": eager}
    save_result(gpu, bench_folder)
    at = run_page()
    table = next(d.value for d in at.dataframe if "steps" in d.value.columns)
    assert list(table["device"]) == ["CPU, 2 threads", "NVIDIA H100", "NVIDIA H100"]
    assert list(table["steps"]) == ["eager", "CUDA graphs", "eager"]  # the newest H100 run
    lrt = table["BBB vmap + LRT, S = 1"].tolist()
    assert lrt[1:] == ["4.01 s", "4.10 s"]  # the graph row, then the eager one
    assert (table["BBB sequential, S = 10"] == "–").all()  # not measured at S = 10
    assert_student_text(at)
    at.radio(key="timing_device_prior").set_value("mixture").run()
    assert any("No saved MNIST runs" in i.value for i in at.info)


def test_a_shipped_model_trained_on_a_gpu_is_listed_beside_the_papers_error(
    bench_folder, tmp_path, monkeypatch
):
    """Listed from the checkpoints' metadata: a model trained on a GPU, not one on the CPU."""
    monkeypatch.setattr(core.storage.checkpoints, "CHECKPOINT_DIR", tmp_path / "checkpoints")
    cpu = {"device": "cpu (1 thread)", "epochs": 16, "train_seconds": 480.0, "test_error": 0.0164}
    save_checkpoint("mlp", build_model(REGISTRY["mlp"].model), {"dataset": "mnist", **cpu})
    at = run_page()
    assert not any("Shipped models trained on a GPU" in m.value for m in at.markdown)
    gpu = {"device": "NVIDIA H200", "epochs": 600, "train_seconds": 113.0, "test_error": 0.0149}
    model = build_model(REGISTRY["bbb_mixture"].model)
    save_checkpoint("bbb_mixture", model, {"dataset": "mnist", **gpu})
    at = run_page()
    assert any("Shipped models trained on a GPU" in m.value for m in at.markdown)
    table = next(d.value for d in at.dataframe if "published (%)" in d.value.columns)
    assert list(table["model"]) == ["BBB (scale-mixture prior)"]
    row = table.iloc[0]
    assert row["epochs"] == "600" and row["published (%)"] == "1.36"
    assert row["test error (%)"] == "1.49" and row["device"] == "NVIDIA H200"


def test_an_empty_folder_says_so_in_plain_words(tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    at = run_page()
    assert any("no saved timing runs" in i.value for i in at.info)
    assert not any("python -m" in i.value for i in at.info)
    assert at.multiselect(key="timing_saved").options == []


def server_threads(at: AppTest) -> int:
    """The thread count the page says the run uses (the script thread's own setting)."""
    found = [re.search(r"server's (\d+) CPU threads?", c.value) for c in at.caption]
    return int(next(m for m in found if m).group(1))


def test_both_tasks_are_offered_on_the_servers_threads(bench_folder):
    at = run_page()
    assert at.radio(key="timing_task").options == ["MNIST classification", "1-D regression"]
    assert not any("coming" in e.value for e in (*at.info, *at.caption, *at.markdown))
    number_inputs = [n.key for n in at.number_input]
    assert number_inputs == ["timing_steps", "timing_rounds"]  # no per-request thread count
    assert server_threads(at) >= 1
    assert not at.button(key="timing_run").disabled
    at.multiselect(key="timing_samples").set_value([]).run()
    assert at.button(key="timing_run").disabled


def test_a_result_in_the_session_is_plotted_with_fits_speedups_and_goals(bench_folder):
    at = AppTest.from_file(PAGE, default_timeout=60)
    at.session_state["timing_result"] = fake_result("cpu (1 thread)", "2026-11-21T12:00:00", 10.0)
    at.run()
    assert not at.exception, at.exception
    fit_table = at.dataframe[0].value
    assert list(fit_table["implementation"]) == ["sequential", "vmap", "vmap + LRT"]
    slopes = [float(v) for v in fit_table["s per epoch per extra sample"]]
    assert slopes == pytest.approx([10.0, 5.0, 1.0])
    assert fit_table["straight-line fit R²"].tolist() == ["1"] * 3
    assert any("this computer's CPU" in c.value or "NVIDIA" in c.value for c in at.caption)
    assert_student_text(at)
    speedups = at.dataframe[1].value
    assert "vmap + LRT" in speedups.columns and list(speedups["S"]) == ["1", "2", "4", "8"]
    said = " ".join(i.value for i in at.info)
    assert "costs 5.6× a plain network's" in said  # the fake run's LRT vs MLP epochs
    assert "goal" not in said


def test_tiny_in_app_run_then_save(bench_folder):
    at = run_page()
    at.multiselect(key="timing_impls").set_value(["vmap_lrt"])
    at.multiselect(key="timing_samples").set_value([1])
    at.number_input(key="timing_steps").set_value(1)
    at.number_input(key="timing_rounds").set_value(1)
    at.checkbox(key="timing_mlp").set_value(False)
    threads = torch.get_num_threads()
    at.button(key="timing_run").click().run()
    assert not at.exception, at.exception
    assert torch.get_num_threads() == threads  # the setting is left alone
    result = at.session_state["timing_result"]
    assert result["threads"] == server_threads(at)  # timed on the threads the page states
    assert [(r["impl"], r["samples"]) for r in result["timings"]] == [("vmap_lrt", 1)]
    with pytest.raises(KeyError):
        at.button(key="timing_save")  # a student may not save into the lab's results
    at.text_input(key="teacher_key").set_value(TEACHER_KEY)
    at.button(key="teacher_sign_in").click().run()
    for _ in range(2):  # a second save keeps the first run
        at.button(key="timing_save").click().run()
        assert not at.exception, at.exception
        assert any("Saved among the lab's results" in s.value for s in at.success)
    assert len(list(bench_folder.glob("*.json"))) == 5
    name = result_filename(result)
    assert {name, name.replace(".json", "-2.json")} <= {p.name for p in bench_folder.iterdir()}
    options = at.multiselect(key="timing_saved").options  # two runs, told apart, no file names
    assert [o for o in options if o.startswith(run_label(result))] == [
        run_label(result),
        f"{run_label(result)} (2)",
    ]
    assert_student_text(at)


def test_tiny_regression_run(bench_folder):
    at = run_page()
    at.radio(key="timing_task").set_value("regression")
    at.multiselect(key="timing_samples").set_value([1, 2])
    at.number_input(key="timing_steps").set_value(1)
    at.number_input(key="timing_rounds").set_value(1)
    at.button(key="timing_run").click().run()
    assert not at.exception, at.exception
    result = at.session_state["timing_result"]
    assert result["task"] == "regression" and result["epoch_steps"] == 1
    assert result["config"]["hidden"] == [100] and result["data"].startswith("blundell")
    assert any("1,000 points" in c.value for c in at.caption)


def test_the_saved_peer_comparison_is_shown_with_its_gradient_check(bench_folder):
    peers = sorted((ROOT / "checkpoints" / "results" / "training_speed").glob("peers-*.json"))
    assert peers, "the repository ships a peer comparison"
    shutil.copy(peers[-1], bench_folder)
    at = run_page()
    assert any("Peers" in h.value for h in at.subheader)
    checks = at.dataframe[-1].value
    assert set(checks["library"]) == {"ours", "bayesian-torch", "blitz"}
    multi = checks[checks["S"].astype(int) > 1].set_index("library")["ρ-gradient rel. error"]
    assert float(multi["ours"]) < 1e-4 < 0.1 < float(multi["bayesian-torch"])  # overwritten noise
    assert any("CPU, 1 thread, 23 Nov 2026" in c.value for c in at.caption)
    assert_student_text(at)
    speeds = at.dataframe[-2].value
    assert len(speeds) >= 3
