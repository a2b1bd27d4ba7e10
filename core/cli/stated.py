"""CLI: ``python -m core stated`` — check the numbers the documents state against the lab.

Every marked number of the teacher's guide, the README and the bandit write-up
(:data:`~core.stated.documents.DOCUMENTS`), or of the documents named, is computed by the same
core call as the page that shows it (:mod:`core.stated`)::

    python -m core stated                     # check; exit code 1 when a number differs
    python -m core stated --write             # bring the documents' numbers up to date
    python -m core stated docs/teaching.md --json
    python -m core stated --train --write     # first re-train the guide's Train-page runs
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from core.progress import text_progress
from core.stated.documents import DOCUMENTS, compare, update
from core.stated.training import train_guide_runs


def cmd_stated(args) -> int:
    """Run ``python -m core stated``: compare (or update) every marked number.

    Args:
        args: The parsed command line (``documents``, ``write``, ``train``, ``json``).

    Returns:
        The exit code: 0 when every number agrees (or was written), 1 otherwise.
    """
    if args.train:
        path = train_guide_runs(text_progress("the guide's training runs", stream=sys.stderr))
        print(f"stored {path}")
    paths = [Path(p) for p in args.documents] or list(DOCUMENTS)
    missing = [str(p) for p in paths if not p.is_file()]
    if missing:
        print(f"no such document: {', '.join(missing)}", file=sys.stderr)
        return 1
    report = {}
    differ = 0
    for path in paths:
        bar = None if args.json else text_progress(path.name, stream=sys.stderr)
        stated = compare(path, bar)
        report[str(path)] = [
            {
                "line": s.marker.line,
                "key": s.marker.key,
                "stated": s.marker.value,
                "computed": s.computed,
            }
            for s in stated
        ]
        wrong = [s for s in stated if not s.agrees]
        if args.write:
            update(path, stated)
        else:
            differ += len(wrong)
        if not args.json:
            verb = "rewrote" if args.write else "differ"
            print(f"{path}: {len(stated)} numbers, {len(wrong)} {verb}")
            for s in wrong:
                print(
                    f"  line {s.marker.line}: {s.marker.key}: states {s.marker.value!r}, "
                    f"the lab computes {s.computed!r}"
                )
    if args.json:
        print(json.dumps(report, indent=1))
    return 1 if differ else 0


def register(subparsers) -> None:
    """Add the ``stated`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser(
        "stated", help="check (or --write) the numbers the documents state against the lab"
    )
    p.add_argument(
        "documents",
        nargs="*",
        help="Markdown files (default: every document that states the lab's numbers)",
    )
    p.add_argument("--write", action="store_true", help="write the lab's values into them")
    p.add_argument(
        "--train",
        action="store_true",
        help="first train the guide's Train-page runs again and store them (minutes)",
    )
    p.add_argument("--json", action="store_true", help="every number as JSON on stdout")
    p.set_defaults(func=cmd_stated)
