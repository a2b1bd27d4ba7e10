"""Would another setting of the gal2017 preset's network reach more accuracy on few labels?

Trains the preset's network (its training, its L2 term) on the same random labelled sets with
each value of one setting and prints the test accuracy (10,000 images), paired by seed: the
labelled set is the run's balanced 20 plus the first images of its pool, so seed s gives every
value the same images, initial weights and minibatch order. Saves the numbers with ``--save``.

    # Keras' initial weights against PyTorch's (the preset takes Keras')
    python benchmarks/active_init_probe.py --labels 100,200,250 --seeds 8 --save
    # the test accuracy with dropout off (Keras' evaluate, the preset's) against the mean of
    # 100 MC-dropout passes (the paper's "dropout approximation at test time", if that is
    # what it means)
    python benchmarks/active_init_probe.py --setting n_eval_samples --values 0,100 --save
    # Keras 1's Glorot fans (the preset's) against Keras 0.3's, which the authors' code ran on
    python benchmarks/active_init_probe.py --values glorot,glorot_keras03 --tag keras03 --save
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace

import torch

from core.active.loop import ActiveLearner, load_active_data, round_accuracy
from core.active.protocols import PROTOCOLS
from core.atomic import atomic_write_text
from core.cli.overrides import parse_value
from core.paths import REPO_ROOT


def result_path(setting: str, tag: str = ""):
    """Where ``--save`` writes the probe of ``setting`` (``tag``: a further part of the name)."""
    name = f"{setting}-{tag}" if tag else setting
    return REPO_ROOT / "notebook" / "active" / f"active_learning-gal2017-{name}-probe.json"


def accuracy(setting: str, value, labels: int, seed: int, data: tuple) -> float:
    """Test accuracy of the preset's network with ``setting = value`` on seed ``seed``'s
    first labels.

    Args:
        setting: A field of :class:`~core.active.loop.ActiveConfig`.
        value: Its value.
        labels: Labelled images (≥ the preset's initial 20).
        seed: The run's seed: its initial set, pool order and training noise.
        data: What :func:`load_active_data` returns.

    Returns:
        The fraction of the 10,000 test images predicted.
    """
    config = replace(PROTOCOLS["gal2017"].config.run, acquisition="random", seed=seed)
    config = replace(config, **{setting: value})
    learner = ActiveLearner(config, data)
    x_train, y_train, x_test, y_test = data
    index = torch.tensor(learner.labelled + learner.pool[: labels - config.initial])
    network = learner.train_on(x_train[index], y_train[index])
    return round_accuracy(network, x_test[: config.test_size], y_test[: config.test_size], config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--setting", default="init", help="a field of ActiveConfig")
    parser.add_argument(
        "--values", default="torch,glorot", help="comma-separated; gain: last − first"
    )
    parser.add_argument("--labels", default="100,200,250", help="comma-separated label counts")
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0 … N − 1")
    parser.add_argument(
        "--save", action="store_true", help="write the result into notebook/active/"
    )
    parser.add_argument("--tag", default="", help="a further part of the saved file's name")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = load_active_data()
    names = args.values.split(",")
    default = getattr(PROTOCOLS["gal2017"].config.run, args.setting)
    values = {name: parse_value(name, default) for name in names}
    rows = []
    for labels in (int(n) for n in args.labels.split(",")):
        row = {"labels": labels}
        for name, value in values.items():
            row[name] = [accuracy(args.setting, value, labels, s, data) for s in range(args.seeds)]
        first, last = names[0], names[-1]
        gains = [b - a for a, b in zip(row[first], row[last], strict=True)]
        row["gain_mean"] = statistics.mean(gains)
        row["gain_std"] = statistics.stdev(gains) if len(gains) > 1 else 0.0
        rows.append(row)
        means = ", ".join(f"{name} {statistics.mean(row[name]):.2%}" for name in names)
        print(
            f"{labels:4d} labels: {means}, gain {row['gain_mean']:+.2%} ± {row['gain_std']:.2%} "
            f"(paired over {args.seeds} seeds; {last} ahead in {sum(g > 0 for g in gains)})",
            flush=True,
        )
    if args.save:
        result = {"setting": args.setting, "values": names, "seeds": args.seeds, "rows": rows}
        path = result_path(args.setting, args.tag)
        atomic_write_text(path, json.dumps(result, indent=1) + "\n")
        print(f"saved {path}")


if __name__ == "__main__":
    main()
