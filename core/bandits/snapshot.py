"""What one agent's reward model shows now: the wheel's uncertainty map, the recent mushrooms.

:meth:`core.bandits.runner.BanditRun.snapshot` puts these together for the page; the posterior
draws come from a generator of their own, so looking never changes a run.
"""

from __future__ import annotations

import torch

from core.bandits.environments import MushroomBandit, wheel_quadrant_arm
from core.bandits.groups import AgentGroup

RECENT_POINTS = 400
"""Wheel: recent decisions shown on the disk."""
RECENT_MUSHROOMS = 16
"""Mushroom: recent decisions listed."""
GRID = 31
"""Wheel: grid points per axis of the uncertainty map."""
SNAPSHOT_SAMPLES = 32
"""Posterior draws of a snapshot."""


def wheel_grid(group: AgentGroup, run: int, generator: torch.Generator) -> dict:
    """The wheel's uncertainty map of one run's reward model.

    Args:
        group: The group that runs it.
        run: The run (agent-major index in the group).
        generator: Randomness of the posterior draws (not the group's own).

    Returns:
        ``x``, ``y`` (the grid's coordinates) and per grid point the posterior ``std`` of the
        quadrant arm's reward and ``explore``, the fraction of draws whose best arm is not
        the posterior mean's (None outside the disk).
    """
    axis = torch.linspace(-1, 1, GRID)
    ys, xs = torch.meshgrid(axis, axis, indexing="ij")
    points = torch.stack([xs.flatten(), ys.flatten()], 1)
    inside = points.norm(dim=1) <= 1.0
    samples = group.sample_rewards(run, points[inside], SNAPSHOT_SAMPLES, generator)
    quadrant = wheel_quadrant_arm(points[inside])
    std = samples.std(0)[torch.arange(len(quadrant)), quadrant]
    best_mean = samples.mean(0).argmax(-1)
    explore = (samples.argmax(-1) != best_mean).double().mean(0)
    std_map = torch.full((GRID * GRID,), float("nan"))
    explore_map = torch.full((GRID * GRID,), float("nan"))
    std_map[inside], explore_map[inside] = std.float(), explore.float()

    def rows(values: torch.Tensor) -> list[list[float | None]]:
        return [
            [None if v != v else round(v, 4) for v in row]
            for row in values.view(GRID, GRID).tolist()
        ]

    return {
        "x": axis.tolist(),
        "y": axis.tolist(),
        "std": rows(std_map),
        "explore": rows(explore_map),
    }


def mushroom_decisions(
    group: AgentGroup,
    run: int,
    generator: torch.Generator,
    env: MushroomBandit,
    info: torch.Tensor,
    actions: torch.Tensor,
    regret: torch.Tensor,
    first: int,
) -> list[dict]:
    """One run's recent mushrooms: what it did and what its reward model says of eating.

    Args:
        group: The group that runs it.
        run: The run (agent-major index in the group).
        generator: Randomness of the posterior draws (not the group's own).
        env: The mushroom bandit.
        info: The recent steps' ``(row, edible)``, ``(n, 2)``.
        actions: The actions taken then, ``(n,)``.
        regret: Their expected regret, ``(n,)``.
        first: The index of the first of them among the run's steps.

    Returns:
        Per step: ``step`` (1-based), ``row``, ``edible``, ``action``, ``regret`` and the
        sampled advantage of eating over passing now: ``eat_advantage_mean``,
        ``eat_advantage_std`` and ``eat_fraction`` (of draws that eat).
    """
    rows = info[:, 0].long()
    samples = group.sample_rewards(run, env.data.features[rows], SNAPSHOT_SAMPLES, generator)
    advantage = samples[..., 0] - samples[..., 1]  # (S, n)
    return [
        {
            "step": first + i + 1,
            "row": int(rows[i]),
            "edible": bool(info[i, 1] > 0.5),
            "action": env.action_names[int(actions[i])],
            "regret": float(regret[i]),
            "eat_advantage_mean": float(advantage[:, i].mean()),
            "eat_advantage_std": float(advantage[:, i].std()) if len(advantage) > 1 else 0.0,
            "eat_fraction": float((advantage[:, i] > 0).double().mean()),
        }
        for i in range(len(rows))
    ]
