"""Command line of the lab: ``python -m core <command> ...``, one module per command group.

Every command's own failures that the lab foresees (a missing or damaged checkpoint, a missing
dataset, a bad setting) end in one line on stderr naming the file or value and what to do, and
exit code 1 — never a traceback.
"""

from __future__ import annotations

import argparse
import sys

from core.cli import attack, bench, bench_predictive, data, models, ood
from core.data import DatasetUnavailable
from core.storage.checkpoints import CheckpointError

COMMANDS = (data, models, bench, ood, bench_predictive, attack)
"""Modules exposing ``register(subparsers)``, in help order."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CheckpointError, DatasetUnavailable, ValueError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
