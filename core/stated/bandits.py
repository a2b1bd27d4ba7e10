"""Stated values of the Bandits page's stored long runs.

Read by :func:`core.bandits.store.load_references`, as the page reads them.
"""

from __future__ import annotations

from core.bandits.store import load_references
from core.stated.registry import stated


@stated("bandit_regret")
def bandit_regret(run: str, agent: str, statistic: str = "mean") -> str:
    """An agent's final cumulative regret in a stored run, as the page's ranking states it.

    e.g. ``bandit_regret mushroom-50000.json greedy`` → ``5,338``; ``statistic`` ``std`` for
    its spread over seeds.
    """
    return f"{load_references()[run]['agents'][agent][statistic]:,.0f}"
