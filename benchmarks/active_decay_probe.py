"""Would tuning the weight decay on 100 validation images, as Gal et al. did, need fewer labels?

Gal, Islam & Ghahramani (2017) optimise the weight decay on a validation set of 100 images and
do not give its value; the gal2017 preset fixes the authors' code's L2 term on the dense layer
(``dense_decay_scale`` 5, a gradient term 5 / N · W for N labels). This probe takes the labelled
sets that the stored runs of the preset acquired (the cached runs of ``core active --protocol
gal2017``), retrains the preset's network on each with every scale of ``--scales`` and prints
the test accuracy (10,000 images, dropout off) of

- every scale, paired by run (the same images, initial weights and minibatch order),
- the scale that 100 validation images (training images outside the pool, never labelled by the
  run) pick — what tuning on validation data would have given at that round,
- the best scale on the test set itself — an upper bound on what any tuning of this term gives.

    python benchmarks/active_decay_probe.py --runs bald:150,bald:200,random:250 --save
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace

import torch

from core.active.loop import ActiveLearner, load_active_data, round_accuracy, run_entry
from core.active.protocols import PROTOCOLS
from core.storage.atomic import atomic_write_text
from core.storage.paths import REPO_ROOT

RESULT = REPO_ROOT / "benchmarks" / "active_learning-gal2017-decay-probe.json"
VALIDATION = 100


def stored_rounds(acquisition: str, seed: int) -> list[dict]:
    """The rounds of the stored study's run, found in the disk cache by its curve.

    The study's runs were cached before the ``init`` setting existed, so their cache keys are
    not today's; the run whose test accuracies are those the study stored is the one.

    Raises:
        FileNotFoundError: If no cached run has that curve (run the preset first).
    """
    study = json.loads((REPO_ROOT / "benchmarks" / "active_learning-gal2017.json").read_text())
    curve = study["curves"][acquisition]["per_seed"][seed]["accuracy"]
    folder = run_entry(PROTOCOLS["gal2017"].config.run).path.parent
    for path in folder.glob("*.json"):
        rounds = json.loads(path.read_text())
        if [r["accuracy"] for r in rounds] == curve:
            return rounds
    raise FileNotFoundError(f"no cached gal2017 run of {acquisition}, seed {seed}")


def acquired_set(acquisition: str, seed: int, labels: int, data: tuple) -> ActiveLearner:
    """A learner of the stored gal2017 run holding the labelled set it had at ``labels``.

    Args:
        acquisition: The run's acquisition function.
        seed: Its seed.
        labels: Labelled images (the initial 20 plus whole rounds of 10).
        data: What :func:`load_active_data` returns.

    Returns:
        An :class:`ActiveLearner` whose ``labelled`` is that set.
    """
    config = replace(PROTOCOLS["gal2017"].config.run, acquisition=acquisition, seed=seed)
    learner = ActiveLearner(config, data)
    for stored in stored_rounds(acquisition, seed):
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


def probe(acquisition: str, seed: int, labels: int, scales: list[float], data: tuple) -> dict:
    """Test and validation accuracy of the network retrained with each decay scale.

    Returns:
        ``{"acquisition", "seed", "labels", "test": {scale: accuracy}, "validation": {...},
        "picked": the scale validation picks (ties: the preset's, then the smaller)}``.
    """
    learner = acquired_set(acquisition, seed, labels, data)
    x_train, y_train, x_test, y_test = data
    index = torch.tensor(learner.labelled)
    held_out = validation_set(learner, seed)
    row = {"acquisition": acquisition, "seed": seed, "labels": labels}
    row["test"], row["validation"] = {}, {}
    for scale in scales:
        learner.config = replace(learner.config, dense_decay_scale=scale)
        network = learner.train_on(x_train[index], y_train[index])
        n = learner.config.test_size
        row["test"][scale] = round_accuracy(network, x_test[:n], y_test[:n], learner.config)
        row["validation"][scale] = round_accuracy(
            network, x_train[held_out], y_train[held_out], learner.config
        )
    preset = PROTOCOLS["gal2017"].config.run.dense_decay_scale
    row["picked"] = max(scales, key=lambda s: (row["validation"][s], s == preset, -s))
    return row


def summary(rows: list[dict], preset: float) -> str:
    """One line per acquired set: the preset's accuracy, validation's pick and the test's best."""
    gains_valid = [r["test"][r["picked"]] - r["test"][preset] for r in rows]
    gains_best = [max(r["test"].values()) - r["test"][preset] for r in rows]
    by_scale = {s: statistics.mean(r["test"][s] for r in rows) for s in rows[0]["test"]}
    scales = ", ".join(f"{s:g}: {a:.2%}" for s, a in by_scale.items())
    return (
        f"{rows[0]['acquisition']} at {rows[0]['labels']} labels ({len(rows)} runs) — mean test "
        f"accuracy per scale {scales}; validation's pick "
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
    parser.add_argument("--scales", default="0,1.25,5,20", help="dense_decay_scale values")
    parser.add_argument("--save", action="store_true", help=f"write {RESULT.name}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = load_active_data()
    scales = [float(s) for s in args.scales.split(",")]
    preset = PROTOCOLS["gal2017"].config.run.dense_decay_scale
    if preset not in scales:
        scales.append(preset)
    groups = []
    for part in args.runs.split(","):
        acquisition, labels = part.split(":")
        rows = [probe(acquisition, s, int(labels), scales, data) for s in range(args.seeds)]
        print(summary(rows, preset), flush=True)
        groups.append(rows)
    if args.save:
        text = json.dumps({"scales": scales, "validation": VALIDATION, "groups": groups}, indent=1)
        atomic_write_text(RESULT, text + "\n")
        print(f"saved {RESULT}")


if __name__ == "__main__":
    main()
