"""Would a better held-out split let temperature scaling lower every shipped model's ECE?

For each shipped model it compares the temperature fitted (by NLL, as Guo et al. 2017 do) on
the 5,000 held-out training images with the one fitted by NLL on the test set itself — the
best any held-out split could give, used here only as an upper bound, never as a result — and
prints the test ECE at each, the lowest test ECE any temperature reaches, the ECE by chance,
and a bootstrap interval of the held-out T (how much 5,000 images pin it down). The test-set
evaluations and held-out fits come from the same cache as ``python -m core calibration``.

    python benchmarks/temperature_oracle.py --save
"""

from __future__ import annotations

import argparse
import json
import math

import torch

from core.atomic import atomic_write_text
from core.catalogue import list_checkpoints
from core.engine.device import default_device
from core.evaluation.calibration import (
    calibration_metrics,
    ece_noise_floor,
    fit_temperature,
    tempered,
)
from core.paths import REPO_ROOT
from core.storage.checkpoints import checkpoint_dataset, load_checkpoint
from core.studies.calibration.temperature import temperature_fit
from core.studies.calibration.validation import NOISE_SEED, predictive, validation_split
from core.studies.evaluations import evaluate_dataset

RESULT = REPO_ROOT / "notebook" / "calibration" / "calibration-temperature-oracle.json"
N_SAMPLES = 100  # passes per prediction, as in ``core calibration``
GRID = [math.exp(k / 200) for k in range(-100, 201)]  # T from e^-0.5 to e^1, 0.5 % apart


def ece(probs: torch.Tensor, labels: torch.Tensor, temperature: float) -> float:
    """The ECE of ``probs`` ``(N, C)`` raised to ``1 / temperature`` against ``labels``."""
    return calibration_metrics(tempered(probs, temperature), labels)["ece"]


def bootstrap_interval(
    probs: torch.Tensor, labels: torch.Tensor, draws: int = 200, level: float = 0.9
) -> tuple[float, float]:
    """The central ``level`` interval of the NLL-fitted T over bootstrap resamples."""
    generator = torch.Generator().manual_seed(0)
    fits = sorted(
        fit_temperature(probs[i], labels[i])[0]
        for i in (
            torch.randint(len(labels), (len(labels),), generator=generator) for _ in range(draws)
        )
    )
    tail = round((1 - level) / 2 * draws)
    return fits[tail], fits[draws - 1 - tail]


def oracle_row(name: str) -> dict:
    """The held-out and test-set temperatures of one checkpoint and the test ECE at each."""
    dataset = checkpoint_dataset(name)
    test = evaluate_dataset(name, dataset, n_samples=N_SAMPLES)
    held_out = temperature_fit(name, dataset=dataset, n_samples=N_SAMPLES)
    model, _ = load_checkpoint(name, default_device())
    images, labels = validation_split(dataset=dataset)
    validation, _ = predictive(model, images, N_SAMPLES, NOISE_SEED)
    t_test, _ = fit_temperature(test.mean, test.labels)
    eces = [ece(test.mean, test.labels, t) for t in GRID]
    best = min(range(len(GRID)), key=eces.__getitem__)
    return {
        "checkpoint": name,
        "t_held_out": held_out.temperature,
        "t_held_out_90": bootstrap_interval(validation, labels),
        "t_test_nll": t_test,
        "ece": ece(test.mean, test.labels, 1.0),
        "ece_t_held_out": ece(test.mean, test.labels, held_out.temperature),
        "ece_t_test_nll": ece(test.mean, test.labels, t_test),
        "t_lowest_ece": GRID[best],
        "lowest_ece": eces[best],
        "ece_by_chance": ece_noise_floor(test.mean),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkpoint", nargs="*", help="registry names; all shipped by default")
    parser.add_argument("--save", action="store_true", help=f"write {RESULT.name}")
    args = parser.parse_args()
    names = args.checkpoint or [i.spec.name for i in list_checkpoints() if i.available]
    print(
        f"{'model':22s} {'T held out (90 %)':>20s} {'T test':>7s} {'ECE':>7s} "
        f"{'→ held-out T':>13s} {'→ test T':>9s} {'lowest (T)':>15s} {'chance':>7s}"
    )
    rows = []
    for name in names:
        row = oracle_row(name)
        rows.append(row)
        low, high = row["t_held_out_90"]
        print(
            f"{name:22s} {row['t_held_out']:6.2f} ({low:.2f}–{high:.2f}) {row['t_test_nll']:7.2f} "
            f"{row['ece']:7.4f} {row['ece_t_held_out']:13.4f} {row['ece_t_test_nll']:9.4f} "
            f"{row['lowest_ece']:8.4f} ({row['t_lowest_ece']:.2f}) {row['ece_by_chance']:7.4f}",
            flush=True,
        )
    if args.save:
        atomic_write_text(RESULT, json.dumps({"n_samples": N_SAMPLES, "models": rows}, indent=1))
        print(f"wrote {RESULT}")


if __name__ == "__main__":
    main()
