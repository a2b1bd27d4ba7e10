"""Does Keras' initialisation make the gal2017 CNN learn more from few labels than PyTorch's?

Trains the preset's network (its training, its L2 term) on the same random labelled sets with
each initialisation and prints the test accuracy (10,000 images, dropout off), paired by seed:
the labelled set is the run's balanced 20 plus the first images of its pool, so seed s gives
both initialisations the same images. Saves the numbers with ``--save``.

    python benchmarks/active_init_probe.py --labels 100,200,250 --seeds 8 --save
"""

from __future__ import annotations

import argparse
import json
import statistics
from dataclasses import replace

import torch

from core.active.loop import ActiveLearner, load_active_data, round_accuracy
from core.active.protocols import PROTOCOLS
from core.engine.initialisation import INITIALISATIONS
from core.storage.atomic import atomic_write_text
from core.storage.paths import REPO_ROOT

RESULT = REPO_ROOT / "benchmarks" / "active_learning-gal2017-init-probe.json"


def accuracy(init: str, labels: int, seed: int, data: tuple) -> float:
    """Test accuracy of the preset's network with ``init`` on seed ``seed``'s first labels.

    Args:
        init: A key of :data:`INITIALISATIONS`.
        labels: Labelled images (≥ the preset's initial 20).
        seed: The run's seed: its initial set, pool order and training noise.
        data: What :func:`load_active_data` returns.

    Returns:
        The fraction of the 10,000 test images predicted.
    """
    config = replace(PROTOCOLS["gal2017"].config.run, acquisition="random", init=init, seed=seed)
    learner = ActiveLearner(config, data)
    x_train, y_train, x_test, y_test = data
    index = torch.tensor(learner.labelled + learner.pool[: labels - config.initial])
    network = learner.train_on(x_train[index], y_train[index])
    return round_accuracy(network, x_test[: config.test_size], y_test[: config.test_size], config)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--labels", default="100,200,250", help="comma-separated label counts")
    parser.add_argument("--seeds", type=int, default=8, help="seeds 0 … N − 1")
    parser.add_argument("--save", action="store_true", help=f"write {RESULT.name}")
    args = parser.parse_args()
    torch.set_num_threads(1)
    data = load_active_data()
    rows = []
    for labels in (int(n) for n in args.labels.split(",")):
        row = {"labels": labels}
        for init in INITIALISATIONS:
            row[init] = [accuracy(init, labels, s, data) for s in range(args.seeds)]
        gains = [g - t for g, t in zip(row["glorot"], row["torch"], strict=True)]
        row["gain_mean"] = statistics.mean(gains)
        row["gain_std"] = statistics.stdev(gains) if len(gains) > 1 else 0.0
        rows.append(row)
        print(
            f"{labels:4d} labels: torch {statistics.mean(row['torch']):.2%}, glorot "
            f"{statistics.mean(row['glorot']):.2%}, gain {row['gain_mean']:+.2%} ± "
            f"{row['gain_std']:.2%} (paired over {args.seeds} seeds; glorot ahead in "
            f"{sum(g > 0 for g in gains)})",
            flush=True,
        )
    if args.save:
        atomic_write_text(RESULT, json.dumps({"seeds": args.seeds, "rows": rows}, indent=1) + "\n")
        print(f"saved {RESULT}")


if __name__ == "__main__":
    main()
