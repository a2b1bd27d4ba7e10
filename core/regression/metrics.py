"""Predictive summaries and numbers of a regression method's sampled functions.

A method's prediction is P sampled functions fₚ(x), each with a noise log-variance sₚ(x): the
predictive distribution is the mixture (1/P)·Σₚ N(fₚ(x), e^(sₚ(x))). Its mean is the average
of fₚ, its variance splits (law of total variance) into

* **epistemic**: the variance of fₚ(x) over passes (the networks disagree), and
* **aleatoric**: the average of e^(sₚ(x)) (the noise each network expects).

Numbers (:func:`regression_metrics`):

* ``rmse_in``: RMSE of the predictive mean on held-out in-range points;
* ``nll_in``: average −log of the mixture density at those points (nats; exact, via
  ``logsumexp`` over passes);
* ``std_in``, ``std_out``: the mean total predictive std on the plot grid inside and outside
  the training intervals (the plot's range, not the zoomed-out view), and ``std_ratio``;
* ``coverage90_in``: fraction of held-out points inside mean ± 1.645·std, the central 90 %
  interval of the Gaussian with the predictive's mean and variance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from core.regression.likelihood import gaussian_nll

Z90 = 1.6448536269514722
"""The standard normal's 95th percentile: mean ± Z90·std is the central 90 % interval."""
N_FUNCTIONS = 30
"""Sampled functions kept for the "spaghetti" plot."""


@dataclass(frozen=True)
class Predictive:
    """The predictive on a grid of inputs, ready to plot.

    Attributes:
        x: Grid ``(G,)``.
        mean: Predictive mean ``(G,)``.
        epistemic_std: Std of the sampled functions ``(G,)``.
        aleatoric_std: Square root of their average noise variance ``(G,)``.
        functions: Up to :data:`N_FUNCTIONS` sampled functions ``(K, G)``.
    """

    x: torch.Tensor
    mean: torch.Tensor
    epistemic_std: torch.Tensor
    aleatoric_std: torch.Tensor
    functions: torch.Tensor

    @property
    def total_std(self) -> torch.Tensor:
        """Predictive std ``(G,)``: √(epistemic² + aleatoric²)."""
        return torch.sqrt(self.epistemic_std**2 + self.aleatoric_std**2)

    def to_dict(self) -> dict[str, torch.Tensor]:
        """The fields as a dict of tensors (what the cache stores).

        Returns:
            Field name → tensor.
        """
        return {
            "x": self.x,
            "mean": self.mean,
            "epistemic_std": self.epistemic_std,
            "aleatoric_std": self.aleatoric_std,
            "functions": self.functions,
        }

    @classmethod
    def from_dict(cls, d: dict[str, torch.Tensor]) -> Predictive:
        """The inverse of :meth:`to_dict`.

        Args:
            d: Field name → tensor.

        Returns:
            The summary.
        """
        return cls(**d)


def moments(mean: torch.Tensor, log_var: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Predictive mean and the epistemic and aleatoric variances of a mixture.

    Args:
        mean: Sampled functions ``(P, B)``.
        log_var: Their noise log-variances ``(P, B)``.

    Returns:
        ``(mean, epistemic_var, aleatoric_var)``, each ``(B,)``; the epistemic variance
        divides by P (the mixture's own variance), 0 for one pass.
    """
    return mean.mean(0), mean.var(0, correction=0), torch.exp(log_var).mean(0)


def summarize(
    x: torch.Tensor, mean: torch.Tensor, log_var: torch.Tensor, n_functions: int = N_FUNCTIONS
) -> Predictive:
    """The plot summary of sampled functions on a grid.

    Args:
        x: Grid ``(G,)``.
        mean: Sampled functions ``(P, G)``.
        log_var: Their noise log-variances ``(P, G)``.
        n_functions: How many functions to keep, evenly spaced over the passes (consecutive
            HMC samples are correlated; spacing them shows the whole chain).

    Returns:
        The summary, float32 on the CPU.
    """
    mu, epistemic, aleatoric = moments(mean, log_var)
    return Predictive(
        x=x.detach().float().cpu(),
        mean=mu.float().cpu(),
        epistemic_std=epistemic.sqrt().float().cpu(),
        aleatoric_std=aleatoric.sqrt().float().cpu(),
        functions=mean[_spread(len(mean), n_functions)].float().cpu().clone(),
    )


def _spread(total: int, count: int) -> torch.Tensor:
    """Indices of ``min(count, total)`` passes evenly spaced over ``total``."""
    return torch.linspace(0, total - 1, min(count, total)).round().long().unique()


def mixture_nll(y: torch.Tensor, mean: torch.Tensor, log_var: torch.Tensor) -> torch.Tensor:
    """−log of the mixture density (1/P)·Σₚ N(y; fₚ, e^(sₚ)) at each target.

    Args:
        y: Targets ``(B,)``.
        mean: Sampled functions ``(P, B)``.
        log_var: Their noise log-variances ``(P, B)``.

    Returns:
        NLLs ``(B,)`` in nats.
    """
    log_p = -gaussian_nll(y, mean, log_var)
    return -(torch.logsumexp(log_p, 0) - math.log(mean.shape[0]))


def regression_metrics(
    y_test: torch.Tensor,
    test_mean: torch.Tensor,
    test_log_var: torch.Tensor,
    grid: Predictive,
    grid_inside: torch.Tensor,
) -> dict[str, float]:
    """The numbers of one method (see the module docstring).

    Args:
        y_test: Held-out in-range targets ``(T,)``.
        test_mean: Sampled functions at the test inputs ``(P, T)``.
        test_log_var: Their noise log-variances ``(P, T)``.
        grid: The predictive on the plot grid.
        grid_inside: Whether each grid point is inside the training intervals ``(G,)``.

    Returns:
        ``rmse_in``, ``nll_in``, ``std_in``, ``std_out``, ``std_ratio`` (``std_out /
        std_in``) and ``coverage90_in``; ``std_out`` (and the ratio) is NaN when the grid has
        no point outside.
    """
    mu, epistemic, aleatoric = moments(test_mean.double(), test_log_var.double())
    std = torch.sqrt(epistemic + aleatoric)
    y = y_test.double()
    total = grid.total_std.double()
    std_in = total[grid_inside].mean().item()
    std_out = total[~grid_inside].mean().item() if (~grid_inside).any() else float("nan")
    return {
        "rmse_in": torch.sqrt(((mu - y) ** 2).mean()).item(),
        "nll_in": mixture_nll(y, test_mean.double(), test_log_var.double()).mean().item(),
        "std_in": std_in,
        "std_out": std_out,
        "std_ratio": std_out / std_in,
        "coverage90_in": ((y - mu).abs() <= Z90 * std).double().mean().item(),
    }


def band_difference(fit: Predictive, reference: Predictive) -> float:
    """How far a method's band is from the reference's (HMC's), on the same grid.

    Args:
        fit: A method's predictive on the plot grid.
        reference: The reference's predictive on the same grid.

    Returns:
        The mean absolute difference of the total predictive standard deviations over the grid
        (units of y); 0 for the same band.

    Raises:
        ValueError: If the grids differ.
    """
    if not torch.equal(fit.x, reference.x):
        raise ValueError("the two predictives are on different grids")
    return (fit.total_std - reference.total_std).abs().mean().item()
