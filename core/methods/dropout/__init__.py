"""MC dropout (Gal & Ghahramani 2016): dropout kept on at prediction, each pass its own masks.

Trained by Adam on the average NLL, or with the α-divergence energy (Li & Gal 2017) when the
parameter ``alpha`` > 0.
"""

from __future__ import annotations

from core.methods.base import BanditRole, Method, Setting, prior_precision
from core.methods.dropout.model import DropoutMLP

METHOD = Method(
    kind="dropout",
    order=3,
    convolutional=True,
    title="MC dropout",
    summary="Dropout stays on when predicting: every pass drops other units (Gal 2016).",
    model_class=DropoutMLP,
    prior_weight_decay=lambda config, sigma: (
        (1 - config.params["dropout"]) * prior_precision(config, sigma)
    ),
    settings=(
        Setting(
            "dropout",
            "Dropout probability p",
            "Each hidden unit is dropped with probability p in training and at prediction.",
            0.5,
            options=tuple(round(0.05 * k, 2) for k in range(1, 19)),
            low=0.0,
            high=0.95,
        ),
    ),
    internal=(
        Setting(
            "conv_dropout",
            "Dropout on the convolutional features",
            "Drop probability of the features the convolutions hand to the dense layers.",
            0.5,
            low=0.0,
            high=0.95,
        ),
        Setting(
            "alpha",
            "α of the α-divergence",
            "0: the average NLL; above 0, the α-divergence energy of Li & Gal (2017).",
            0.0,
            low=0.0,
            high=1.0,
        ),
        Setting(
            "n_samples",
            "Passes S per step",
            "Monte-Carlo passes per training step that the α-divergence energy combines.",
            1,
            low=1,
            high=100,
        ),
    ),
    bandit=BanditRole(agent="MC-dropout Thompson", draws=True),
)
