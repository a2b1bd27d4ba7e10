"""Command line of the lab: ``python -m core <command> ...``, one module per command group.

Every command's own failures that the lab foresees (a missing or damaged checkpoint, a missing
dataset, a bad setting) end in one line on stderr naming the file or value and what to do, and
exit code 1 — never a traceback. A bad command line (an unknown option, a number out of its
range: :mod:`core.cli.values`) ends in one ``error:`` line and exit code 2.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from core.cli import (
    active,
    adapt,
    attack,
    bandit,
    bench,
    bench_predictive,
    calibration,
    compare,
    data,
    evaluate,
    models,
    ood,
    prepare,
    regression,
    stated,
)
from core.data import DatasetUnavailable
from core.storage.checkpoints import CheckpointError

COMMANDS = (
    data,
    models,
    evaluate,
    bench,
    ood,
    bench_predictive,
    attack,
    compare,
    calibration,
    active,
    adapt,
    regression,
    bandit,
    stated,
    prepare,
)
"""Modules exposing ``register(subparsers)``, in help order."""


class OneLineParser(argparse.ArgumentParser):
    """An argument parser that reports a bad command line in one line, without the usage."""

    def error(self, message: str) -> NoReturn:
        """Print ``PROG: error: MESSAGE (see PROG --help)`` on stderr and exit with code 2.

        Args:
            message: argparse's description of what is wrong.
        """
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {text} (see {self.prog} --help)\n")


def build_parser(
    prog: str = "python -m core", epilog: str | None = None
) -> argparse.ArgumentParser:
    """Build the ``python -m core`` parser with every command of :data:`COMMANDS`.

    Args:
        prog: The program's name in usage and error lines (``bnn-lab`` for the installed
            command, :mod:`app.cli`).
        epilog: Text after the commands in ``--help``.

    Returns:
        The parser; each sub-command sets ``func``, the function that runs it.
    """
    parser = OneLineParser(prog=prog, description=__doc__, epilog=epilog)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in COMMANDS:
        module.register(subparsers)
    return parser


def main(
    argv: list[str] | None = None, prog: str = "python -m core", epilog: str | None = None
) -> int:
    """Run one command of the lab's command line.

    A bad command line ends in one ``error:`` line (:class:`OneLineParser`) and foreseen
    failures (:class:`CheckpointError`, :class:`DatasetUnavailable`, ValueError) in one line on
    stderr, instead of a traceback.

    Args:
        argv: The arguments after ``python -m core``; None reads ``sys.argv``.
        prog: The program's name in usage and error lines.
        epilog: Text after the commands in ``--help``.

    Returns:
        The exit code: the command's own, 2 for a bad command line (0 after ``--help``), 1 after
        a foreseen failure, 130 when interrupted.
    """
    try:
        args = build_parser(prog, epilog).parse_args(argv)
    except SystemExit as exc:  # argparse's exit after an error or --help
        return int(exc.code or 0)
    try:
        return int(args.func(args) or 0)
    except (CheckpointError, DatasetUnavailable, ValueError) as exc:
        print(f"\nerror: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("\ninterrupted", file=sys.stderr)
        return 130
