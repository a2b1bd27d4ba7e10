"""Cyclical SG-MCMC (Zhang et al. 2020): SGLD with warm restarts.

The step size follows cosine cycles (:class:`~core.methods.sgld.sampler.CyclicalSchedule`,
ε₀ = 2·lr/N as for :mod:`core.methods.sgld`): each cycle starts with a large step that escapes the
current
mode, explores without noise for the first ``exploration`` of the cycle, then samples with
Langevin noise; the ``members`` samples are kept at the end of the cycles, spread evenly over
each cycle's sampling stage, so every cycle's mode is represented.
"""

from __future__ import annotations

import math

from core.engine.samples import WeightSamples
from core.methods.base import PRIOR_SETTINGS, Method, Setting
from core.methods.sgld import PRECONDITION, SAMPLES_KEPT, TEMPERATURE, LangevinProcedure
from core.methods.sgld.sampler import CyclicalSchedule


class CyclicalProcedure(LangevinProcedure):
    """Langevin steps whose size and noise follow the cycles; samples at each cycle's end."""

    def marks(self) -> set[int]:
        """``members`` steps spread over the cycles' sampling stages, each cycle's last."""
        self.schedule = CyclicalSchedule(
            self.step_size(),
            max(self.total_steps, 1),
            min(self.params["cycles"], max(self.total_steps, 1)),
            self.params["exploration"],
        )
        length, cycles = self.schedule.cycle_length, self.schedule.n_cycles
        per_cycle = math.ceil(self.capacity / cycles)
        marks = set()
        for c in range(cycles):
            end = min((c + 1) * length, self.total_steps)
            sampling = end - (c * length + math.ceil(self.params["exploration"] * length))
            marks |= {end - sampling * j // per_cycle for j in range(per_cycle)}
        return marks

    def before_step(self, step: int) -> None:
        """Set the step size and the noise of step ``step`` from the cycles."""
        self.schedule.apply(self.optimizer_, step)

    def optimizer(self, network):
        """The sampler, without the per-epoch decay (the cycles set the step size)."""
        self.optimizer_ = super().optimizer(network)
        self.scheduler = None  # the cycles set the step size
        return self.optimizer_


METHOD = Method(
    kind="sgmcmc_cyclic",
    order=7,
    title="Cyclical SG-MCMC (warm restarts)",
    summary="SGLD whose step size restarts large every cycle and shrinks: each cycle finds a "
    "new mode and takes samples there (Zhang et al. 2020).",
    model_class=WeightSamples,
    procedure=CyclicalProcedure,
    lr=0.5,
    settings=(
        *PRIOR_SETTINGS,
        TEMPERATURE,
        Setting(
            "cycles",
            "Cycles",
            "How many times the step size restarts; each cycle can end in another mode.",
            4,
            low=1,
            high=20,
        ),
        Setting(
            "exploration",
            "Exploration share",
            "Fraction of each cycle spent moving without noise before sampling starts.",
            0.8,
            options=(0.0, 0.25, 0.5, 0.75, 0.8, 0.9),
            low=0.0,
            high=0.99,
        ),
        SAMPLES_KEPT,
    ),
    internal=(PRECONDITION,),
)
