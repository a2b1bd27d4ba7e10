"""MC dropout (Gal & Ghahramani 2016): dropout kept on at prediction, each pass its own masks.

Trained by Adam on the average NLL, or with the α-divergence energy (Li & Gal 2017) when the
training configuration's ``alpha`` > 0.
"""

from __future__ import annotations

from core.methods.base import Method, Setting, prior_precision
from core.methods.dropout.model import DropoutMLP

METHOD = Method(
    kind="dropout",
    order=3,
    convolutional=True,
    title="MC dropout",
    summary="Dropout stays on when predicting: every pass drops other units (Gal 2016).",
    model_class=DropoutMLP,
    prior_weight_decay=lambda config: (1 - config.dropout) * prior_precision(config),
    settings=(
        Setting(
            "dropout",
            "Dropout probability p",
            "Each hidden unit is dropped with probability p in training and at prediction.",
            0.5,
            options=tuple(round(0.05 * k, 2) for k in range(1, 19)),
        ),
    ),
)
