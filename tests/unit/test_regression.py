"""The 1-D regression playground's core: data, likelihoods, metrics against closed forms and
loops, HMC against the conjugate posterior, the methods' qualitative claims, the cache, the CLI."""

from __future__ import annotations

import argparse
import json
import math
import shutil
from dataclasses import fields

import pytest
import torch

from core.cli import regression as cli
from core.methods import METHODS
from core.paths import REPO_ROOT
from core.regression import study
from core.regression.data import (
    MAX_DRAWN_POINTS,
    PRESETS,
    make_data,
    points_from_drawing,
    user_data,
)
from core.regression.hmc import linear_posterior
from core.regression.likelihood import gaussian_nll, mean_and_log_var, output_width
from core.regression.methods import (
    FINAL_LR_FRACTION,
    RegressionNet,
    model_config,
    predict,
    train_network,
)
from core.regression.metrics import (
    Z90,
    Predictive,
    band_difference,
    mixture_nll,
    moments,
    regression_metrics,
    summarize,
)
from core.regression.settings import FitSettings
from core.regression.study import compute_fit, fit_entry, fit_method, load_fit, ship_fit
from core.regression.variants import DEFAULT_METHODS, VARIANTS, offered


@pytest.fixture(autouse=True)
def tmp_cache(tmp_path, monkeypatch):
    """Every test gets its own cache and no shipped references."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(study, "REFERENCE_DIR", tmp_path / "shipped")


# --- data -----------------------------------------------------------------------------------


@pytest.mark.parametrize("preset", list(PRESETS))
def test_presets_are_reproducible_and_drawn_inside_their_intervals(preset):
    a, b = make_data(preset, seed=3), make_data(preset, seed=3)
    assert torch.equal(a.x_train, b.x_train) and torch.equal(a.y_train, b.y_train)
    assert not torch.equal(a.x_train, make_data(preset, seed=4).x_train)
    assert len(a) == PRESETS[preset].default_n_inputs
    assert a.inside(a.x_train).all() and a.inside(a.x_test).all()
    assert not torch.equal(a.x_test[: len(a)], a.x_train)  # held out: an independent draw
    for lo, hi in a.intervals:  # every interval gets points
        assert ((a.x_train >= lo) & (a.x_train <= hi)).any()
    grid = torch.linspace(*a.plot_range, 1000)
    assert 0 < a.inside(grid).float().mean() < 1


def test_blundell_curve_is_the_papers_formula():
    data = make_data("blundell", n_inputs=500, noise=0.0)
    x = data.x_train
    expected = x + 0.3 * torch.sin(2 * math.pi * x) + 0.3 * torch.sin(4 * math.pi * x)
    torch.testing.assert_close(data.y_train, expected)
    assert data.x_train.min() >= 0 and data.x_train.max() <= 0.5
    assert data.plot_range == (-0.5, 1.2)
    # with noise ε the target is f(x + ε): x + 0.3·sin(2π(x+ε)) + 0.3·sin(4π(x+ε)) + ε
    noisy = make_data("blundell", n_inputs=2000, noise=0.02)
    residual = noisy.y_train - data.truth(noisy.x_train)
    slope = 1 + 0.6 * math.pi * torch.cos(2 * math.pi * noisy.x_train)
    slope = slope + 1.2 * math.pi * torch.cos(4 * math.pi * noisy.x_train)
    steep = slope.abs() > 2  # where the first-order expansion divides well
    eps = residual[steep] / slope[steep]  # f(x + ε) − f(x) ≈ f'(x)·ε
    assert abs(eps.std().item() - 0.02) < 0.003


def test_heteroscedastic_noise_grows_as_specified():
    data = make_data("heteroscedastic", n_inputs=2000, noise=0.4)
    residual = data.y_train - data.truth(data.x_train)
    for lo, hi in ((-1.0, -0.6), (-0.2, 0.2), (0.6, 1.0)):
        inside = (data.x_train >= lo) & (data.x_train < hi)
        expected = data.noise_std(data.x_train[inside]).pow(2).mean().sqrt().item()
        assert residual[inside].std().item() == pytest.approx(expected, rel=0.15)
    assert data.noise_std(torch.tensor(1.0)).item() == pytest.approx(0.4)
    assert data.noise_std(torch.tensor(-1.0)).item() == pytest.approx(0.04)


def test_user_points_become_a_data_set_and_bad_ones_are_refused():
    data = user_data([0.1, 0.5, 0.3], [0.0, 1.0, 0.5])
    assert data.intervals == ((pytest.approx(0.1), pytest.approx(0.5)),)
    assert not data.held_out and torch.equal(data.x_test, data.x_train)
    assert data.truth(data.x_train) is None and data.noise_std(data.x_train) is None
    assert user_data([0.1, 0.5], [0, 1]).key != user_data([0.1, 0.5], [0, 2]).key
    with pytest.raises(ValueError, match="at least 2"):
        user_data([0.2, 0.2], [0.0, 1.0])
    with pytest.raises(ValueError, match="same length"):
        user_data([0.1, 0.2], [0.0])
    with pytest.raises(ValueError, match="finite"):
        user_data([0.1, float("nan")], [0.0, 1.0])


def test_drawing_maps_canvas_pixels_onto_the_axes():
    drawing = {
        "objects": [
            {"type": "Circle", "left": 296, "top": 146, "radius": 4, "originX": "left"},
            {
                "type": "Circle",
                "left": 300,
                "top": 150,
                "radius": 4,
                "originX": "center",
                "originY": "center",
            },
            {"type": "Path", "path": [["M", 0, 300], ["Q", 10, 10, 600, 0], ["L", 700, 0]]},
            {"type": "Rect", "left": 5, "top": 5},
        ]
    }
    x, y = points_from_drawing(drawing, 600, 300, x_range=(0.0, 1.0), y_range=(-1.0, 1.0))
    assert x == pytest.approx([0.5, 0.5, 0.0, 1.0])  # the point at x = 700 is off the canvas
    assert y == pytest.approx([0.0, 0.0, -1.0, 1.0])
    long_stroke = {"objects": [{"type": "Path", "path": [["L", i / 10, 5] for i in range(3000)]}]}
    assert len(points_from_drawing(long_stroke, 600, 300)[0]) == MAX_DRAWN_POINTS
    assert points_from_drawing(None, 600, 300) == ([], [])


# --- likelihood and metrics -----------------------------------------------------------------


def test_gaussian_nll_is_the_normal_log_density():
    y, mean, log_var = torch.randn(50), torch.randn(50), torch.randn(50)
    expected = -torch.distributions.Normal(mean, torch.exp(0.5 * log_var)).log_prob(y)
    torch.testing.assert_close(gaussian_nll(y, mean, log_var), expected)


def test_outputs_split_into_mean_and_log_variance():
    out = torch.randn(4, 7, 2)
    mean, log_var = mean_and_log_var(out, "heteroscedastic", 0.0)
    assert torch.equal(mean, out[..., 0]) and torch.equal(log_var, out[..., 1])
    mean, log_var = mean_and_log_var(out[..., :1], "learned", torch.log(torch.ones(4, 1) * 2))
    assert torch.allclose(log_var, torch.full((4, 7), 2 * math.log(2)))
    assert output_width("heteroscedastic") == 2 and output_width("fixed") == 1
    with pytest.raises(ValueError, match="noise_model"):
        output_width("student-t")


def test_mixture_nll_matches_a_loop_over_passes():
    mean, log_var, y = torch.randn(6, 5).double(), torch.randn(6, 5).double(), torch.randn(5)
    y = y.double()
    for j in range(5):
        density = sum(
            math.exp(-gaussian_nll(y[j], mean[p, j], log_var[p, j]).item()) for p in range(6)
        )
        assert mixture_nll(y, mean, log_var)[j].item() == pytest.approx(-math.log(density / 6))


def test_moments_split_the_mixture_variance_by_the_law_of_total_variance():
    torch.manual_seed(0)
    mean, log_var = torch.randn(8, 3), torch.randn(8, 3) - 1
    mu, epistemic, aleatoric = moments(mean, log_var)
    which = torch.randint(8, (200_000, 3))
    cols = torch.arange(3)
    draws = mean[which, cols] + torch.exp(0.5 * log_var[which, cols]) * torch.randn(200_000, 3)
    torch.testing.assert_close(draws.mean(0), mu, atol=0.02, rtol=0)
    torch.testing.assert_close(draws.var(0), epistemic + aleatoric, rtol=0.03, atol=0)


def test_a_calibrated_gaussian_covers_ninety_percent_and_scores_its_entropy():
    torch.manual_seed(1)
    n_inputs = 20_000
    y = torch.randn(n_inputs)
    zeros = torch.zeros(1, n_inputs)
    grid_x = torch.linspace(-2, 2, 100)
    inside = grid_x.abs() < 1
    grid = summarize(grid_x, torch.zeros(1, 100), 2 * torch.log(1 + grid_x.abs())[None])
    m = regression_metrics(y, zeros, zeros, grid, inside)
    se = math.sqrt(0.9 * 0.1 / n_inputs)
    assert abs(m["coverage90_in"] - 0.9) < 4 * se
    assert m["nll_in"] == pytest.approx(0.5 * math.log(2 * math.pi * math.e), abs=0.03)
    assert m["rmse_in"] == pytest.approx(1.0, abs=0.02)
    std = 1 + grid_x.abs()
    assert m["std_in"] == pytest.approx(std[inside].mean().item())
    assert m["std_ratio"] == pytest.approx(std[~inside].mean().item() / m["std_in"])
    assert Z90 == pytest.approx(torch.distributions.Normal(0, 1).icdf(torch.tensor(0.95)).item())


# --- HMC ------------------------------------------------------------------------------------


def test_hmc_matches_the_conjugate_posterior_of_bayesian_linear_regression():
    """No hidden layer and a known noise: the posterior of (slope, intercept) is Gaussian."""
    data = make_data("gap", n_inputs=20, noise=0.5, seed=1)
    settings = FitSettings(
        hidden=(),
        noise_model="fixed",
        fixed_noise=0.5,
        prior_scale=1.0,
        hmc_samples=1500,
        hmc_warmup=300,
        hmc_tree_depth=4,
    )
    from core.regression.hmc import run_nuts

    chain = run_nuts(data, settings)
    mean, cov = linear_posterior(data.x_train, data.y_train, 0.5, 1.0)
    samples = chain.weights.double()
    assert samples.shape == (1500, 2)
    n_eff = 1500 / 3  # NUTS on a 2-D Gaussian mixes well; a conservative effective size
    se = torch.sqrt(torch.diag(cov) / n_eff)
    assert ((samples.mean(0) - mean).abs() < 4 * se).all(), (samples.mean(0), mean, se)
    sample_cov = torch.cov(samples.T)
    rel = math.sqrt(2 / n_eff) * 4  # 4 standard errors of a variance estimate
    torch.testing.assert_close(torch.diag(sample_cov), torch.diag(cov), rtol=rel, atol=0)
    corr = sample_cov[0, 1] / torch.sqrt(sample_cov[0, 0] * sample_cov[1, 1])
    true_corr = cov[0, 1] / torch.sqrt(cov[0, 0] * cov[1, 1])
    assert abs(corr - true_corr) < 4 * (1 - true_corr**2) / math.sqrt(n_eff)
    assert chain.divergences == 0


# --- methods --------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("method", ["bbb", "dropout", "ensemble", "sgld", "sgmcmc_cyclic"])
def test_bayesian_methods_widen_their_band_away_from_blundells_data(method):
    data = make_data("blundell")
    fit = compute_fit(data, method, FitSettings())
    assert fit.metrics["std_out"] / fit.metrics["std_in"] >= 2, fit.metrics
    assert fit.metrics["rmse_in"] < 0.15  # and it fits the curve


def test_band_difference_is_the_mean_gap_between_total_stds():
    x = torch.linspace(-1, 1, 5)
    zeros = torch.zeros(5)
    a = Predictive(x, zeros, torch.full((5,), 0.3), torch.full((5,), 0.4), torch.zeros(2, 5))
    b = Predictive(x, zeros, zeros, torch.full((5,), 0.2), torch.zeros(2, 5))
    assert band_difference(a, a) == 0
    assert band_difference(a, b) == pytest.approx(0.5 - 0.2)
    with pytest.raises(ValueError, match="different grids"):
        band_difference(a, Predictive(x + 1, zeros, zeros, zeros, torch.zeros(2, 5)))


def test_sgld_band_is_closer_to_hmcs_than_a_point_estimates(capsys):
    """The playground's figure of merit: mean |std − HMC's std| over the grid, on Blundell's
    curve with the shipped HMC reference (same network, prior and likelihood)."""
    # HMC's shipped reference alone: the other methods are computed here.
    name = fit_entry(make_data("blundell"), "hmc", FitSettings()).path.name
    study.REFERENCE_DIR.mkdir()
    shutil.copy(REPO_ROOT / "checkpoints" / "regression" / name, study.REFERENCE_DIR / name)
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["regression", "--methods", "hmc", "sgld", "swag", "mlp", "--json"])
    assert args.func(args) == 0
    rows = json.loads(capsys.readouterr().out)["methods"]
    assert rows["hmc"]["source"] == "shipped" and rows["hmc"]["std_vs_hmc"] == 0
    assert rows["sgld"]["std_vs_hmc"] < 0.6 * rows["mlp"]["std_vs_hmc"], rows
    assert rows["swag"]["rmse_in"] < 0.15 and rows["swag"]["std_ratio"] > 1, rows["swag"]


def test_the_plain_mlp_has_no_epistemic_band():
    data = make_data("blundell", n_inputs=30)
    fit = compute_fit(data, "mlp", FitSettings(epochs=100))
    assert torch.equal(fit.plot.epistemic_std, torch.zeros_like(fit.plot.epistemic_std))
    assert fit.metrics["std_ratio"] == pytest.approx(1.0)


def test_ensemble_members_differ_and_vmapped_training_equals_separate_trainings():
    data = make_data("blundell", n_inputs=40)
    members = 3
    settings = FitSettings(
        hidden=(16,), params={"ensemble": {"members": members}}, epochs=60, lr=1e-2, seed=5
    )
    trained = train_network("ensemble", data, settings)
    with torch.random.fork_rng(devices=[]):  # the same seed gives the same initial members
        torch.manual_seed(settings.seed)
        start = RegressionNet("ensemble", settings, data)
    x, y = data.x_train, data.y_train
    for i in range(members):
        mlp = start.body.member(i)
        log_noise = start.log_noise.detach()[i].clone().requires_grad_(True)
        optimizer = torch.optim.Adam([*mlp.parameters(), log_noise], lr=settings.lr, fused=True)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(
            optimizer, settings.epochs, eta_min=settings.lr * FINAL_LR_FRACTION
        )
        for _ in range(settings.epochs):
            loss = gaussian_nll(y, mlp(x[:, None])[:, 0], 2 * log_noise).sum()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
        together = trained.net.body.member(i)
        for (name, p), q in zip(mlp.named_parameters(), together.parameters(), strict=True):
            torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-5, msg=name)
        assert trained.net.log_noise[i].item() == pytest.approx(log_noise.item(), abs=1e-5)
    functions, _ = predict(trained.net, torch.linspace(-1, 2, 50), n_samples=1)
    assert functions.shape == (3, 50)
    assert (functions.std(0) > 1e-3).all()  # the members are different networks


def test_heteroscedastic_model_learns_larger_noise_where_the_data_is_noisier():
    data = make_data("heteroscedastic", n_inputs=400, noise=0.4)
    fit = compute_fit(
        data, "mlp", FitSettings(noise_model="heteroscedastic", hidden=(50,), epochs=1500)
    )
    x, aleatoric = fit.plot.x, fit.plot.aleatoric_std
    left = aleatoric[(x > -0.9) & (x < -0.5)].mean().item()
    right = aleatoric[(x > 0.5) & (x < 0.9)].mean().item()
    truth = data.noise_std(x)
    true_left = truth[(x > -0.9) & (x < -0.5)].mean().item()
    true_right = truth[(x > 0.5) & (x < 0.9)].mean().item()
    assert right / left > 2, (left, right)
    assert right == pytest.approx(true_right, rel=0.3)
    assert left == pytest.approx(true_left, rel=0.5)


def test_learned_homoscedastic_noise_finds_the_true_level():
    data = make_data("gap", n_inputs=300, noise=0.1)
    fit = compute_fit(data, "mlp", FitSettings(hidden=(50,), epochs=1500))
    assert fit.info["learned_noise"][0] == pytest.approx(0.1, rel=0.2)


def test_bbb_lrt_and_mixture_prior_train_and_sample_smooth_functions():
    data = make_data("blundell", n_inputs=40)
    for method in ("bbb_lrt", "bbb_mixture"):
        fit = compute_fit(data, method, FitSettings(epochs=200, hidden=(20,), n_predict=20))
        assert fit.losses[-1] < fit.losses[0]
        functions = fit.plot.functions
        assert functions.shape == (20, study.GRID_POINTS)
        # one weight draw per function: a 1-20-1 ReLU network has at most 21 linear pieces
        slopes = torch.diff(functions, dim=1)
        kinks = (torch.diff(slopes, dim=1).abs() > 1e-4).sum(1)
        assert (kinks <= 2 * 20).all()


def test_settings_are_validated_and_keyed_per_method():
    with pytest.raises(ValueError, match="dropout"):
        FitSettings(params={"dropout": {"dropout": 1.0}})
    with pytest.raises(ValueError, match="noise_model"):
        FitSettings(noise_model="cauchy")
    with pytest.raises(ValueError, match="epochs"):
        FitSettings(epochs=0)
    with pytest.raises(ValueError, match="impl"):  # fixed by the variants, not offered
        FitSettings(params={"bbb": {"impl": "fused"}})
    with pytest.raises(ValueError, match="laplace"):  # cannot fit a regression
        FitSettings(params={"laplace": {}})
    data = make_data("blundell")
    base = FitSettings()
    dropout = FitSettings(params={"dropout": {"dropout": 0.3}})
    assert base.for_method("bbb", data) == dropout.for_method("bbb", data)
    beta = FitSettings(params={"bbb": {"beta": 0.1}})
    assert base.for_method("bbb", data) != beta.for_method("bbb", data)
    assert base.for_method("bbb_lrt", data) != beta.for_method("bbb_lrt", data)
    fixed = FitSettings(noise_model="fixed").for_method("hmc", data)
    assert fixed["fixed_noise"] == pytest.approx(0.02)  # the data's own noise level
    with pytest.raises(ValueError, match="method"):
        base.for_method("gp", data)


# --- cache, shipped references, CLI -----------------------------------------------------------


def test_fits_are_cached_by_data_method_and_relevant_settings():
    data = make_data("blundell", n_inputs=30)
    settings = FitSettings(epochs=50, hidden=(8,))
    first = fit_method(data, "mlp", settings)
    assert first.source == "computed" and fit_entry(data, "mlp", settings).exists()
    dropout = {"dropout": {"dropout": 0.4}}
    again = fit_method(data, "mlp", FitSettings(epochs=50, hidden=(8,), params=dropout))
    assert again.source == "cache"
    assert torch.equal(again.plot.mean, first.plot.mean) and again.losses == first.losses
    assert fit_method(data, "mlp", FitSettings(epochs=60, hidden=(8,))).source == "computed"
    other = make_data("blundell", n_inputs=30, seed=1)
    assert load_fit(other, "mlp", settings) is None
    refreshed = fit_method(data, "mlp", settings, refresh=True)
    assert refreshed.source == "computed"


def test_a_shipped_hmc_reference_is_found_without_the_cache(tmp_path, monkeypatch):
    data = make_data("blundell", n_inputs=20)
    settings = FitSettings(hidden=(4,), hmc_samples=20, hmc_warmup=20, hmc_tree_depth=3)
    with pytest.raises(ValueError, match="run it first"):
        ship_fit(data, "hmc", settings)
    computed = fit_method(data, "hmc", settings)
    assert computed.info["n_samples"] == 20 and computed.losses == []
    flat_dim = 4 * 1 + 4 + 1 * 4 + 1  # 1-4-1 network: weights and biases
    assert computed.samples["weights"].shape == (20, flat_dim)
    assert computed.samples["log_noise"].shape == (20,)  # the learned noise is sampled too
    ship_fit(data, "hmc", settings)
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "empty-cache"))
    shipped = load_fit(data, "hmc", settings)
    assert shipped.source == "shipped"
    assert torch.equal(shipped.plot.mean, computed.plot.mean)
    assert torch.equal(shipped.samples["weights"], computed.samples["weights"])
    assert load_fit(data, "hmc", FitSettings(hidden=(4,), hmc_samples=30)) is None


@pytest.mark.parametrize("preset", list(PRESETS))
def test_the_default_fits_of_every_preset_ship_with_the_lab(preset, monkeypatch):
    """A fresh clone's first visit to the playground computes nothing: the fits of the default
    methods on each preset's default data, with the default settings, are shipped (and current:
    a change to what is fitted or how it is keyed needs ``python -m core regression --ship``)."""
    monkeypatch.setattr(study, "REFERENCE_DIR", REPO_ROOT / "checkpoints" / "regression")
    data = make_data(preset)
    for method in DEFAULT_METHODS:
        fit = load_fit(data, method, FitSettings())
        assert fit is not None and fit.source == "shipped", (preset, method)
        assert torch.isfinite(fit.plot.mean).all() and fit.metrics["rmse_in"] < 1
        # keyed by the values the shipped fit was computed with, by the names stored with it
        assert fit.settings == FitSettings().for_method(method, data)


def test_the_playground_lists_the_registry_s_methods_and_its_variants_as_data():
    kinds = {v.kind for v in VARIANTS.values() if not v.nuts}
    assert kinds == {k for k, m in METHODS.items() if m.regression}
    assert "laplace" in METHODS and not METHODS["laplace"].regression  # a capability, as data
    assert DEFAULT_METHODS == ["bbb", "dropout", "ensemble", "hmc"]
    assert list(VARIANTS)[-1] == "hmc" and VARIANTS["hmc"].nuts
    settings = FitSettings(prior_scale=2.0)
    mixture = model_config("bbb_mixture", settings).params
    assert (mixture["prior"], mixture["sigma1"], mixture["pi"]) == ("mixture", 2.0, 0.5)
    assert model_config("bbb", settings).params["prior_sigma"] == 2.0
    assert model_config("bbb_lrt", settings).params["impl"] == "vmap_lrt"
    bbb = model_config("bbb", settings).params
    assert (bbb["init_sigma"], bbb["n_samples"], bbb["beta"]) == (1e-2, 4, 1.0)  # overrides
    assert [s.name for s in offered("bbb")] == ["beta", "init_sigma", "n_samples"]


def test_no_shared_setting_repeats_a_method_setting():
    """Each method's parameters live in ``params`` only, by their own names."""
    shared = {f.name for f in fields(FitSettings)} - {"params"}
    names = {s.name for m in METHODS.values() for s in m.parameters}
    assert shared & names == set()


def test_cli_prints_the_numbers_of_every_method_as_json(capsys):
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(
        [
            "regression",
            "--methods",
            "mlp",
            "dropout",
            "--epochs",
            "50",
            "--hidden",
            "8",
            "--n-inputs",
            "30",
            "--json",
        ]
    )
    assert args.func(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert set(result["methods"]) == {"mlp", "dropout"}
    for row in result["methods"].values():
        assert set(cli.NUMBERS) <= set(row)
        assert row["train_seconds"] > 0 and 0 <= row["coverage90_in"] <= 1
    assert result["data"]["preset"] == "blundell" and result["settings"]["epochs"] == 50
    args = parser.parse_args(
        ["regression", "--methods", "mlp", "--epochs", "50", "--hidden", "8", "--n-inputs", "30"]
    )
    assert args.func(args) == 0
    table = capsys.readouterr().out
    assert "Plain MLP" in table and "cache" in table
