"""Would another training setting of the gal2017 preset have needed fewer labels?

Gal, Islam & Ghahramani (2017) optimise the weight decay on a validation set of 100 images and
do not give its value; the gal2017 preset fixes the authors' code's L2 term on the dense layer
(``dense_decay_scale`` 5: a gradient term 5 / N · W for N labels on Keras' mean loss, on the
summed loss in the studies with ``minibatch_loss=sum``) and its 50 epochs per round.
This probe takes the labelled sets that the runs of a stored study acquired (``--study``: the
preset's, ``core active --protocol gal2017``, or an ablation of it; its runs must be in the disk
cache), retrains the study's network on each with every value of one setting and prints the
test accuracy (10,000 images, dropout off) of

- every value, paired by run (the same images, initial weights and minibatch order),
- the value that 100 validation images (training images outside the pool, never labelled by
  the run) pick — what tuning on validation data would have given at that round,
- the best value on the test set itself — an upper bound on what any tuning of it gives.

    # the preset's study (from Keras' initial weights): its epochs
    python benchmarks/active_setting_probe.py --setting epochs --values 25,50,100,200 \
        --runs bald:150,random:200 --save
    # the summed-loss study from PyTorch's initial weights: dense_decay_scale 0, 1.25, 5 and
    # 20, the epochs
    python benchmarks/active_setting_probe.py \
        --study active_learning-gal2017-minibatch_loss_sum-init_torch.json --save
    python benchmarks/active_setting_probe.py --setting epochs --values 25,50,100,200 \
        --study active_learning-gal2017-minibatch_loss_sum-init_torch.json --save
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
from dataclasses import replace
from pathlib import Path

import torch

from core.active.loop import ActiveConfig, ActiveLearner, load_active_data, round_accuracy
from core.active.study import run_entry, stored_result
from core.atomic import atomic_write_text
from core.cli.overrides import parse_value
from core.paths import REPO_ROOT

VALIDATION = 100
PROBES = REPO_ROOT / "notebook" / "active"


def study_config(study: dict) -> ActiveConfig:
    """The settings of every run of a stored study (``core active --save``)."""
    names = {f.name for f in dataclasses.fields(ActiveConfig)}
    settings = {
        k: tuple(v) if isinstance(v, list) else v
        for k, v in study["settings"].items()
        if k in names
    }
    return ActiveConfig(**settings)


def stored_rounds(study: dict, acquisition: str, seed: int) -> list[dict]:
    """The rounds of the study's run, found in the disk cache by its curve.

    Runs cached before a setting existed (the study from PyTorch's weights predates ``init``)
    are under older cache keys; the run whose test accuracies are those the study stored is the
    one.

    Raises:
        FileNotFoundError: If no cached run has that curve (run the study first).
    """
    curve = study["curves"][acquisition]["per_seed"][seed]["accuracy"]
    folder = run_entry(study_config(study)).path.parent
    for path in folder.glob("*.json"):
        rounds = json.loads(path.read_text())
        if [r["accuracy"] for r in rounds] == curve:
            return rounds
    raise FileNotFoundError(f"no cached run of {acquisition}, seed {seed}")


def acquired_set(
    study: dict, acquisition: str, seed: int, labels: int, data: tuple
) -> ActiveLearner:
    """A learner of the study's run holding the labelled set it had at ``labels``.

    Args:
        study: The stored study.
        acquisition: The run's acquisition function.
        seed: Its seed.
        labels: Labelled images (the initial 20 plus whole rounds of 10).
        data: What :func:`load_active_data` returns.

    Returns:
        An :class:`ActiveLearner` whose ``labelled`` is that set.
    """
    config = replace(study_config(study), acquisition=acquisition, seed=seed)
    learner = ActiveLearner(config, data)
    for stored in stored_rounds(study, acquisition, seed):
        if len(learner.labelled) >= labels:
            break
        learner.labelled += stored["picked"]
    if len(learner.labelled) != labels:
        raise ValueError(f"the run has no round with {labels} labels")
    return learner


def validation_set(learner: ActiveLearner, seed: int) -> torch.Tensor:
    """``VALIDATION`` training images outside the run's pool and labelled set.

    Args:
        learner: The run.
        seed: Seed of the draw.

    Returns:
        ``(VALIDATION,)`` training-set indices.
    """
    used = set(learner.pool) | set(learner.labelled)
    rest = torch.tensor([i for i in range(len(learner.data[0])) if i not in used])
    order = torch.randperm(len(rest), generator=torch.Generator().manual_seed(seed))
    return rest[order[:VALIDATION]]


def probe(
    study: dict, acquisition: str, seed: int, labels: int, setting: str, values: list, data: tuple
) -> dict:
    """Test and validation accuracy of the network retrained with each value of ``setting``.

    Returns:
        ``{"acquisition", "seed", "labels", "test": {value: accuracy}, "validation": {...},
        "picked": the value validation picks (ties: the preset's, then the smaller)}``.
    """
    learner = acquired_set(study, acquisition, seed, labels, data)
    preset = getattr(learner.config, setting)
    x_train, y_train, x_test, y_test = data
    index = torch.tensor(learner.labelled)
    held_out = validation_set(learner, seed)
    row = {"acquisition": acquisition, "seed": seed, "labels": labels}
    row["test"], row["validation"] = {}, {}
    for value in values:
        learner.config = replace(learner.config, **{setting: value})
        network = learner.train_on(x_train[index], y_train[index])
        n = learner.config.test_size
        row["test"][value] = round_accuracy(network, x_test[:n], y_test[:n], learner.config)
        row["validation"][value] = round_accuracy(
            network, x_train[held_out], y_train[held_out], learner.config
        )
    row["picked"] = max(values, key=lambda v: (row["validation"][v], v == preset, -v))
    return row


def summary(rows: list[dict], preset: float) -> str:
    """One line per acquired set: the preset's accuracy, validation's pick and the test's best."""
    gains_valid = [r["test"][r["picked"]] - r["test"][preset] for r in rows]
    gains_best = [max(r["test"].values()) - r["test"][preset] for r in rows]
    by_value = {v: statistics.mean(r["test"][v] for r in rows) for v in rows[0]["test"]}
    values = ", ".join(f"{v:g}: {a:.2%}" for v, a in by_value.items())
    return (
        f"{rows[0]['acquisition']} at {rows[0]['labels']} labels ({len(rows)} runs) — mean test "
        f"accuracy per value {values}; validation's pick "
        f"{statistics.mean(gains_valid):+.2%}, the test's best {statistics.mean(gains_best):+.2%}"
        f" against the preset's {preset:g} (picks: {[r['picked'] for r in rows]})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--runs",
        default="bald:150,bald:200,random:250",
        help="comma-separated ACQUISITION:LABELS of the stored runs",
    )
    parser.add_argument("--seeds", type=int, default=3, help="the runs' seeds 0 … N − 1")
    parser.add_argument(
        "--study",
        default="active_learning-gal2017.json",
        help="a stored study of the Active learning page",
    )
    parser.add_argument(
        "--setting", default="dense_decay_scale", help="a numeric field of ActiveConfig"
    )
    parser.add_argument("--values", default="0,1.25,5,20", help="comma-separated values of it")
    parser.add_argument("--save", action="store_true", help="write the result to notebook/active/")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = load_active_data()
    study = stored_result(args.study)
    if study is None:
        raise SystemExit(f"no stored study {args.study}")
    preset = getattr(study_config(study), args.setting)
    values = [parse_value(v, preset) for v in args.values.split(",")]
    if preset not in values:
        values.append(preset)
    groups = []
    for part in args.runs.split(","):
        acquisition, labels = part.split(":")
        rows = [
            probe(study, acquisition, s, int(labels), args.setting, values, data)
            for s in range(args.seeds)
        ]
        print(summary(rows, preset), flush=True)
        groups.append(rows)
    if args.save:
        path = PROBES / f"{Path(args.study).stem}-{args.setting}-probe.json"
        result = {"study": args.study, "setting": args.setting, "values": values}
        result["validation"] = VALIDATION
        atomic_write_text(path, json.dumps({**result, "groups": groups}, indent=1) + "\n")
        print(f"saved {path}")


if __name__ == "__main__":
    main()
