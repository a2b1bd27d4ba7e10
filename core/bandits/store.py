"""Finished bandit runs on disk: the content-keyed cache and the stored reference runs.

* An unfinished run is saved every minute (:func:`partial_cache`) and resumed from there.
* Every finished run is cached through :func:`core.storage.cache.cache_entry` under the study
  ``bandits``, keyed by its full settings (:meth:`~core.bandits.runner.RunConfig.to_dict`) and
  :data:`VERSION`, so the same settings are never computed twice (the page and the CLI share it).
* The long reference runs (:data:`REFERENCE_RUNS`: 50,000 mushroom steps, with the full ELBO
  and with the KL term tempered by β = 0.1; the wheel at δ ∈ {0.5, 0.9, 0.95}) are computed by
  ``python -m core bandit ... --save`` and committed as small JSON files among the lab's stored
  results (:data:`REFERENCES`, ``checkpoints/results/bandit_references/``), so the page opens
  at once on any machine.
"""

from __future__ import annotations

import time
from pathlib import Path

import torch

from core.bandits.protocols import PROTOCOLS, protocol_ablation, protocol_of
from core.bandits.runner import BanditRun, RunConfig
from core.bandits.settings import ModelSettings
from core.catalogue import BANDIT_DEFAULT_AGENTS
from core.progress import ProgressFn, report
from core.storage.cache import CacheEntry, cache_entry
from core.storage.results import StoredResults

STUDY = "bandits"
REFERENCES = StoredResults("bandit_references")
"""The stored reference runs, by file name (:func:`reference_name`)."""
VERSION = 1
"""Bump to invalidate cached runs when the agents or environments change."""
SAVE_EVERY_S = 60.0
"""Seconds of compute between saves of an unfinished run (:func:`partial_cache`)."""

REFERENCE_RUNS = (
    RunConfig(env="mushroom", agents=BANDIT_DEFAULT_AGENTS["mushroom"], steps=50_000, seeds=2),
    RunConfig(  # the full ELBO's BBB over-explores here; the KL tempered as for MNIST
        env="mushroom",
        agents=("bbb", "greedy", "eps1", "eps5"),
        steps=50_000,
        seeds=2,
        model=ModelSettings().replace(kl_beta=0.1),
    ),
    *(
        RunConfig(env="wheel", delta=d, agents=BANDIT_DEFAULT_AGENTS["wheel"], steps=5_000, seeds=3)
        for d in (0.5, 0.9, 0.95)
    ),
)
"""The long runs shown when the page opens."""


def run_cache(config: RunConfig) -> CacheEntry:
    """The cache entry of a finished run with these settings.

    Args:
        config: The run's settings.

    Returns:
        The entry (JSON; it may not exist yet).
    """
    return cache_entry(STUDY, VERSION, settings=config.to_dict(), prefix=config.env)


def cached_result(config: RunConfig) -> dict | None:
    """A finished run's result from the cache.

    Args:
        config: The run's settings.

    Returns:
        The result of :meth:`~core.bandits.runner.BanditRun.result`, or None if not cached.
    """
    return run_cache(config).read(in_agent_order)


def in_agent_order(result: dict) -> dict:
    """A result with its ``agents`` in the order of its settings (JSON caches sort keys).

    Args:
        result: A run's result.

    Returns:
        The same result, ``agents`` reordered.
    """
    agents = result["agents"]
    order = [n for n in result["settings"]["agents"] if n in agents]
    result["agents"] = {n: agents[n] for n in order + [n for n in agents if n not in order]}
    return result


def store_result(run: BanditRun) -> dict:
    """Cache a finished run's result.

    Args:
        run: A run with all its steps done.

    Returns:
        The stored result.

    Raises:
        ValueError: If the run is not finished (partial runs are never cached).
    """
    if not run.done:
        raise ValueError(f"only finished runs are cached ({run.step} of {run.config.steps} steps)")
    result = run.result()
    run_cache(run.config).save(result)
    return result


def partial_cache(config: RunConfig) -> CacheEntry:
    """Where an unfinished run with these settings is saved (:meth:`BanditRun.state_dict`).

    Args:
        config: The run's settings.

    Returns:
        The entry (tensors; it may not exist yet).
    """
    return cache_entry(
        f"{STUDY}-partial", VERSION, settings=config.to_dict(), format="pt", prefix=config.env
    )


def run_bandit(
    config: RunConfig,
    progress: ProgressFn | None = None,
    use_cache: bool = True,
    save_every_s: float = SAVE_EVERY_S,
    device: torch.device | str = "cpu",
    compile: bool = False,
) -> tuple[dict, BanditRun | None]:
    """The result of a run, from the cache or computed (and then cached).

    While it computes, the run is saved every ``save_every_s`` seconds
    (:func:`partial_cache`); an interrupted run continues from its last save and ends with the
    result an uninterrupted one gives.

    Args:
        config: What to run.
        progress: Reports the fraction of steps done.
        use_cache: False recomputes from the first step (and overwrites the cached result).
        save_every_s: Seconds of compute between saves of the unfinished run.
        device: Where the reward networks compute (:class:`BanditRun`); the cache does not
            tell devices apart, and a run saved on one continues on another.
        compile: Compile the networks' training losses.

    Returns:
        ``(result, run)``: ``run`` is the finished :class:`BanditRun`, or None when the result
        came from the cache.

    Raises:
        DatasetUnavailable: If the mushroom file is missing or damaged.
    """
    if use_cache and (cached := cached_result(config)) is not None:
        return cached, None
    run = BanditRun(config, device=device, compile=compile)
    partial = partial_cache(config)
    saved = partial.load() if use_cache else None
    if saved is not None:
        run.load_state_dict(saved)

    def overall(fraction: float, message: str) -> None:
        report(progress, run.step / config.steps, message)

    while not run.done:
        deadline = time.monotonic() + save_every_s
        run.advance(progress=overall, should_stop=lambda t=deadline: time.monotonic() >= t)
        if not run.done:
            partial.save(run.state_dict())
    result = store_result(run)
    partial.path.unlink(missing_ok=True)
    return result, run


def changed_settings(config: RunConfig) -> dict:
    """The model settings of a run that differ from the defaults.

    Args:
        config: The run's settings.

    Returns:
        Setting name → value (lists for tuples), in field order; empty for the defaults.
    """
    defaults = ModelSettings().to_dict()
    return {k: v for k, v in config.model.to_dict().items() if v != defaults[k]}


def reference_name(config: RunConfig) -> str:
    """The file name of a stored run, e.g. ``mushroom-50000.json`` or ``wheel-0.95-5000.json``.

    Model settings that differ from the defaults are appended, e.g.
    ``mushroom-50000-kl_beta0.1.json``; a paper's protocol is named by its preset, e.g.
    ``mushroom-50000-blundell2015.json``, and an ablation of it by the preset and what it
    changes, e.g. ``mushroom-50000-blundell2015-priorgaussian.json``.

    Args:
        config: The run's settings.

    Returns:
        The file name.
    """
    env = config.env if config.delta is None else f"{config.env}-{config.delta:g}"
    if (ablation := protocol_ablation(config)) is not None:
        protocol, changed = ablation
        return f"{env}-{config.steps}-{protocol}{_name_parts(changed)}.json"
    return f"{env}-{config.steps}{_name_parts(changed_settings(config))}.json"


def _name_parts(changed: dict) -> str:
    return "".join(f"-{key}{_name_part(value)}" for key, value in changed.items())


def _name_part(value: object) -> str:
    """A setting's value in a file name: ``100x100``, ``0.1``, ``mixture``, ``False``."""
    if isinstance(value, list):
        return "x".join(map(str, value))
    if isinstance(value, bool | str):
        return str(value)
    return f"{value:g}"


def save_reference(result: dict) -> Path:
    """Store a result as a reference run (atomically; replaces one of the same name).

    Args:
        result: A finished run's result.

    Returns:
        The file written.
    """
    return REFERENCES.save(
        reference_name(RunConfig.from_dict(result["settings"])), result, indent=None
    )


def load_references() -> dict[str, dict]:
    """The stored reference runs that can be read.

    Returns:
        File name → result: the mushroom first, then the wheel by δ; a paper's protocol
        first, then its ablations, then runs with the default model settings, then others;
        unreadable files are skipped.
    """
    results = {}
    for name, result in REFERENCES.load_all().items():
        try:
            RunConfig.from_dict(result["settings"])
            result["agents"]  # noqa: B018 - a result must have agents
        except (ValueError, KeyError, TypeError):
            continue
        results[name] = in_agent_order(result)
    order = {"mushroom": 0, "wheel": 1}

    def key(item: tuple[str, dict]) -> tuple:
        settings = item[1]["settings"]
        config = RunConfig.from_dict(settings)
        ablation = protocol_ablation(config)
        rank = 0 if protocol_of(config) else 1 if ablation else 2 + bool(changed_settings(config))
        return (order.get(settings["env"], 2), settings.get("delta") or 0, rank, item[0])

    return dict(sorted(results.items(), key=key))


def truncated(result: dict, step: int) -> dict:
    """A result cut to its first ``step`` steps, as if the run had stopped there.

    Args:
        result: A result whose curves have a point at ``step`` (a multiple of its record
            interval, or its last step).
        step: The steps to keep.

    Returns:
        ``result`` itself if it has no more steps; else a copy with the curves and σ up to
        ``step``, each agent's ``final``, ``mean``, ``std`` and ``per_step`` read from the
        curves there, ``steps_done = step``, and its compute ``seconds`` (the run's and each
        agent's) scaled by the share of the steps kept.

    Raises:
        ValueError: If the curves have no point at ``step``.
    """
    if step >= result["steps_done"]:
        return result
    if step not in result["record_steps"]:
        raise ValueError(f"the run recorded no point at step {step}")
    n = result["record_steps"].index(step) + 1
    n_sigma = sum(1 for t in result["sigma_steps"] if t <= step)
    share = step / result["steps_done"]
    agents = {}
    for name, agent in result["agents"].items():
        final = torch.tensor([curve[n - 1] for curve in agent["curves"]], dtype=torch.float64)
        agents[name] = agent | {
            "curves": [curve[:n] for curve in agent["curves"]],
            "final": final.tolist(),
            "mean": float(final.mean()),
            "std": float(final.std()) if len(final) > 1 else 0.0,
            "per_step": float(final.mean()) / step,
            "seconds": agent["seconds"] * share,
        }
        if "sigma" in agent:
            agents[name]["sigma"] = [run[:n_sigma] for run in agent["sigma"]]
    return result | {
        "steps_done": step,
        "record_steps": result["record_steps"][:n],
        "sigma_steps": result["sigma_steps"][:n_sigma],
        "agents": agents,
        "seconds": result["seconds"] * share,
        "snapshot": None,
    }


BESIDE_TITLE = " (the paper's settings)"
"""Appended to the title of an agent that :func:`beside_protocol` took from the protocol's run."""


def beside_protocol(result: dict, references: dict[str, dict]) -> dict:
    """An ablation that ran some of its protocol's agents, with the protocol's others beside it.

    A run of BBB Thompson alone with one setting changed has nothing to be compared with; the
    protocol's stored run has the agents it left out, at the paper's settings (the same seeds,
    so the same mushrooms: the runs pair).

    Args:
        result: A stored run's result.
        references: The stored runs (:func:`load_references`).

    Returns:
        ``result`` itself unless it is such an ablation and its protocol's stored run covers the
        same steps or more (an unfinished ablation: its first steps); else a copy whose
        ``agents`` are its own followed by the protocol run's others over the same steps
        (titled with :data:`BESIDE_TITLE`), and ``"beside"``: the protocol run's name.
    """
    ablation = protocol_ablation(RunConfig.from_dict(result["settings"]))
    if ablation is None or "agents" not in ablation[1]:
        return result
    name = reference_name(PROTOCOLS[ablation[0]].config)
    protocol = references.get(name)
    marks = result["record_steps"]
    if protocol is None or protocol["record_steps"][: len(marks)] != marks:
        return result
    protocol = truncated(protocol, result["steps_done"])
    others = {
        key: agent | {"title": agent["title"] + BESIDE_TITLE}
        for key, agent in protocol["agents"].items()
        if key not in result["agents"]
    }
    return result | {"agents": result["agents"] | others, "beside": name}
