"""Training-speed benchmark: line fit, result shape on a tiny configuration, saving, CLI."""

from __future__ import annotations

import argparse
import json
import random

import pytest
import torch

from core.cli import COMMANDS
from core.cli import bench as bench_command
from core.evaluation.linfit import fit_line
from core.studies.training_speed import BenchConfig, run_benchmark
from core.studies.training_speed_goals import fits, goals, slope_speedups, speedups
from core.studies.training_speed_runs import (
    REFERENCE_FILE,
    RUNS,
    load_results,
    result_filename,
    save_result,
)

TINY = BenchConfig(n_samples=(1, 3), steps=2, warmup=1, hidden=(8,), data="random")


def test_fit_line_recovers_an_exact_line():
    fit = fit_line([1, 2, 4, 8], [0.5 + 3 * s for s in (1, 2, 4, 8)])
    assert fit.slope == pytest.approx(3.0) and fit.intercept == pytest.approx(0.5)
    assert fit.r2 == pytest.approx(1.0)


def test_fit_line_on_noisy_data_has_r2_below_one():
    rng = random.Random(0)
    xs = list(range(1, 11))
    fit = fit_line(xs, [2.0 + 1.5 * x + rng.gauss(0, 1.0) for x in xs])
    assert 0.5 < fit.r2 < 1.0
    assert fit.slope == pytest.approx(1.5, abs=0.5)


def test_fit_line_rejects_degenerate_input():
    with pytest.raises(ValueError):
        fit_line([2, 2], [1.0, 3.0])
    with pytest.raises(ValueError):
        fit_line([1, 2], [1.0])
    assert fit_line([1, 2, 3], [4.0, 4.0, 4.0]).r2 == 1.0


@pytest.fixture(scope="module")
def tiny_result():
    return run_benchmark(TINY)


def test_tiny_benchmark_is_well_formed(tiny_result):
    r = tiny_result
    assert json.loads(json.dumps(r)) == r
    assert r["reference"] is False and r["epoch_steps"] == 469 and r["data"] == "random"
    assert {"device", "versions", "date", "config"} <= set(r) and "torch" in r["versions"]
    assert {(t["impl"], t["samples"]) for t in r["timings"]} == {
        (i, s) for i in ("sequential", "vmap", "vmap_lrt") for s in (1, 3)
    }
    for t in [*r["timings"], r["mlp"]]:
        assert t["step_seconds"] > 0
        assert t["epoch_seconds"] == pytest.approx(469 * t["step_seconds"])
    assert set(r["fits"]) == {"sequential", "vmap", "vmap_lrt"}
    assert all(f["r2"] == pytest.approx(1.0) for f in r["fits"].values())  # two points
    assert len(r["speedups"]) == 6
    assert set(r["goals"]) == {"lrt_S1_over_mlp"}  # S = 10 not measured


def test_rounds_progress_and_no_thread_changes():
    seen = []
    config = BenchConfig(
        impls=("vmap_lrt",), n_samples=(2,), steps=1, warmup=0, repeats=3, hidden=(4,)
    )
    threads = torch.get_num_threads()
    result = run_benchmark(config, progress=lambda f, m: seen.append(f))
    assert torch.get_num_threads() == threads and result["threads"] == threads
    modes = 2 if result["cuda_graphs"] else 1  # on CUDA: with graphs and eager
    assert (
        seen[0] == 0.0 and seen[-1] == 1.0 and seen == sorted(seen) and len(seen) == 6 * modes + 1
    )  # 2 points × 3 rounds (× modes) + done
    (row,) = result["timings"]
    assert len(row["repeat_step_seconds"]) == 3
    assert row["step_seconds"] == sorted(row["repeat_step_seconds"])[1]  # the median
    assert result["fits"] == {"vmap_lrt": None}  # one sample count: no line


def test_speedups_fits_and_goals_from_synthetic_timings():
    def row(impl, s, seconds):
        return {"impl": impl, "samples": s, "epoch_seconds": seconds}

    timings = [row("sequential", s, 10.0 * s) for s in (1, 10)]
    timings += [row("vmap_lrt", s, 5.0 + 1.0 * s) for s in (1, 10)]
    f = fits(timings)
    assert f["vmap_lrt"]["slope"] == pytest.approx(1.0)
    assert f["vmap_lrt"]["intercept"] == pytest.approx(5.0)
    assert slope_speedups(f) == pytest.approx({"sequential": 1.0, "vmap_lrt": 10.0})
    by_key = {(r["impl"], r["samples"]): r["speedup"] for r in speedups(timings)}
    assert by_key[("vmap_lrt", 10)] == pytest.approx(100 / 15)
    g = goals({"timings": timings, "mlp": {"epoch_seconds": 1.0}})
    assert g["vmap_lrt_S10_speedup"]["met"] and not g["lrt_S1_over_mlp"]["met"]


def test_config_validation():
    with pytest.raises(ValueError):
        BenchConfig(impls=("loop",))
    with pytest.raises(ValueError):
        BenchConfig(n_samples=(0, 1))
    assert BenchConfig(n_samples=(4, 1, 4)).n_samples == (1, 4)


def test_save_and_load_round_trip(tiny_result, tmp_path):
    path = save_result(tiny_result, tmp_path)
    assert path.name == result_filename(tiny_result)
    prefix = "cuda-" if tiny_result["device_type"] == "cuda" else "cpu-"
    assert path.name.startswith(prefix) and path.name.endswith(f"{tiny_result['date'][:10]}.json")
    (tmp_path / "broken.json").write_text("{not json")
    assert load_results(tmp_path) == {path.name: tiny_result}
    assert not list(tmp_path.glob("*.tmp"))


def test_committed_reference_is_labelled_and_has_no_invented_numbers():
    ref = load_results()[REFERENCE_FILE]
    assert ref["reference"] is True and ref["source"] == "report seed, Tables 1 and 2"
    assert {k: f["slope"] for k, f in ref["fits"].items()} == {
        "sequential": 8.8,
        "vmap": 4.1,
        "vmap_lrt": 0.8,
    }
    assert all(f["intercept"] is None and f["r2"] is None for f in ref["fits"].values())


def test_cli_json(capsys, monkeypatch, tmp_path):
    assert bench_command in COMMANDS
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    parser = argparse.ArgumentParser()
    bench_command.register(parser.add_subparsers())
    args = parser.parse_args(
        "bench --json --save --samples 1,2 --steps 1 --warmup 0 --hidden 4 --data random "
        "--impl vmap,vmap_lrt --no-mlp".split()
    )
    assert args.func(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["mlp"] is None and set(result["fits"]) == {"vmap", "vmap_lrt"}
    assert [p.name for p in RUNS.folder.iterdir()] == [result_filename(result)]
    assert RUNS.folder == tmp_path / "training_speed"
    assert "vmap_lrt" in bench_command.format_result(result)


def test_mnist_batches_come_from_load_dataset(monkeypatch):
    import core.data

    calls = []

    def fake_load(name, split):
        calls.append((name, split))
        return torch.rand(500, 1, 28, 28), torch.randint(0, 10, (500,))

    monkeypatch.setattr(core.data, "load_dataset", fake_load, raising=False)
    config = BenchConfig(impls=("vmap",), n_samples=(1,), steps=1, warmup=1, hidden=(4,))
    result = run_benchmark(config)
    assert calls == [("mnist", "train")] and result["data"] == "mnist"


def test_regression_task_times_the_three_estimators_on_a_1d_network():
    from core.engine.interface import ModelConfig
    from core.engine.objective import LIKELIHOODS, minibatch_objective
    from core.methods import build_model
    from core.studies.training_speed import regression_config

    config = regression_config(n_samples=(1, 2), steps=1, warmup=0, repeats=1, hidden=(8,))
    result = run_benchmark(config)
    assert result["task"] == "regression" and result["epoch_steps"] == 1
    assert {(t["impl"], t["samples"]) for t in result["timings"]} == {
        (i, s) for i in ("sequential", "vmap", "vmap_lrt") for s in (1, 2)
    }
    # the Gaussian likelihood: the three estimators agree on the same noise
    torch.manual_seed(0)
    model = build_model(ModelConfig(kind="bbb", hidden=(8,), in_features=1, num_classes=1))
    x, y = torch.rand(16, 1), torch.rand(16)
    noise = model.draw_noise(3, 16, lrt=False)
    seq, vec = (
        minibatch_objective(model, x, y, n_samples=3, impl=impl, noise=noise, likelihood="gaussian")
        for impl in ("sequential", "vmap")
    )
    assert torch.allclose(seq.loss, vec.loss, rtol=1e-5)
    out = model.forward_with_kl(x, [{k: v[0] for k, v in n.items()} for n in noise], lrt=False)[0]
    direct = 0.5 * ((out[:, 0] - y) / 0.1) ** 2 + torch.log(torch.tensor(0.1)) + 0.9189385
    assert torch.allclose(LIKELIHOODS["gaussian"].nll(out, y), direct, atol=1e-5)
    with pytest.raises(ValueError, match="likelihood"):
        minibatch_objective(model, x, y, impl="vmap", likelihood="gaussian", alpha=0.5)
