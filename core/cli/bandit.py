"""CLI: ``python -m core bandit`` — contextual bandits, Thompson sampling vs greedy agents.

Examples::

    python -m core bandit --env mushroom --agents bbb,greedy,eps5,random --steps 10000
    python -m core bandit --env wheel --delta 0.95 --steps 5000 --seeds 3
    python -m core bandit --env mushroom --steps 50000 --save     # a reference run for the page
    python -m core bandit --env wheel --set updates_per_step=2 --set kl_beta=0.1 --json
    python -m core bandit --protocol blundell2015 --save   # the paper's experiment (~50 min)
    python -m core bandit --protocol blundell2015 --set engine=torch --device cuda --compile

Prints, per agent, the mean cumulative regret over seeds every 1,000 steps, the final mean and
standard deviation over seeds, and the seconds of compute. Finished runs are cached by their
settings (``.cache/bandits``): the same command a second time answers at once.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

import torch

from core.bandits.agents import AGENTS, parse_agents
from core.bandits.environments import ENVIRONMENTS
from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import RunConfig, regret_table
from core.bandits.settings import ModelSettings
from core.bandits.store import run_bandit, save_reference
from core.catalogue import BANDIT_DEFAULT_AGENTS
from core.cli.overrides import parsed_assignments
from core.cli.values import SEED, SEEDS, STEPS, THREADS, real
from core.progress import text_progress


def format_result(result: dict, every: int = 1000, cached: bool = False) -> str:
    """A run's regret table and summary for people.

    Args:
        result: A result of :meth:`core.bandits.runner.BanditRun.result`.
        every: Interval of the table's rows in steps.
        cached: Whether the result came from the cache (said next to the seconds).

    Returns:
        Text: mean cumulative regret per agent every ``every`` steps, then per agent the
        final mean ± std over seeds, the regret per step and the seconds.
    """
    settings = result["settings"]
    names = list(result["agents"])
    lines = [
        f"{result['env']['title']}: {settings['steps']:,} steps × {settings['seeds']} seeds; "
        f"uniform random's expected regret {result['env']['random_regret_per_step']:.3f} per "
        "step",
        "mean cumulative regret over seeds:",
        f"{'step':>8s}" + "".join(f"{n:>11s}" for n in names),
    ]
    for row in regret_table(result, every):
        lines.append(f"{row['step']:8d}" + "".join(f"{row[n]:11.1f}" for n in names))
    lines.append(
        f"{'agent':10s} {'final mean':>11s} {'± std':>9s} {'per step':>9s} {'seconds':>8s}"
    )
    for name, agent in result["agents"].items():
        lines.append(
            f"{name:10s} {agent['mean']:11.1f} {agent['std']:9.1f} {agent['per_step']:9.3f} "
            f"{agent['seconds']:8.1f}"
        )
    note = " (from the cache; computed earlier)" if cached else ""
    lines.append(f"total {result['seconds']:.1f} s on {result.get('threads', '?')} thread(s){note}")
    return "\n".join(lines)


def cmd_bandit(args: argparse.Namespace) -> int:
    """Run ``python -m core bandit``.

    Args:
        args: The parsed command line.

    Returns:
        The exit code: 0, or 2 for agents the protocol does not have.
    """
    if args.protocol:
        protocol = PROTOCOLS[args.protocol]
        config = protocol.config
        print(protocol.describe(), file=sys.stderr)
        if args.set:  # an ablation: the protocol with these reward-model settings changed
            config = dataclasses.replace(config, model=model_settings(args.set, config.model))
        if args.agents:  # some of its agents only: their runs are the protocol's
            agents = parse_agents(args.agents)
            if not set(agents) <= set(protocol.config.agents):
                print(
                    f"--agents with --protocol {args.protocol}: choose from "
                    f"{','.join(protocol.config.agents)}",
                    file=sys.stderr,
                )
                return 2
            config = dataclasses.replace(config, agents=agents)
    else:
        agents = args.agents or ",".join(BANDIT_DEFAULT_AGENTS[args.env])
        config = RunConfig(
            env=args.env,
            delta=args.delta,
            agents=tuple(agents.split(",")),
            steps=args.steps,
            seeds=args.seeds,
            seed=args.seed,
            model=model_settings(args.set or []),
        )
    threads = args.threads
    if threads is None:  # PyTorch's tiny networks run fastest on one thread; the kernel on all
        threads = 0 if config.model.engine == "native" else 1
    if threads:
        torch.set_num_threads(threads)  # the CLI owns its process; pages never do this
    result, run = run_bandit(
        config,
        progress=text_progress("bandit"),
        use_cache=not args.no_cache,
        device=args.device,
        compile=args.compile,
    )
    if args.json:
        print(json.dumps(result))
    else:
        print(format_result(result, args.every, cached=run is None))
    if args.save:
        print(f"saved {save_reference(result)}", file=sys.stderr)
    return 0


def model_settings(assignments: list[str], base: ModelSettings | None = None) -> ModelSettings:
    """Reward models' settings with ``--set KEY=VALUE`` applied.

    Args:
        assignments: E.g. ``["updates_per_step=2", "prior_sigma1=0.37"]``: KEY a field of
            :class:`~core.bandits.settings.ModelSettings` or a flat name of a reward network's
            parameter (:data:`~core.catalogue.BANDIT_FLAT_NAMES`).
        base: The settings to change (None: the defaults).

    Returns:
        The settings, the others as in ``base``.

    Raises:
        ValueError: If a key is unknown or a value does not parse or fit.
    """
    types = ModelSettings().to_dict()  # a default is its type, e.g. None for "a number or none"
    values = (base or ModelSettings()).to_dict()
    return ModelSettings.from_dict(values | parsed_assignments(types, assignments))


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bandit`` sub-command.

    Args:
        subparsers: The parser's sub-command collection.
    """
    p = subparsers.add_parser(
        "bandit", help="contextual bandits: Thompson sampling with a BBB reward model vs greedy"
    )
    p.add_argument(
        "--protocol",
        choices=list(PROTOCOLS),
        help="a paper's experiment: every setting fixed (printed with its source; the other "
        "run options are ignored, --set makes an ablation of it, --agents runs some of its "
        "agents)",
    )
    p.add_argument("--env", choices=ENVIRONMENTS, default="mushroom")
    p.add_argument(
        "--delta", type=real(0, 1, high_open=True), default=0.95, help="the wheel's δ in (0, 1)"
    )
    p.add_argument(
        "--agents",
        default="",
        help=f"comma-separated, from {','.join(AGENTS)} (default: all for the environment)",
    )
    p.add_argument("--steps", type=STEPS, default=10_000, help="bandit steps per run")
    p.add_argument("--seeds", type=SEEDS, default=2, help="runs per agent")
    p.add_argument("--seed", type=SEED, default=0, help="base seed")
    p.add_argument(
        "--set",
        action="append",
        metavar="KEY=VALUE",
        help="reward-model setting, e.g. updates_per_step=2 or prior_sigma1=0.37 (repeatable; "
        "a field of ModelSettings or a method parameter's flat name, BANDIT_FLAT_NAMES)",
    )
    p.add_argument("--every", type=STEPS, default=1000, help="steps between printed rows")
    p.add_argument(
        "--threads",
        type=THREADS,
        default=None,
        help="CPU threads (0: torch's default, every core); by default 1 for PyTorch's tiny "
        "networks (fastest) and every core for the native engine (engine=native)",
    )
    p.add_argument(
        "--device",
        default="cpu",
        help="where the reward networks compute: cpu, or cuda (each step's updates replayed "
        "from a CUDA graph: the paper's 64 updates per step need a GPU)",
    )
    p.add_argument(
        "--compile",
        action="store_true",
        help="compile the networks' training losses with torch.compile (fused kernels)",
    )
    p.add_argument("--no-cache", action="store_true", help="recompute even if cached")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.add_argument(
        "--save", action="store_true", help="store as a reference run for the Bandits page"
    )
    p.set_defaults(func=cmd_bandit)
