"""Run a paper's bandit protocol on a GPU for at most a given time, saving as it goes.

A lent GPU comes for minutes, so this runs ``core bandit --protocol NAME`` on it with a deadline:
every ``--every`` seconds it writes the result so far (curves, posterior σ, seconds) as JSON,
and at the deadline (and every ``--state-every`` seconds) also the run's state, in parts small
enough to be fetched, into ``--state`` (by default ``--out``), from which a later call continues
(``--resume``) to the result an uninterrupted run gives.

    python benchmarks/bandit_protocol_gpu.py --protocol blundell2015 --seconds 480 --out $OUT
    python benchmarks/bandit_protocol_gpu.py --protocol blundell2015 --resume DIR --out $OUT
    python benchmarks/bandit_protocol_gpu.py --agents bbb --set prior=gaussian \
        --out notebook/bandits/ablations/full  # an ablation, into the lab notebook
    python benchmarks/bandit_protocol_gpu.py --device cpu --seconds 6000 --state STATE --out DIR

An ablation (``--set`` of a reward-model setting, ``--agents`` a subset) keeps every other
setting, the seeds of each agent family and of the environments: its runs pair with the
protocol's.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import time
from pathlib import Path

import torch

from core.atomic import atomic_write, atomic_write_text
from core.bandits.protocols import PROTOCOLS
from core.bandits.runner import BanditRun
from core.bandits.store import save_reference, truncated
from core.cli.bandit import model_settings
from core.cli.overrides import suffix

PART_BYTES = 15 * 2**20  # the device tool fetches files of up to 16 MiB


def save_state(run: BanditRun, folder: Path) -> list[Path]:
    """Write the run's state as ``state.part0 ...`` of at most :data:`PART_BYTES` each."""
    buffer = io.BytesIO()
    torch.save(run.state_dict(), buffer)
    data = buffer.getvalue()
    paths = []
    for i, start in enumerate(range(0, len(data), PART_BYTES)):
        path = folder / f"state.part{i}"
        atomic_write(path, lambda f, s=start: f.write(data[s : s + PART_BYTES]))
        paths.append(path)
    return paths


def load_state(folder: Path) -> dict:
    """The state :func:`save_state` wrote into ``folder``."""
    parts = sorted(folder.glob("state.part*"), key=lambda p: int(p.suffix.removeprefix(".part")))
    return torch.load(io.BytesIO(b"".join(p.read_bytes() for p in parts)), weights_only=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--protocol", choices=list(PROTOCOLS), default="blundell2015")
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--no-compile", action="store_true", help="eager losses in the graphs")
    parser.add_argument("--seconds", type=float, default=480.0, help="stop after this long")
    parser.add_argument("--every", type=float, default=60.0, help="seconds between saves")
    parser.add_argument("--resume", type=Path, help="folder of a saved state to continue")
    parser.add_argument("--state", type=Path, help="folder for the state (default: --out)")
    parser.add_argument(
        "--state-every", type=float, help="seconds between saves of the state (default: at the end)"
    )
    parser.add_argument("--agents", help="a subset of the protocol's agents, e.g. bbb")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also store the result as a stored run of the Bandits page at every save "
        "(checkpoints/results/bandit_references/; an unfinished run up to its last recorded "
        "curve point)",
    )
    args = parser.parse_args()
    start = time.monotonic()
    args.out.mkdir(parents=True, exist_ok=True)
    state_dir = args.state or args.out
    state_dir.mkdir(parents=True, exist_ok=True)
    state_saved = start
    config = PROTOCOLS[args.protocol].config
    model = model_settings(args.set, config.model)
    if args.device != "cpu":  # the compiled kernel is the CPU's; a GPU runs PyTorch's models
        model = dataclasses.replace(model, engine="torch")
    config = dataclasses.replace(
        config,
        agents=tuple(args.agents.split(",")) if args.agents else config.agents,
        model=model,
    )
    run = BanditRun(config, device=args.device, compile=not args.no_compile)
    if args.resume:
        run.load_state_dict(load_state(args.resume))
    first = run.step
    if torch.cuda.is_available():
        print(f"device: {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    result_path = args.out / f"{args.protocol}{suffix(args.set)}.json"
    while not run.done and time.monotonic() - start < args.seconds:
        before, t0 = run.step, time.monotonic()
        deadline = min(t0 + args.every, start + args.seconds)
        run.advance(should_stop=lambda d=deadline: time.monotonic() >= d)
        rate = (run.step - before) / (time.monotonic() - t0)
        result = run.result(with_snapshot=False)
        atomic_write_text(result_path, json.dumps(result))
        if args.reference and run.step >= run.every:
            save_reference(truncated(result, run.step - run.step % run.every))
        means = {name: round(agent["mean"]) for name, agent in result["agents"].items()}
        left = (config.steps - run.step) / max(rate, 1e-9)
        print(
            f"{time.monotonic() - start:6.0f} s  step {run.step:,}  {rate:.1f} steps/s  "
            f"regret {means}  ~{left / 60:.0f} min to go",
            flush=True,
        )
        if args.state_every and not run.done and time.monotonic() - state_saved >= args.state_every:
            save_state(run, state_dir)
            state_saved = time.monotonic()
    if not run.done:
        parts = save_state(run, state_dir)
        print(f"saved the state in {len(parts)} parts to continue with --resume", flush=True)
    print(
        f"ran steps {first:,}..{run.step:,} of {config.steps:,} in {time.monotonic() - start:.0f} s"
        f" (families: { {k: round(v) for k, v in run.group_seconds.items()} } s)",
        flush=True,
    )


if __name__ == "__main__":
    main()
