"""One training step (objective, backward, optimiser), eager or replayed from a CUDA graph.

On a GPU a step of the lab's small networks is launch-bound: the forward pass, the backward
pass and Adam are hundreds of kernels of a few microseconds each, issued one by one from Python.
A CUDA graph (:class:`torch.cuda.CUDAGraph`) records the step's kernels once and replays them
all with one launch. :class:`TrainStep` does this for every network and estimator whose step is
"objective, backward, optimiser step" (the base :class:`~core.training.Procedure`), following
the rules of ``torch.cuda.graph``:

* **static inputs**: each call copies its batch into fixed buffers and its KL weight into a
  device scalar; the learning rate is a device tensor of a capturable Adam
  (:func:`~core.training.make_optimizer` on CUDA), which the per-epoch decay updates in place;
* **warm-up**: the first :data:`WARMUP_STEPS` calls run eagerly on a side stream (they are real
  steps of the run), so lazy initialisation (Adam's moments, library handles) happens before the
  capture;
* **gradients** are set to None once before the capture, so the backward pass allocates them in
  the graph's memory pool and every replay overwrites them; they are not reset to None after;
* **randomness** comes from the default CUDA generator, whose seed and offset each replay reads
  and advances exactly as the eager step would: on one seed, graph and eager runs draw the same
  noise (``tests/unit/test_cuda_graphs.py``);
* **fixed shapes**: a call with another batch size (the last, partial batch of an epoch) runs
  eagerly, on the same gradient buffers; a new S or batch size needs a new :class:`TrainStep`.

On the CPU every call is eager (the compiled kernels of :mod:`core.engine.native` keep its step
compute-bound). ``BNN_CUDA_GRAPHS=0`` turns graphs off on CUDA too.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from core import settings
from core.engine.objective import ObjectiveTerms

WARMUP_STEPS = 3
"""Eager steps before the capture."""

Objective = Callable[[torch.Tensor, torch.Tensor, torch.Tensor | float], ObjectiveTerms]
"""``(x (B, ...), y (B,), KL weight) -> ObjectiveTerms`` of one minibatch."""


def cuda_graphs_enabled(device: torch.device) -> bool:
    """Whether training steps on ``device`` are captured in CUDA graphs.

    Args:
        device: The training device.

    Returns:
        True on CUDA unless ``BNN_CUDA_GRAPHS=0``; False on the CPU.
    """
    return device.type == "cuda" and settings.enabled("BNN_CUDA_GRAPHS")


class TrainStep:
    """``step(x, y, weight)``: one optimiser step on a minibatch, eager or from a CUDA graph.

    Args:
        objective: The minibatch objective, e.g. a partial of
            :func:`~core.engine.objective.minibatch_objective`.
        zero_grad: ``zero_grad(set_to_none)``: clears the optimised parameters' gradients.
        step: Takes the optimiser step with the gradients.
        batch_size: B of the full minibatches, the ones the graph is captured for (others,
            e.g. an epoch's last, run eagerly).
        graphs: Capture the step in a CUDA graph (the parameters and batches must be on CUDA
            and the optimiser capturable).
    """

    def __init__(
        self,
        objective: Objective,
        zero_grad: Callable[[bool], None],
        step: Callable[[], None],
        *,
        batch_size: int,
        graphs: bool = False,
    ) -> None:
        self.objective = objective
        self.batch_size = batch_size
        self.zero_grad = zero_grad
        self.optimizer_step = step
        self.graphs = graphs
        self.calls = 0  # full-batch calls before the capture
        self.graph: torch.cuda.CUDAGraph | None = None
        self._static: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor] | None = None

    @property
    def graphed(self) -> bool:
        """Whether a graph has been captured."""
        return self.graph is not None

    def _run(
        self, x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | float, clear: bool | None
    ) -> torch.Tensor:
        """The step's kernels.

        ``clear``: set the gradients to None (True), zero them in place (False) or leave them
        (None: inside the capture, where they are None already).
        """
        terms = self.objective(x, y, weight)
        if clear is not None:
            self.zero_grad(clear)
        terms.loss.backward()
        self.optimizer_step()
        with torch.no_grad():
            wrong = (terms.probs.argmax(-1) != y).sum().to(terms.loss.dtype)
            return torch.stack([terms.loss.detach(), terms.nll.detach(), terms.kl.detach(), wrong])

    def __call__(self, x: torch.Tensor, y: torch.Tensor, weight: float) -> torch.Tensor:
        """Take one step.

        Args:
            x: Inputs ``(B, ...)`` on the training device.
            y: Targets ``(B,)``.
            weight: The KL weight β·π_i of this minibatch.

        Returns:
            ``(4,)``: the minibatch's loss, NLL and KL (nats) and its number of misclassified
            inputs, on the device; overwritten by the next call, so add it up at once.
        """
        if not self.graphs or x.shape[0] != self.batch_size:
            return self._run(x, y, weight, clear=self.graph is None)
        if self.graph is not None:
            static_x, static_y, static_weight, out = self._static
            static_x.copy_(x)
            static_y.copy_(y)
            static_weight.fill_(weight)
            self.graph.replay()
            return out
        self.calls += 1
        if self.calls > WARMUP_STEPS:
            return self._capture(x, y, weight)
        current = torch.cuda.current_stream(x.device)
        side = torch.cuda.Stream(x.device)
        side.wait_stream(current)
        with torch.cuda.stream(side):
            out = self._run(x, y, weight, clear=True)
        current.wait_stream(side)
        return out

    def _capture(self, x: torch.Tensor, y: torch.Tensor, weight: float) -> torch.Tensor:
        """Record the step for this call's shapes, then replay it once for this call."""
        static_x, static_y = x.clone(), y.clone()
        static_weight = torch.tensor(float(weight), device=x.device)
        self.zero_grad(True)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out = self._run(static_x, static_y, static_weight, clear=None)
        self.graph, self._static = graph, (static_x, static_y, static_weight, out)
        graph.replay()
        return out
