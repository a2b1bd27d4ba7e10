"""Hostile values on the command line: one ``error:`` line and a non-zero exit, never a traceback
or a silent default (issue 60); and ``evaluate`` telling a user-trained model's recipe."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

import pytest

from core.catalogue import REGISTRY
from core.cli import build_parser, main
from core.data import DatasetUnavailable, load_dataset
from core.methods import build_model
from core.paths import REPO_ROOT, user_model_dir
from core.storage.checkpoints import save_checkpoint

HOSTILE = [
    "ood --samples 99999999999999999999",  # the issue's four
    "train mlp --train-subset 0",
    "train --kind bbb --name x --batch-size 0",
    "train --kind bbb --name x --prior-sigma inf",
    "ood --samples 0",
    "ood --subset -1",
    "train mlp --epochs 0",
    "train mlp --threads -1",
    "train mlp --eval-samples 1e3",
    "train --kind bbb --name x --prior-sigma nan",
    "train --kind bbb --name x --lr 0",
    "train --kind bbb --name x --lr 1e400",
    "train --kind ensemble --name x --members 999",
    "train --kind dropout --name x --dropout 1.5",
    "evaluate --checkpoint mlp --samples -5",
    "attack --eps 2",
    "attack --eps 0 -inf",
    "attack --k 0",
    "attack --images 99999999999999999999",
    "bandit --delta 1",
    "bandit --delta nan",
    "bandit --steps 0",
    "bandit --seed -1",
    "bandit --every 0",
    "bandit --threads 99999",
    "bench --samples 0,1",
    "bench --samples ,",
    "bench --hidden 400,x",
    "bench --warmup -1",
    "bench --repeats 0",
    "bench-predictive --samples 0",
    "calibration --shift-inputs 0",
    "calibration --validation-size 0",
    "calibration --shift-samples 1e9",
    "regression --noise inf",
    "regression --noise 0",
    "regression --hidden 0",
    "regression --epochs 0",
    "regression --n-inputs 0",
    "regression --fit-seed 99999999999",
    "active --seeds 0",
    "active --budget 0",
    "active --workers 0",
    "ood --samples",
    "nosuchcommand",
]


def run_main(argv: list[str], capsys) -> tuple[int, list[str]]:
    """The exit code of ``python -m core ARGV`` run here, and its stderr's non-blank lines."""
    code = main(argv)
    return code, [line for line in capsys.readouterr().err.splitlines() if line.strip()]


@pytest.mark.parametrize("command", HOSTILE)
def test_a_hostile_value_is_one_error_line_and_exit_2(command, capsys):
    code, lines = run_main(command.split(), capsys)
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("python -m core") and ": error: " in lines[0]
    assert "Traceback" not in lines[0] and "--help" in lines[0]


@pytest.mark.parametrize(
    ("command", "message"),
    [
        ("active --set n_samples=99999999999999999999", "is not a whole number"),
        ("active --set stop_at=inf", "'inf' is not a number"),
        ("bandit --set updates_per_step=1e999", "is not a whole number"),
    ],
)
def test_a_hostile_setting_is_one_error_line_and_exit_1(command, message, capsys):
    code, lines = run_main(command.split(), capsys)
    assert code == 1 and len(lines) == 1 and message in lines[0], lines


def test_the_issues_traceback_from_a_shell_is_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "core", *HOSTILE[0].split()],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert result.stdout == "" and "error: argument --samples" in lines[0]


def test_every_numeric_option_of_every_command_is_range_checked():
    """No option takes a bare ``int`` or ``float``: each has a type with a range."""
    commands = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices
    bare = [
        f"{name} {'/'.join(action.option_strings) or action.dest}"
        for name, parser in commands.items()
        for action in parser._actions
        if action.type in (int, float)
    ]
    assert bare == []


def test_sound_values_and_defaults_still_parse():
    parser = build_parser()
    assert parser.parse_args(["ood", "--samples", "10000"]).samples == 10_000
    bench = parser.parse_args(["bench"])
    assert bench.samples == tuple(range(1, 11)) and bench.hidden is None
    assert parser.parse_args(["bench", "--hidden", "50, 20"]).hidden == (50, 20)
    train = parser.parse_args(["train", "mlp"])
    assert train.train_subset is None and train.epochs is None  # the registered model's
    adhoc = parser.parse_args(["train", "--kind", "bbb", "--prior-sigma", "0.3", "--lr", "1e-3"])
    assert adhoc.prior_sigma == 0.3 and adhoc.lr == 0.001
    assert parser.parse_args(["attack", "--eps", "0", "0.1"]).eps == [0.0, 0.1]
    assert parser.parse_args(["bandit", "--delta", "0.5", "--seed", "0"]).delta == 0.5


# --- evaluate tells a user-trained model's recipe -------------------------------------------


@pytest.fixture
def mnist_test():
    try:
        load_dataset("mnist", "test", n_inputs=1)
    except DatasetUnavailable as exc:
        pytest.skip(f"MNIST unavailable: {exc}")


def test_evaluate_gives_a_user_models_recipe_and_says_it_is_not_shipped(mnist_test, capsys):
    meta = {"dataset": "mnist", "train_subset": 300, "epochs": 1, "epochs_planned": 5}
    model = build_model(REGISTRY["mlp"].model)
    save_checkpoint("tiny", model, meta, user_model_dir(), complete=False)
    assert main(["evaluate", "--checkpoint", "user:tiny", "--samples", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("user:tiny: MNIST test error")
    assert lines[1] == "recipe: 300 MNIST training images, 1 epoch (partial: 1 of 5 epochs)"
    assert lines[2].startswith("note: user:tiny is a user-trained model, not a shipped one")
    assert len(lines) == 3
    assert main(["evaluate", "--checkpoint", "user:tiny", "--samples", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["shipped"] is False
    assert result["recipe"] == {
        "train_images": 300,
        "epochs": 1,
        "epochs_planned": 5,
        "partial": "partial: 1 of 5 epochs",
    }


def test_evaluate_a_finished_user_model_on_all_images_and_a_shipped_one(mnist_test, capsys):
    meta = {"dataset": "mnist", "train_subset": None, "epochs": 3, "training": {"epochs": 3}}
    save_checkpoint("whole", build_model(REGISTRY["mlp"].model), meta, user_model_dir())
    assert main(["evaluate", "--checkpoint", "user:whole", "--samples", "1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1] == "recipe: all MNIST training images, 3 epochs"
    assert main(["evaluate", "--checkpoint", "mlp", "--samples", "1", "--json"]) == 0
    shipped = json.loads(capsys.readouterr().out)
    assert shipped["shipped"] is True and "recipe" not in shipped


def test_evaluate_is_seeded_prints_its_seed_and_repeats_itself(mnist_test, capsys):
    """The documented command reproduces its number: the passes are seeded (0 by default)."""
    model = build_model(REGISTRY["bbb_gaussian"].model)
    meta = {"dataset": "mnist", "train_subset": None, "epochs": 1}
    save_checkpoint("noisy", model, meta, user_model_dir())
    command = ["evaluate", "--checkpoint", "user:noisy", "--samples", "2", "--json"]
    runs = []
    for extra in ([], [], ["--seed", "1"]):
        assert main([*command, *extra]) == 0
        runs.append(json.loads(capsys.readouterr().out))
    assert runs[0] == runs[1] and runs[0]["seed"] == 0
    assert runs[2]["seed"] == 1 and runs[2]["nll"] != runs[0]["nll"]
    assert main(command[:-1]) == 0
    assert "seed 0)" in capsys.readouterr().out.splitlines()[0]
