"""Where the project keeps data, caches and checkpoints.

- ``BNN_DATA_DIR``: the writable data folder (default ``<repo>/data``, git-ignored).
- ``BNN_DATA_PATH``: extra read-only folders searched after it, separated by ``os.pathsep``
  (e.g. ``../shared/datasets`` in CI).
- ``BNN_CACHE_DIR``: on-disk evaluation cache (default ``<repo>/.cache``, git-ignored).
- ``BNN_MODELS_DIR``: user-trained models (default ``<data folder>/models``,
  :func:`user_model_dir`).
- ``BNN_RESULTS_DIR``: the lab's stored results (default ``<checkpoint folder>/results``,
  :func:`core.storage.results.results_dir`).

All are read through :mod:`core.settings`.
"""

from __future__ import annotations

import os
from pathlib import Path

from core import settings

REPO_ROOT = Path(__file__).resolve().parents[1]
CHECKPOINT_DIR = Path(settings.text("BNN_CHECKPOINT_DIR") or REPO_ROOT / "checkpoints")
"""The shipped checkpoints (``BNN_CHECKPOINT_DIR`` overrides, e.g. for tests)."""


def data_dir() -> Path:
    """The writable data folder where prepared datasets are stored.

    Returns:
        ``BNN_DATA_DIR``, or ``<repo>/data`` by default, as an absolute path.
    """
    return Path(settings.text("BNN_DATA_DIR") or REPO_ROOT / "data").expanduser().resolve()


def data_search_path() -> list[Path]:
    """All folders searched for datasets.

    Returns:
        The data folder first, then the folders of ``BNN_DATA_PATH``, absolute.
    """
    extra = [
        Path(p).expanduser().resolve()
        for p in settings.text("BNN_DATA_PATH").split(os.pathsep)
        if p
    ]
    return [data_dir(), *extra]


def cache_dir() -> Path:
    """Folder of the on-disk evaluation cache.

    Returns:
        ``BNN_CACHE_DIR``, or ``<repo>/.cache`` by default, as an absolute path.
    """
    return Path(settings.text("BNN_CACHE_DIR") or REPO_ROOT / ".cache").expanduser().resolve()


def user_model_dir() -> Path:
    """Where models trained by users are saved, never the shipped ``checkpoints/`` folder.

    Returns:
        ``BNN_MODELS_DIR``, or ``<data folder>/models`` by default, as an absolute path.
    """
    folder = settings.text("BNN_MODELS_DIR")
    return Path(folder).expanduser().resolve() if folder else data_dir() / "models"
