"""A bandit step's minibatch updates, run eagerly or replayed from one CUDA graph.

Every step a :class:`~core.bandits.neural.NeuralGroup` takes U minibatch updates of all its
networks (64 in Blundell et al.'s protocol), each "loss, backward, optimiser step". On a GPU
these networks are tiny, so an update is a few hundred kernels of a few microseconds each and
Python issuing them is the bottleneck. :class:`StepUpdates` records a step's U updates once as
one CUDA graph that reads the minibatches' positions from a fixed device buffer, and replays it
every step, following the rules of :mod:`core.training.step`:

* **static inputs**: the positions ``(U, K, B)`` are copied into a fixed buffer; the replay
  buffer is updated in place and the number of interactions it holds (the KL weight's N) is a
  device scalar the group fills before each call;
* **warm-up**: the first :data:`~core.training.step.WARMUP_STEPS` calls run eagerly on a side
  stream (they are real steps of the run), so lazy initialisation (Adam's moments, compiled
  kernels, library handles) happens before the capture;
* **gradients** are set to None before every update, eagerly and inside the capture, so each
  backward pass writes them afresh (in the graph's memory pool when captured);
* **randomness** comes from the default CUDA generator, whose seed and offset each replay reads
  and advances exactly as the eager updates would: on one seed, graph and eager steps draw the
  same noise (``tests/unit/test_bandits_devices.py``).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from core.training.step import WARMUP_STEPS


class StepUpdates:
    """``updates(idx)``: a step's U minibatch updates, eager or from a CUDA graph.

    Args:
        update: ``update(u, positions)``: update u of the step on the minibatch at positions
            ``(K, B)`` of the replay buffer (loss, backward, optimiser step; the gradients are
            None when it is called).
        zero_grad: ``zero_grad(set_to_none)``: clears the optimised parameters' gradients.
        graphs: Capture the updates in a CUDA graph (the networks, buffer and positions on
            CUDA, the optimiser capturable).
    """

    def __init__(
        self,
        update: Callable[[int, torch.Tensor], None],
        zero_grad: Callable[[bool], None],
        *,
        graphs: bool = False,
    ) -> None:
        self.update = update
        self.zero_grad = zero_grad
        self.graphs = graphs
        self.calls = 0  # calls before the capture
        self.graph: torch.cuda.CUDAGraph | None = None
        self._positions: torch.Tensor | None = None

    @property
    def graphed(self) -> bool:
        """Whether a graph has been captured."""
        return self.graph is not None

    def _run(self, positions: torch.Tensor) -> None:
        for u, batch in enumerate(positions):
            self.zero_grad(True)
            self.update(u, batch)

    def __call__(self, positions: torch.Tensor) -> None:
        """Take the step's updates.

        Args:
            positions: Minibatch positions in the replay buffer ``(U, K, B)``, on the
                networks' device: update u trains network k on ``positions[u, k]``.
        """
        if not self.graphs:
            self._run(positions)
        elif self.graph is not None and positions.shape == self._positions.shape:
            self._positions.copy_(positions)
            self.graph.replay()
        elif self.graph is not None or self.calls >= WARMUP_STEPS:
            self._capture(positions)
        else:
            self.calls += 1
            current = torch.cuda.current_stream(positions.device)
            side = torch.cuda.Stream(positions.device)
            side.wait_stream(current)
            with torch.cuda.stream(side):
                self._run(positions)
            current.wait_stream(side)

    def _capture(self, positions: torch.Tensor) -> None:
        """Record the updates for these shapes, then replay them once for this call."""
        static = positions.clone()
        self.zero_grad(True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._run(static)
        self.graph, self._positions = graph, static
        graph.replay()
