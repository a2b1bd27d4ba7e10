"""The Bandits page's live run: its default settings and the run a link's settings ask for.

The page's controls start from these defaults, and ``python -m core prepare`` and the stated
numbers of the teacher's guide read a link's run with :func:`link_config`, so the three agree.
"""

from __future__ import annotations

from collections.abc import Mapping

from core.bandits.runner import RunConfig

LIVE_ENV = "mushroom"
LIVE_DELTA = 0.9
LIVE_AGENTS = ("bbb", "greedy", "eps5", "random")
LIVE_STEPS = 500
LIVE_SEEDS = 2
LIVE_SEED = 0
LINK_SETTINGS = ("bandit_env", "bandit_delta", "bandit_agents", "bandit_steps", "bandit_seeds")
"""The live run's URL parameters besides its base seed (``bandit_seed``)."""


def link_config(values: Mapping[str, str]) -> RunConfig | None:
    """The live run a link's settings ask for.

    Args:
        values: The link's URL parameters (any others are ignored).

    Returns:
        The run's settings, each unset one at the page's default; None when the link sets none
        of the live run's settings (it shows the stored long runs only).

    Raises:
        ValueError: If a value does not fit (an unknown agent, a bad number).
    """
    if not any(key in values for key in (*LINK_SETTINGS, "bandit_seed")):
        return None
    agents = values.get("bandit_agents")
    return RunConfig(
        env=values.get("bandit_env", LIVE_ENV),
        delta=float(values.get("bandit_delta", LIVE_DELTA)),
        agents=tuple(a for a in agents.split(",") if a) if agents else LIVE_AGENTS,
        steps=int(values.get("bandit_steps", LIVE_STEPS)),
        seeds=int(values.get("bandit_seeds", LIVE_SEEDS)),
        seed=int(values.get("bandit_seed", LIVE_SEED)),
    )
