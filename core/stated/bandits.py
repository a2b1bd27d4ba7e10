"""Stated values of the Bandits page's stored long runs.

Read by :func:`core.bandits.store.load_references`, as the page reads them.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from core.bandits.live import link_config
from core.bandits.protocols import PROTOCOLS, protocol_ablation
from core.bandits.runner import RunConfig
from core.bandits.store import load_references, reference_name, run_bandit, truncated
from core.stated.registry import stated


@stated("bandit_regret")
def bandit_regret(run: str, agent: str, statistic: str = "mean") -> str:
    """An agent's final cumulative regret in a stored run, as the page's ranking states it.

    e.g. ``bandit_regret mushroom-50000.json greedy`` → ``5,338``; ``statistic`` ``std`` for
    its spread over seeds.
    """
    return f"{load_references()[run]['agents'][agent][statistic]:,.0f}"


@stated("bandit_per_step")
def bandit_per_step(run: str, agent: str) -> str:
    """An agent's regret per step over a stored run (mean over seeds), to two decimals.

    e.g. ``bandit_per_step mushroom-50000-blundell2015.json bbb`` → ``0.69``.
    """
    return f"{load_references()[run]['agents'][agent]['per_step']:.2f}"


@stated("bandit_per_step_last")
def bandit_per_step_last(run: str, agent: str, steps: str = "5000") -> str:
    """An agent's regret per step over a stored run's last ``steps`` steps (mean over seeds).

    e.g. ``bandit_per_step_last mushroom-50000-blundell2015.json bbb`` → ``0.518``.
    """
    result = load_references()[run]
    marks, curves = result["record_steps"], result["agents"][agent]["curves"]
    start = marks.index(result["steps_done"] - int(steps))
    gained = sum(curve[-1] - curve[start] for curve in curves) / len(curves)
    return f"{gained / int(steps):.3f}"


@stated("bandit_regret_at")
def bandit_regret_at(run: str, agent: str, step: str) -> str:
    """An agent's cumulative regret at a step of a stored run, mean over seeds, as its curve.

    e.g. ``bandit_regret_at mushroom-50000-blundell2015.json greedy 10000`` → ``2,781``.

    Raises:
        ValueError: If the run recorded no point at that step.
    """
    result = load_references()[run]
    if int(step) not in result["record_steps"]:
        raise ValueError(f"{run} recorded no point at step {step}")
    at = result["record_steps"].index(int(step))
    curves = result["agents"][agent]["curves"]
    return f"{sum(curve[at] for curve in curves) / len(curves):,.0f}"


@stated("bandit_steps")
def bandit_steps(run: str) -> str:
    """The steps a stored run has done (fewer than its settings' for an unfinished run).

    e.g. ``bandit_steps mushroom-50000.json`` → ``50,000``.
    """
    return f"{load_references()[run]['steps_done']:,}"


@stated("bandit_protocol_at")
def bandit_protocol_at(run: str, agent: str, statistic: str = "mean") -> str:
    """An agent's mean regret in its protocol's stored run, at the steps an ablation has done.

    What the page shows beside the ablation, an unfinished one included; ``statistic`` ``std``
    for its spread over seeds.

    e.g. ``bandit_protocol_at mushroom-50000-blundell2015-agentsbbb-lr0.0001.json bbb`` →
    ``34,708``.

    Raises:
        ValueError: If the run is no ablation of a protocol.
    """
    references = load_references()
    ablation = protocol_ablation(RunConfig.from_dict(references[run]["settings"]))
    if ablation is None:
        raise ValueError(f"{run} is no ablation of a protocol")
    protocol = references[reference_name(PROTOCOLS[ablation[0]].config)]
    cut = truncated(protocol, references[run]["steps_done"])
    return f"{cut['agents'][agent][statistic]:,.0f}"


@stated("bandit_protocol_sigma_at")
def bandit_protocol_sigma_at(run: str) -> str:
    """BBB's mean posterior σ in its protocol's stored run, at an ablation's last record of it.

    e.g. ``bandit_protocol_sigma_at mushroom-50000-blundell2015-agentsbbb-lr0.0001.json`` →
    ``0.266``.
    """
    references = load_references()
    ablation = protocol_ablation(RunConfig.from_dict(references[run]["settings"]))
    if ablation is None:
        raise ValueError(f"{run} is no ablation of a protocol")
    protocol = references[reference_name(PROTOCOLS[ablation[0]].config)]
    at = protocol["sigma_steps"].index(references[run]["sigma_steps"][-1])
    runs = protocol["agents"]["bbb"]["sigma"]
    return f"{sum(r[at] for r in runs) / len(runs):.3f}"


@stated("bandit_sigma")
def bandit_sigma(run: str, agent: str = "bbb") -> str:
    """An agent's mean posterior σ of the weights, mean over seeds, at a stored run's last record.

    e.g. ``bandit_sigma mushroom-50000-blundell2015.json`` → ``0.266``.
    """
    runs = load_references()[run]["agents"][agent]["sigma"]
    return f"{sum(r[-1] for r in runs) / len(runs):.3f}"


@stated("bandit_live")
def bandit_live(query: str, agent: str, statistic: str = "mean") -> str:
    """An agent's final cumulative regret in a link's live run, as the page's table shows it.

    ``query``: the link's live-run settings as in its address (``bandit_env=mushroom&…``). The
    run is read from the cache (``python -m core prepare`` computes it), else computed.
    """
    config = link_config(dict(parse_qsl(query)))
    if config is None:
        raise ValueError(f"{query!r} sets no setting of the live run")
    result, _ = run_bandit(config)
    return f"{result['agents'][agent][statistic]:,.0f}"
