"""What a round's optimiser steps on: the labelled set's loss summed, or averaged per minibatch."""

from __future__ import annotations

import torch

from core.training.loop import Procedure


def minibatch_terms(procedure: type[Procedure], mean: bool, dense_l2: float) -> type[Procedure]:
    """``procedure`` stepping on a minibatch's mean NLL, and with an L2 term on one layer.

    The term is ``dense_l2 / 2 · ‖W‖²`` on the first dense layer's weights W only. The lab's
    objective is a minibatch's sum of NLLs (:func:`~core.engine.objective.minibatch_objective`).
    With ``mean`` every gradient is first divided by the b images of the step's minibatch,
    giving Keras' loss: under Adam, whose steps hardly depend on the gradient's scale, the same
    steps but for an epoch's last, smaller minibatch, which the sum weighs b / B as much as the
    others. The L2 term's gradient ``dense_l2 · W`` is then added, so it is a term of the mean's
    loss, as a Keras layer's regulariser is, or of the sum's.

    Args:
        procedure: The method's training procedure (its network has ``layers``).
        mean: Step on the minibatch's mean NLL.
        dense_l2: The L2 coefficient (0: no term).

    Returns:
        The procedure class with these steps.
    """

    class MinibatchTerms(procedure):
        graphable = False  # the step's gradients are changed from Python

        def optimizer(self, network: torch.nn.Module) -> torch.optim.Optimizer:
            self.decayed = network.layers[0].weight
            optimizer = super().optimizer(network)
            self.trained = [p for group in optimizer.param_groups for p in group["params"]]
            return optimizer

        def before_step(self, step: int) -> None:
            super().before_step(step)
            size, n = self.config.batch_size, self.num_data
            batches = -(-n // size)
            self.images = n - (batches - 1) * size if step % batches == 0 else size

        def step(self) -> None:
            if mean:
                for p in self.trained:
                    if p.grad is not None:
                        p.grad.div_(self.images)
            if dense_l2:
                self.decayed.grad.add_(self.decayed.detach(), alpha=dense_l2)
            super().step()

    return MinibatchTerms
