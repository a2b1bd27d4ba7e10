"""Command line of the lab: ``python -m core <command> ...``.

Each command lives next to the code it drives, in a module exposing
``register(subparsers)`` that adds its sub-parser and sets ``func``.
"""

from __future__ import annotations

import argparse
import importlib

COMMAND_MODULES = [
    "core.data.command",
    "core.model_commands",
    "core.bench_command",
    "core.ood_command",
    "core.predictive_bench",
    "core.attack_command",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m core", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args) or 0)
