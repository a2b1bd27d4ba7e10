"""Finding dataset files in the data folders (:func:`core.paths.data_search_path`)."""

from __future__ import annotations

from pathlib import Path

from core.paths import data_search_path


class DatasetUnavailable(Exception):
    """A dataset's files are missing (or could not be obtained); the message says how to fix it."""


def find_folder(subdir: str, filenames: tuple[str, ...]) -> Path | None:
    """Find the first ``<search folder>/<subdir>`` holding all ``filenames`` (stat only).

    Args:
        subdir: Folder below each search folder, e.g. ``"MNIST/raw"``.
        filenames: Files that must all be present.

    Returns:
        The folder, or None when no search folder holds them all.
    """
    for root in data_search_path():
        folder = root / subdir
        if all((folder / name).is_file() for name in filenames):
            return folder
    return None


def find_any(subdir: str, candidates: tuple[tuple[str, ...], ...]) -> Path | None:
    """Like :func:`find_folder`, accepting the first of several alternative file sets.

    Args:
        subdir: Folder below each search folder, e.g. ``"KMNIST/raw"``.
        candidates: Alternative file sets, tried in order (e.g. gzip-compressed, then plain).

    Returns:
        The folder of the first file set found, or None.
    """
    for filenames in candidates:
        folder = find_folder(subdir, filenames)
        if folder is not None:
            return folder
    return None


def searched() -> str:
    """Give the search path as one line, for messages.

    Returns:
        The search folders, comma-separated.
    """
    return ", ".join(str(p) for p in data_search_path())
