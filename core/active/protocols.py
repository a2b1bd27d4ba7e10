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
TRAINING_IMAGES = 60_000
VALIDATION_IMAGES = 100

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
                weight_decay=1e-4,
                initial=20,
                acquire=10,
                budget=1000,
                pool_size=TRAINING_IMAGES - 20 - VALIDATION_IMAGES,
                candidates=2000,
                n_samples=100,
                train_steps=1000,
                test_size=10_000,
                n_eval_samples=20,
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
            "run.weight_decay": "tuned on the 100 validation images in the paper (value not "
            "given): Adam's L2 coefficient 1e-4 here, not tuned yet",
            "run.initial": f"{GAL}: 20 initial labels, balanced over the classes",
            "run.acquire": f"{GAL}: 10 images acquired per round",
            "run.budget": f"{GAL}: up to 1,000 labels",
            "run.pool_size": f"{GAL}: the rest of the training set (the last 100 images "
            "of the seeded order are its validation images, never acquired)",
            "run.candidates": f"{GAL}: acquisitions scored on a random 2,000 of the pool",
            "run.n_samples": f"{GAL}: T = 100 dropout passes per acquisition",
            "run.train_steps": "not given in the paper (each round retrains from scratch): "
            "1,000 steps of 32 images, the lab's choice",
            "run.test_size": f"{GAL}: the 10,000 MNIST test images",
            "run.n_eval_samples": "not given in the paper: 20 dropout passes per test image",
        },
    ),
}
"""Protocol name → protocol."""
