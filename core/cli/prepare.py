"""CLI: ``python -m core prepare`` — compute and cache every link of the teacher's guide.

Run it once before class (or press *Prepare for class* on the Class drawings page in teacher
mode): afterwards each link of ``docs/teaching.md`` opens without computing::

    python -m core prepare                      # the guide's links, one line per link
    python -m core prepare --guide my-lesson.md --json

Each link's line says whether it was already cached, what it computed and how long it took
(:mod:`core.prepare`). Exit code 1 when a link is not covered by a preparer (the
other links are still prepared) or could not be prepared (e.g. a missing dataset).
"""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path

import torch

from core import settings
from core.cli.values import THREADS
from core.prepare import LinkReport, guide_url, prepare, problems, read_guide
from core.progress import text_progress
from core.stated.guide import GUIDE


def describe(done: LinkReport) -> str:
    """One line on one prepared link: its state, its seconds and the link."""
    if done.skipped:
        state = f"skipped ({done.skipped})"
    elif done.cached:
        state = "already cached"
    else:
        state = f"computed {done.jobs} piece{'s' if done.jobs != 1 else ''}"
    return f"{done.seconds:7.1f} s  {state:24s} {done.url}"


def cmd_prepare(args) -> int:
    """Run ``python -m core prepare``.

    Args:
        args: The parsed command line (``guide``, ``json``, ``threads``).

    Returns:
        The exit code: 0, or 1 when some link was not covered or not prepared.
    """
    torch.set_num_threads(args.threads or settings.positive_int("BNN_TORCH_THREADS", 1))
    try:
        links = read_guide(args.guide)
    except OSError as exc:
        print(f"error: cannot read the guide {args.guide}: {exc.strerror}", file=sys.stderr)
        return 1
    uncovered = problems(links)
    for line in uncovered:
        print(f"not covered: {line}", file=sys.stderr)
    bad = {line.split(": ")[0] for line in uncovered}
    covered = [link for link in links if guide_url(link) not in bad]
    bar = None if args.json else text_progress(f"prepare {len(covered)} links")

    def show(done: LinkReport) -> None:
        if not args.json:
            sys.stderr.write("\r" + " " * 100 + "\r")
            print(describe(done), flush=True)

    outcome = prepare(covered, progress=bar, on_link=show)
    if args.json:
        print(
            json.dumps(
                {
                    "guide": str(args.guide),
                    "not_covered": uncovered,
                    "links": [asdict(done) | {"cached": done.cached} for done in outcome.links],
                }
            )
        )
    else:
        total = sum(done.seconds for done in outcome.links)
        computed = sum(1 for done in outcome.links if done.jobs and not done.skipped)
        print(f"{len(outcome.links)} links prepared in {total:.1f} s ({computed} computed)")
    return 1 if uncovered or any(done.skipped for done in outcome.links) else 0


def register(subparsers) -> None:
    """Add the ``prepare`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser(
        "prepare", help="compute and cache every link of the teacher's guide before class"
    )
    p.add_argument("--guide", type=Path, default=GUIDE, help="the guide whose links to prepare")
    p.add_argument(
        "--threads",
        type=THREADS,
        default=0,
        help="torch threads (default: the server's, BNN_TORCH_THREADS, 1)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable JSON on stdout")
    p.set_defaults(func=cmd_prepare)
