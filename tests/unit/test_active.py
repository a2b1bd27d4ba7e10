"""Active learning: acquisition scores, the loop's bookkeeping, reproducibility, BALD vs random."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from types import SimpleNamespace

import pytest
import torch
import torch.nn.functional as F

from core.active import loop
from core.active import study as active_study
from core.active.acquisition import ACQUISITIONS, acquire
from core.active.loop import (
    ARCHITECTURES,
    MODEL_KINDS,
    ActiveConfig,
    ActiveLearner,
    live_config,
    run_active,
)
from core.active.minibatch import minibatch_terms
from core.active.study import curve
from core.cli import main as cli_main
from core.engine.interface import ModelConfig
from core.evaluation.uncertainty import summarize
from core.methods import build_model, check_config, method
from core.methods.base import TRAIN_FIELDS
from core.training import TrainConfig, train
from harness.browser import REPO_ROOT

TINY = ActiveConfig(
    pool_size=600, candidates=200, acquire=10, budget=50, train_steps=40, test_size=500, n_samples=8
)


@pytest.fixture(scope="module")
def data(mnist_small):
    (x_train, y_train), (x_test, y_test) = mnist_small
    return x_train, y_train, x_test, y_test


def test_bald_is_entropy_minus_expected_entropy_and_zero_without_spread():
    probs = torch.tensor(
        [
            [[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]],
            [[0.1, 0.9], [0.5, 0.5], [0.2, 0.8]],
        ]
    )  # (S=2, N=3, C=2): disagreement, agreement at 0.5, agreement at 0.8
    s = summarize(probs)
    bald = ACQUISITIONS["bald"](s, 3, torch.Generator())
    mean = probs.mean(0)
    entropy = -(mean * mean.log()).sum(-1)
    expected = -(probs * probs.log()).sum(-1).mean(0)
    assert torch.allclose(bald, entropy - expected, atol=1e-6)
    assert bald[0] > 0.3 and bald[1] == 0 and bald[2] == 0
    assert ACQUISITIONS["entropy"](s, 3, torch.Generator())[1] == pytest.approx(0.6931, abs=1e-4)
    picked, scores = acquire(s, "bald", 1, torch.Generator())
    assert picked.tolist() == [0] and scores.tolist() == pytest.approx([bald[0].item()])
    with pytest.raises(ValueError, match="acquisition"):
        acquire(s, "oracle", 1, torch.Generator())
    with pytest.raises(ValueError, match="needs the predictive"):
        acquire(None, "bald", 1, torch.Generator(), 3)


def test_random_acquisition_needs_no_passes_and_records_the_scores_it_picked_by(data, monkeypatch):
    calls = []
    real = loop.predictive_samples
    monkeypatch.setattr(
        loop, "predictive_samples", lambda model, x, n: calls.append(len(x)) or real(model, x, n)
    )
    config = replace(TINY, acquisition="random", budget=30, candidates=50)
    round_ = ActiveLearner(config, data).step()
    assert calls == [config.test_size]  # the test set only, no candidate scored
    generator = torch.Generator().manual_seed(config.seed + 1)  # the learner's
    torch.randperm(config.pool_size, generator=generator)  # its draw of the candidates
    drawn = torch.rand(config.candidates, generator=generator).double()
    assert round_.scores == drawn.sort(descending=True).values[:10].tolist()


@pytest.mark.parametrize("name", list(ACQUISITIONS))
def test_each_round_labels_exactly_the_acquired_new_images(data, name):
    learner = ActiveLearner(replace(TINY, acquisition=name), data)
    assert len(learner.labelled) == 20 and len(set(learner.labelled)) == 20
    assert sorted(data[1][learner.labelled].tolist()) == sorted(list(range(10)) * 2)
    seen = set(learner.labelled)
    while not learner.done:
        before = len(learner.labelled)
        round_ = learner.step()
        if learner.done:
            assert round_.picked == [] and round_.labels == TINY.budget
            break
        assert len(round_.picked) == TINY.acquire == len(set(round_.picked))
        assert not seen & set(round_.picked)  # never an image labelled before
        assert len(learner.labelled) == before + TINY.acquire
        seen |= set(round_.picked)
        assert 0.0 <= round_.accuracy <= 1.0
    assert [r.labels for r in learner.rounds] == [20, 30, 40, 50]


def test_a_seeded_run_is_reproducible(data):
    first, second = (run_active(replace(TINY, budget=40), data) for _ in range(2))
    assert [r.picked for r in first] == [r.picked for r in second]
    assert [r.accuracy for r in first] == [r.accuracy for r in second]
    other = run_active(replace(TINY, budget=40, seed=1), data)
    assert [r.picked for r in other] != [r.picked for r in first]


def test_an_interrupted_run_resumes_at_its_next_round_with_the_same_curve(
    data, tmp_path, monkeypatch
):
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    config = replace(TINY, budget=50)
    uninterrupted = run_active(config, data)

    def stop_at_40_labels(fraction: float, message: str) -> None:
        if message == "40 labels":  # reported before the third round: two are saved
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        active_study.cached_run(config, data, stop_at_40_labels)
    assert (
        active_study.partial_entry(config).path.is_file()
        and not active_study.run_entry(config).exists()
    )
    steps = []
    step = ActiveLearner.step
    monkeypatch.setattr(ActiveLearner, "step", lambda self: steps.append(1) or step(self))
    resumed = active_study.cached_run(config, data)
    assert len(steps) == 2  # the rounds at 40 and 50 labels, not the first two again
    assert [(r.labels, r.accuracy, r.picked, r.scores) for r in resumed] == [
        (r.labels, r.accuracy, r.picked, r.scores) for r in uninterrupted
    ]
    assert (
        active_study.run_entry(config).exists()
        and not active_study.partial_entry(config).path.exists()
    )


def test_bald_is_not_worse_than_random_beyond_the_seed_spread(data):
    config = replace(TINY, budget=80, train_steps=60)
    curves = {
        name: curve(
            [run_active(replace(config, acquisition=name, seed=s), data) for s in (0, 1)], name
        )
        for name in ("bald", "random")
    }
    spread = max(max(c.std) for c in curves.values())
    assert curves["bald"].area() >= curves["random"].area() - max(spread, 0.02)
    assert curves["bald"].labels == list(range(20, 81, 10))


def test_curve_statistics_and_thresholds():
    from core.active.loop import Round

    runs = [[Round(20, 0.5), Round(30, 0.9)], [Round(20, 0.7), Round(30, 0.92)]]
    c = curve(runs, "bald")
    assert c.mean == pytest.approx([0.6, 0.91]) and c.std == pytest.approx([0.1, 0.01])
    assert c.labels_to(0.9) == 30 and c.labels_to(0.95) is None and c.labels_to(0.5) == 20
    assert c.area() == pytest.approx(0.755)


def test_the_cnn_maps_images_and_flat_inputs_alike_and_keeps_old_configs_valid():
    cnn = dict(ARCHITECTURES["cnn"])
    config = ModelConfig(kind="dropout", params={"dropout": cnn.pop("dropout")}, **cnn)
    assert config.sizes == [32 * 7 * 7, 128, 10]
    model = build_model(config).eval()
    x = torch.rand(4, 1, 28, 28)
    torch.manual_seed(0)
    images = model(x)
    torch.manual_seed(0)
    assert torch.equal(model(x.reshape(4, 784)), images)  # same masks, same logits
    assert images.shape == (4, 10)
    assert not torch.equal(model(x), model(x))  # MC dropout also after the convolutions
    assert ModelConfig.from_dict(config.to_dict()) == config
    old = {k: v for k, v in ModelConfig(kind="mlp").to_dict().items() if k != "conv"}
    assert ModelConfig.from_dict(old).conv == ()  # checkpoints written before ``conv``
    assert not any("conv" in key for key in build_model(ModelConfig(kind="mlp")).state_dict())
    with pytest.raises(ValueError, match="convolutions"):
        check_config(ModelConfig(kind="bbb", conv=(8,)))
    with pytest.raises(ValueError, match="convolutions are offered for mlp and dropout, not bbb"):
        ActiveConfig(kind="bbb", **ARCHITECTURES["cnn"])


def test_a_cnn_round_labels_the_acquired_images(data):
    learner = ActiveLearner(replace(TINY, budget=30, **ARCHITECTURES["cnn"]), data)
    first = learner.step()
    assert first.labels == 20 and len(set(first.picked)) == 10
    assert 0.0 <= first.accuracy <= 1.0
    assert learner.step().labels == 30 and learner.done


def test_the_cli_refuses_the_cnn_with_bbb(capsys):
    assert cli_main(["active", "--kind", "bbb", "--arch", "cnn", "--seeds", "1"]) == 2
    assert "convolutions are offered for mlp and dropout" in capsys.readouterr().err


def test_the_cli_runs_a_part_of_a_protocol_and_refuses_to_widen_it(capsys, monkeypatch):
    from core.active.protocols import PROTOCOLS
    from core.cli import active as active_cli

    asked = []
    monkeypatch.setattr(
        active_cli,
        "curves_for",
        lambda names, seeds, base, progress=None, workers=1: (
            asked.append((names, seeds, base)) or {"settings": {}, "curves": {}}
        ),
    )
    study = PROTOCOLS["gal2017"].config
    assert cli_main(["active", "--protocol", "gal2017", "--acquisition", "random", "--json"]) == 0
    assert cli_main(["active", "--protocol", "gal2017", "--seeds", "1", "--json"]) == 0
    assert asked == [
        (["random"], study.seeds, study.run),
        (list(study.acquisitions), 1, study.run),
    ]
    capsys.readouterr()
    assert cli_main(["active", "--protocol", "gal2017", "--acquisition", "mean_std"]) == 2
    assert cli_main(["active", "--protocol", "gal2017", "--seeds", "4"]) == 2
    assert "can only narrow" in capsys.readouterr().err and len(asked) == 2
    assert cli_main(["active", "--protocol", "gal2017", "--workers", "0"]) == 2
    assert "--workers: '0' is not a whole number from 1" in capsys.readouterr().err
    assert len(asked) == 2


def test_runs_side_by_side_in_processes_give_the_rounds_of_one_thread_here(
    data, tmp_path, monkeypatch
):
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    base = replace(TINY, budget=40, pool_size=300, candidates=100)
    result = active_study.curves_for(
        ["bald", "random"], 2, base, workers=2
    )  # full MNIST in the workers
    full = loop.load_active_data()
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for name in ("bald", "random"):
            for seed in range(2):
                config = replace(base, acquisition=name, seed=seed)
                here = run_active(config, full)
                stored = active_study.cached_run(config)  # what the worker cached
                assert [(r.labels, r.accuracy, r.picked) for r in stored] == [
                    (r.labels, r.accuracy, r.picked) for r in here
                ]
                per_seed = result["curves"][name]["per_seed"][seed]
                assert per_seed["accuracy"] == [r.accuracy for r in here]
    finally:
        torch.set_num_threads(threads)


def test_runs_without_a_model_to_score_with_go_first():
    configs = [replace(TINY, acquisition=a, seed=s) for a in ("bald", "random") for s in (0, 1)]
    ordered = active_study.longest_first(configs)
    assert [(c.acquisition, c.seed) for c in ordered] == [
        ("random", 0),
        ("random", 1),
        ("bald", 0),
        ("bald", 1),
    ]


@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_every_method_learns_in_a_round_with_its_own_training(data, kind, monkeypatch):
    """Each offered method trains by its procedure with its own defaults (the ensemble by its
    members estimator, BBB with its KL weight ...) and the trained model beats chance."""
    seen = {}
    original = loop.train

    def spy(model, settings, *args, **kwargs):
        seen["model"], seen["settings"] = model, settings
        return original(model, settings, *args, **kwargs)

    monkeypatch.setattr(loop, "train", spy)
    sizes = ("pool_size", "candidates", "test_size", "n_samples")
    config = live_config(kind, budget=20, train_steps=200, **{k: getattr(TINY, k) for k in sizes})
    learner = ActiveLearner(config, data)
    accuracy = learner.step().accuracy
    unit = method(kind)
    assert isinstance(seen["model"], unit.model_class)
    expected = unit.configure({})
    own = {k: v for k, v in expected.items() if k in TRAIN_FIELDS}
    assert {k: getattr(seen["settings"], k) for k in own} == own
    assert config.conv == (ARCHITECTURES["cnn"]["conv"] if kind == "dropout" else ())
    assert accuracy > 0.15, f"{kind}: {accuracy:.1%} after 20 labels"


def test_post_hoc_methods_are_not_offered():
    assert "laplace" not in MODEL_KINDS and "mlp" not in MODEL_KINDS
    with pytest.raises(ValueError, match="kind must be one of"):
        live_config("laplace")


def test_the_pooled_layout_is_the_papers_cnn_with_its_two_dropout_rates():
    config = ModelConfig(
        kind="dropout",
        conv=(32, 32),
        conv_layout="pooled",
        hidden=(128,),
        params={"conv_dropout": 0.25, "dropout": 0.5},
    )
    assert config.sizes == [32 * 11 * 11, 128, 10]  # 28 → 25 → 22 → pooled 11
    model = build_model(config)
    assert [conv.kernel_size for conv in model.convs] == [(4, 4), (4, 4)]
    assert (model.conv_dropout_p, model.dropout_p) == (0.25, 0.5)
    assert model(torch.rand(3, 1, 28, 28)).shape == (3, 10)
    assert ModelConfig.from_dict(config.to_dict()) == config
    with pytest.raises(ValueError, match="conv_layout"):
        ModelConfig(kind="dropout", conv=(8,), conv_layout="dilated")
    with pytest.raises(ValueError, match="conv_dropout"):
        check_config(ModelConfig(kind="dropout", conv=(8,), params={"conv_dropout": 1.0}))


@pytest.mark.parametrize("layout", ["strided", "pooled"])
def test_passes_sharing_the_convolutions_match_independent_forward_passes(layout):
    """MC dropout's passes compute the convolutional features once and draw fresh masks per pass
    and input after them: each input's predictive (mean and spread of the probabilities over
    passes) matches that of separate forward passes, and inputs in one pass differ in masks."""
    config = ModelConfig(
        kind="dropout", conv=(4, 8), conv_layout=layout, hidden=(16,), params={"conv_dropout": 0.3}
    )
    torch.manual_seed(0)
    model = build_model(config, seed=0).eval()
    with torch.no_grad():  # larger weights: confident, widely spread predictions
        for layer in model.layers:
            layer.weight.mul_(8)
    x = torch.rand(1, 1, 28, 28).expand(3, 1, 28, 28)  # one image three times
    n_passes = 10_000
    with torch.no_grad():
        shared = model.sample_logits(x, n_passes).softmax(-1)  # (P, 3, C)
        copies = x[:1].expand(n_passes, 1, 28, 28)  # forward: masks per input, convs per copy
        separate = model(copies).softmax(-1)  # (P, C): independent full passes
    assert shared.shape == (n_passes, 3, 10)
    for i in range(3):
        assert torch.allclose(shared[:, i].mean(0), separate.mean(0), atol=0.03)
        assert torch.allclose(shared[:, i].std(0), separate.std(0), atol=0.03)
    assert not torch.equal(shared[:, 0], shared[:, 1])  # masks drawn per input
    assert shared[:, 0].std(0).max() > 0.1  # and per pass


def test_the_gal2017_protocol_states_each_setting_and_runs_a_round(data):
    from core.active.protocols import PROTOCOLS, ActiveStudy

    protocol = PROTOCOLS["gal2017"]
    study = protocol.config
    assert isinstance(study, ActiveStudy)
    changed = {
        f"run.{key}"
        for key, value in study.run.to_dict().items()
        if value != ActiveConfig().to_dict()[key] and key not in ("acquisition", "seed")
    }
    assert changed <= set(protocol.sources)
    assert {"acquisitions", "seeds"} <= set(protocol.sources)
    assert all(source for _, _, source in protocol.settings())
    assert study.run.model_config().sizes == [3872, 128, 10]
    assert set(study.acquisitions) <= set(ACQUISITIONS)
    small = replace(study.run, budget=30, pool_size=400, candidates=100, n_samples=4, epochs=2)
    learner = ActiveLearner(replace(small, test_size=200), data)
    assert learner.step().labels == 20 and learner.step().labels == 30 and learner.done


def test_the_papers_training_settings_reach_every_rounds_training(data, monkeypatch):
    """Epochs over the labelled set, minibatches of at most ``batch_size`` and the L2 term
    c / N on the first dense layer's weights only (Gal et al.'s code) are what each round's
    training gets; without ``epochs`` the step count still sets the epochs."""
    seen = []
    real_train = loop.train

    def spy(model, settings, *args, procedure, **kwargs):
        seen.append((settings, procedure, model))
        return real_train(model, replace(settings, epochs=1), *args, procedure=procedure, **kwargs)

    monkeypatch.setattr(loop, "train", spy)
    config = replace(TINY, budget=30, epochs=50, batch_size=128, dense_decay_scale=5.0)
    run_active(config, data)
    assert [(s.epochs, s.batch_size, s.weight_decay) for s, _, _ in seen] == [
        (50, 20, 0.0),
        (50, 30, 0.0),
    ]
    for (settings, procedure, model), labels in zip(seen, (20, 30), strict=True):
        steps = procedure(settings, labels, 1)
        steps.optimizer(model)
        steps.optimizers = [SimpleNamespace(step=lambda: None)]  # keep the gradients as set
        for p in model.parameters():
            p.grad = torch.zeros_like(p)
        steps.step()
        grads = {n: p.grad for n, p in model.named_parameters()}
        dense = model.layers[0].weight.detach()
        assert torch.allclose(grads["layers.0.weight"], 5.0 / labels * dense)
        assert all(g.abs().max() == 0 for n, g in grads.items() if n != "layers.0.weight")
    seen.clear()
    run_active(replace(TINY, initial=40, budget=40, train_steps=40, weight_decay=1e-4), data)
    [(settings, procedure, _)] = seen
    assert (settings.epochs, settings.batch_size, settings.weight_decay) == (32, 32, 1e-4)
    assert procedure is method(TINY.kind).procedure


KERAS_CNN = ModelConfig(
    kind="dropout",
    conv=(4, 8),
    conv_layout="pooled",
    hidden=(16,),
    params={"dropout": 0, "conv_dropout": 0},
)


def keras_steps(x: torch.Tensor, y: torch.Tensor, dense_l2: float) -> list[torch.Tensor]:
    """A small dropout-free CNN after 3 epochs of Adam on Keras' loss — a minibatch's mean
    cross-entropy plus dense_l2 / 2 · ‖W‖² on the first dense layer — in minibatches of 32 in
    the order :func:`~core.training.train` shuffles with seed 3."""
    reference = build_model(KERAS_CNN, seed=0)
    adam = torch.optim.Adam(reference.parameters(), lr=1e-3)
    order = torch.Generator().manual_seed(3)
    for _ in range(3):
        for idx in torch.randperm(len(x), generator=order).split(32):
            dense = reference.layers[0].weight
            loss = F.cross_entropy(reference(x[idx]), y[idx]) + dense_l2 / 2 * dense.square().sum()
            adam.zero_grad()
            loss.backward()
            adam.step()
    return [p.detach() for p in reference.parameters()]


@pytest.mark.parametrize("dense_l2", [0.0, 0.5])
def test_a_mean_minibatch_loss_steps_as_keras_did_for_gal_et_al(data, dense_l2):
    """The lab sums a minibatch's NLLs; ``minibatch_loss="mean"`` must take Keras' steps, the
    epoch's last and smaller minibatch (50 = 32 + 18 images) and the L2 term included — and the
    sum must not."""
    x, y = data[0][:50], data[1][:50]
    expected = keras_steps(x, y, dense_l2)
    settings = TrainConfig(epochs=3, batch_size=32, lr=1e-3, seed=3)
    for mean in (True, False):
        model = build_model(KERAS_CNN, seed=0)
        procedure = minibatch_terms(method("dropout").procedure, mean, dense_l2)
        train(model, settings, (x, y), (x[:1], y[:1]), device="cpu", procedure=procedure)
        gap = max((p - e).abs().max() for p, e in zip(model.parameters(), expected, strict=True))
        assert (gap < 1e-5) if mean else (gap > 1e-4), (mean, float(gap))


def test_weight_scaling_is_the_network_with_its_dropout_left_out():
    config = ModelConfig(
        kind="dropout",
        conv=(4, 8),
        conv_layout="pooled",
        hidden=(16,),
        params={"conv_dropout": 0.25},
    )
    model = build_model(config, seed=0)
    plain = build_model(replace(config, kind="mlp", params={}), seed=1)
    plain.load_state_dict(model.state_dict())
    x = torch.rand(5, 1, 28, 28)
    with torch.no_grad():
        assert torch.equal(model.scaled_logits(x), plain(x))
        assert not torch.equal(model(x), plain(x))  # a pass of the model itself drops units


def test_a_test_accuracy_without_passes_is_the_scaled_networks_and_only_for_dropout(data):
    config = replace(TINY, budget=20, n_eval_samples=0, test_size=300)
    learner = ActiveLearner(config, data)
    trained = []
    real = learner.train_on
    learner.train_on = lambda x, y: trained.append(real(x, y)) or trained[-1]
    accuracy = learner.step().accuracy
    x_test, y_test = data[2][:300], data[3][:300]
    with torch.no_grad():
        expected = (trained[0].scaled_logits(x_test).argmax(-1) == y_test).double().mean()
    assert accuracy == pytest.approx(expected.item())
    with pytest.raises(ValueError, match="n_eval_samples"):
        ActiveConfig(kind="bbb", n_eval_samples=0)


def test_a_run_stops_once_its_accuracy_reaches_stop_at(data, tmp_path, monkeypatch):
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    stopped = run_active(replace(TINY, stop_at=0.05), data)  # any trained network beats 5 %
    assert [(r.labels, r.picked) for r in stopped] == [(20, [])]
    full = run_active(replace(TINY, stop_at=1.0), data)
    assert [r.labels for r in full] == [20, 30, 40, 50]
    assert stopped[0].accuracy == full[0].accuracy  # a stopped run is a prefix of a longer one
    with pytest.raises(ValueError, match="stop_at"):
        ActiveConfig(stop_at=1.5)


def test_curves_of_runs_stopped_at_different_rounds_keep_each_seeds_labels_to_target(
    monkeypatch,
):
    from core.active.loop import Round

    runs = [
        [Round(20, 0.5), Round(30, 0.91), Round(40, 0.96)],
        [Round(20, 0.6), Round(30, 0.96)],
    ]
    c = curve(runs, "bald")
    assert c.labels == [20, 30] and c.mean == pytest.approx([0.55, 0.935])
    monkeypatch.setattr(active_study, "curve_jobs", lambda configs, data=None: [])
    monkeypatch.setattr(active_study, "cached_run", lambda config, *a: runs[config.seed])
    result = active_study.curves_for(["bald"], 2, TINY)
    per_seed = result["curves"]["bald"]["per_seed"]
    assert [s["labels_to_90"] for s in per_seed] == [30, 30]
    assert [s["labels_to_95"] for s in per_seed] == [40, 30]
    assert per_seed[0]["labels"] == [20, 30, 40] and per_seed[1]["accuracy"] == [0.6, 0.96]
    assert result["curves"]["bald"]["labels_to_95"] is None  # the mean curve stops at 30


def test_the_cli_prints_a_protocols_settings_with_their_sources():
    help_text = subprocess.run(
        [sys.executable, "-m", "core", "active", "--help"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "--protocol {gal2017}" in help_text


def test_the_paper_comparison_reads_each_seeds_labels_beside_gals_table():
    from core.active.protocols import PAPER_LABELS, paper_comparison
    from core.cli.active import format_comparison

    def seed(to_90, to_95):
        return {"labels_to_85": None, "labels_to_90": to_90, "labels_to_95": to_95}

    result = {
        "curves": {
            "bald": {"per_seed": [seed(140, 330), seed(160, 400)]},
            "random": {"per_seed": [seed(300, None), seed(260, 900)]},
        }
    }
    rows = {(r["acquisition"], r["error"]): r for r in paper_comparison(result)}
    assert rows["bald", 10]["mean"] == 150 and rows["bald", 10]["paper"] == 145
    assert rows["bald", 10]["ratio"] == pytest.approx(150 / 145) and rows["bald", 10]["close"]
    assert rows["bald", 5]["ratio"] == pytest.approx(365 / 335) and rows["bald", 5]["close"]
    assert rows["random", 10]["ratio"] == pytest.approx(280 / 255)
    assert rows["random", 5]["seeds"] == [None, 900] and rows["random", 5]["mean"] is None
    assert not rows["random", 5]["close"]  # a seed that never got there is not close
    assert set(PAPER_LABELS) == {"bald", "variation_ratio", "entropy", "random"}
    text = format_comparison(paper_comparison(result))
    assert "140, 160" in text and "-, 900" in text and "×1.03" in text
    result["settings"] = {"stop_at": 0.9}  # runs stopped at 10 % error never measured 5 %
    assert [(r["acquisition"], r["error"]) for r in paper_comparison(result)] == [
        ("bald", 10),
        ("random", 10),
    ]


def test_set_changes_a_protocols_settings_and_names_the_saved_file(capsys, monkeypatch, tmp_path):
    from core.active.protocols import PROTOCOLS
    from core.cli import active as active_cli

    asked = []
    monkeypatch.setattr(
        active_cli,
        "curves_for",
        lambda names, seeds, base, progress=None, workers=1: (
            asked.append(base) or {"settings": base.to_dict(), "curves": {}}
        ),
    )
    monkeypatch.setenv("BNN_RESULTS_DIR", str(tmp_path))
    assert PROTOCOLS["gal2017"].config.run.init == "glorot_keras03"  # Keras 0.3's, as the authors'
    argv = ["active", "--protocol", "gal2017", "--set", "init=torch", "--set", "stop_at=0.9"]
    assert cli_main([*argv, "--json", "--save"]) == 0
    assert asked == [replace(PROTOCOLS["gal2017"].config.run, init="torch", stop_at=0.9)]
    saved = tmp_path / "active_learning" / "active_learning-gal2017-init_torch-stop_at_0.9.json"
    assert saved.is_file() and '"init": "torch"' in saved.read_text()
    capsys.readouterr()
    assert cli_main(["active", "--protocol", "gal2017", "--set", "depth=3"]) == 1
    assert "KEY=VALUE" in capsys.readouterr().err
    assert cli_main(["active", "--protocol", "gal2017", "--set", "init=he"]) == 1
    assert "init must be one of ['glorot', 'glorot_keras03', 'torch']" in capsys.readouterr().err
    assert len(asked) == 1


def test_a_runs_init_reaches_the_network_of_every_round(data, monkeypatch):
    monkeypatch.setattr(loop, "train", lambda *args, **kwargs: None)  # the initial weights
    x, y = data[0][:20], data[1][:20]
    config = replace(TINY, **ARCHITECTURES["cnn"])
    torch_net = ActiveLearner(config, data).train_on(x, y)
    glorot_net = ActiveLearner(replace(config, init="glorot"), data).train_on(x, y)
    again = ActiveLearner(replace(config, init="glorot"), data).train_on(x, y)
    for a, b in zip(glorot_net.parameters(), again.parameters(), strict=True):
        assert torch.equal(a, b)  # seeded by the run and the round
    dense = glorot_net.layers[0]
    bound = (6 / (dense.in_features + dense.out_features)) ** 0.5
    assert dense.bias.abs().max() == 0 and dense.weight.abs().max() <= bound
    assert dense.weight.abs().max() > 0.95 * bound
    assert torch_net.layers[0].bias.abs().max() > 0  # PyTorch's own: uniform biases
