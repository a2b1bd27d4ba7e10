"""The papers' active-learning experiments as :class:`~core.protocols.Protocol` presets.

``python -m core active --protocol NAME`` runs one (its acquisition functions over its seeds,
every run cached on disk as it finishes, so an interrupted study resumes) and prints its
settings and their sources first.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.active.loop import ActiveConfig
from core.protocols import Protocol


@dataclass(frozen=True)
class ActiveStudy:
    """Acquisition functions compared over seeds, every run otherwise ``run``.

    Attributes:
        acquisitions: Keys of :data:`core.active.acquisition.ACQUISITIONS`.
        seeds: Runs per function (seeds 0 … seeds − 1).
        run: The settings of every run (its ``acquisition`` and ``seed`` are replaced).
    """

    acquisitions: tuple[str, ...]
    seeds: int
    run: ActiveConfig

    def to_dict(self) -> dict:
        """The settings as JSON-serialisable values.

        Returns:
            ``{"acquisitions": [...], "seeds": n, "run": run.to_dict()}``.
        """
        return {
            "acquisitions": list(self.acquisitions),
            "seeds": self.seeds,
            "run": self.run.to_dict(),
        }


GAL = "Gal, Islam & Ghahramani 2017"
CODE = (
    "the authors' code (Riashat/Active-Learning-Bayesian-Convolutional-Neural-Networks "
    "on GitHub, Dropout_BALD_Q10_N1000.py)"
)

PROTOCOLS: dict[str, Protocol] = {
    "gal2017": Protocol(
        name="gal2017",
        title=f"{GAL}: active learning on MNIST with a Bayesian CNN",
        config=ActiveStudy(
            acquisitions=("bald", "variation_ratio", "entropy", "random"),
            seeds=3,
            run=ActiveConfig(
                kind="dropout",
                conv=(32, 32),
                conv_layout="pooled",
                hidden=(128,),
                conv_dropout=0.25,
                dropout=0.5,
                dense_decay_scale=5.0,
                minibatch_loss="mean",
                initial=20,
                acquire=10,
                budget=1000,
                pool_size=40_000,
                candidates=2000,
                n_samples=100,
                epochs=50,
                batch_size=128,
                test_size=10_000,
                n_eval_samples=0,
                stop_at=0.95,
                init="glorot_keras03",
            ),
        ),
        sources={
            "acquisitions": f"{GAL}: BALD, variation ratios, max entropy and random "
            "(mean STD left out here)",
            "seeds": f"{GAL}: 3 repetitions",
            "run.kind": f"{GAL}: a Bayesian CNN by MC dropout",
            "run.conv": f"{GAL}: convolution-relu-convolution-relu with 32 filters each",
            "run.conv_layout": f"{GAL}: 4 × 4 kernels, then 2 × 2 max-pooling",
            "run.hidden": f"{GAL}: a dense layer of 128 units before the softmax",
            "run.conv_dropout": f"{GAL}: dropout 0.25 after the pooling",
            "run.dropout": f"{GAL}: dropout 0.5 after the dense layer",
            "run.dense_decay_scale": f"{CODE}: an L2 term 2.5 / N · Σw² on the dense layer's "
            "weights for N labelled images, added to the mean loss, i.e. a gradient term "
            "5 / N · w (the paper: tuned on 100 validation images)",
            "run.minibatch_loss": f"{CODE}: Keras' loss, a minibatch's mean cross-entropy "
            "plus the L2 term (the lab's objective sums the cross-entropies: under Adam an "
            "epoch's last, smaller minibatch would weigh less and the L2 term 1 / 128 as much)",
            "run.initial": f"{GAL}: 20 initial labels, balanced over the classes",
            "run.acquire": f"{GAL}: 10 images acquired per round",
            "run.budget": f"{GAL}: up to 1,000 labels",
            "run.pool_size": f"{CODE}: a pool of 40,000 training images",
            "run.candidates": f"{GAL}: acquisitions scored on a random 2,000 of the pool",
            "run.n_samples": f"{GAL}: T = 100 dropout passes per acquisition",
            "run.epochs": f"{CODE}: each round retrains from scratch for 50 epochs (Adam)",
            "run.batch_size": f"{CODE}: minibatches of 128",
            "run.test_size": f"{GAL}: the 10,000 MNIST test images",
            "run.n_eval_samples": f"{CODE}: test accuracy of the network with dropout off "
            "(Keras' evaluate)",
            "run.init": f"{CODE}, written for Keras 0.3 (its show_accuracy and "
            "predict_stochastic are that version's; the authors' copy of Keras, in "
            "Riashat/Deep-Bayesian-Active-Learning, is 0.3.1): Keras 0.3's default initial "
            "weights, Glorot-uniform with a convolution's fan-out its output channels, and zero "
            "biases (later Keras' fans, in · k² and out · k², and PyTorch's own, uniform in "
            "±1/√fan_in for the biases too, are ablations)",
            "run.stop_at": f"{GAL}'s Table 1 counts the labels to 10 % and 5 % test error; a run "
            "stops at 5 % (the curves to 1,000 labels would take about 10 hours here)",
        },
    ),
}
"""Protocol name → protocol."""

PAPER_LABELS: dict[str, dict[int, int]] = {
    "bald": {90: 145, 95: 335},
    "variation_ratio": {90: 120, 95: 295},
    "entropy": {90: 165, 95: 355},
    "random": {90: 255, 95: 835},
}
"""Gal, Islam & Ghahramani 2017, Table 1: labels to 10 % and 5 % test error (accuracy 90, 95 %),
per acquisition function."""

WITHIN = 1.25
"""A reproduction counts as close when it needs at most this many times the paper's labels."""


def paper_comparison(result: dict) -> list[dict]:
    """Labels to 10 % and 5 % test error per acquisition, beside Gal et al.'s Table 1.

    Args:
        result: What :func:`core.active.study.curves_for` returned for the ``gal2017`` runs
            (each curve with its ``per_seed`` labels). An error level below what its runs'
            ``stop_at`` let them reach (an ablation stopped at 10 % error) is left out.

    Returns:
        One row per acquisition function and error level: ``{"acquisition", "error" (percent),
        "seeds" (each seed's labels, None where not reached), "mean" (None unless every seed
        reached it), "paper", "ratio" (mean / paper), "close" (ratio ≤ :data:`WITHIN`)}``.
    """
    stop_at = result.get("settings", {}).get("stop_at")
    levels = [a for a in (90, 95) if stop_at is None or a <= round(100 * stop_at)]
    rows = []
    for name, curve in result["curves"].items():
        for accuracy in levels:
            seeds = [run[f"labels_to_{accuracy}"] for run in curve["per_seed"]]
            reached = None not in seeds
            mean = sum(seeds) / len(seeds) if reached else None
            paper = PAPER_LABELS.get(name, {}).get(accuracy)
            ratio = mean / paper if mean is not None and paper else None
            rows.append(
                {
                    "acquisition": name,
                    "error": 100 - accuracy,
                    "seeds": seeds,
                    "mean": mean,
                    "paper": paper,
                    "ratio": ratio,
                    "close": ratio is not None and ratio <= WITHIN,
                }
            )
    return rows
