"""The lab's stored results: long runs and measurements that ship with it, found by name.

Beside the shipped checkpoints, the pages and studies read results that took minutes to hours
to compute and ship as small JSON files: the Bandits page's long reference runs, the Active
learning page's curves, the Training speed page's runs on other machines, the comparison of
every method and the teacher's guide's training runs. Each study keeps them in one folder,
``<results folder>/<study>/<name>.json``, where the results folder is ``checkpoints/results/``
(``BNN_RESULTS_DIR`` overrides it, e.g. for tests), beside the results of the pages' default
views (:data:`core.storage.cache.SHIPPED_DIR`, keyed by content, not by name).

:class:`StoredResults` is the one way in: the pages, the studies and the commands that store
a result (``--save``) all go through it. The lab notebook (ablations, probes and run logs kept
beside the code) is never read by the lab.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import settings
from core.atomic import atomic_write_text
from core.paths import CHECKPOINT_DIR

STUDIES = {
    "adaptation": "every method learning canvas-style digits (python -m benchmarks.bench_adapt)",
    "active_learning": "the Active learning page's curves (python -m core active --save)",
    "bandit_references": "the Bandits page's long runs (python -m core bandit ... --save)",
    "comparison": "every shipped method on one evaluation (python -m core compare --save)",
    "teaching": "the teacher's guide's training runs (python -m core stated --train)",
    "training_speed": "the Training speed page's saved runs (python -m core bench --save)",
}
"""Every study with stored results: folder name → what it holds and what writes it."""


def results_dir() -> Path:
    """The folder of the stored results, one subfolder per study.

    Returns:
        ``BNN_RESULTS_DIR``, or ``<checkpoint folder>/results`` by default.
    """
    return Path(settings.text("BNN_RESULTS_DIR") or CHECKPOINT_DIR / "results").expanduser()


@dataclass(frozen=True)
class StoredResults:
    """The stored results of one study, read and written by file name.

    Attributes:
        study: A key of :data:`STUDIES`, e.g. ``"bandit_references"``.
    """

    study: str

    def __post_init__(self) -> None:
        if self.study not in STUDIES:
            raise KeyError(f"no stored results named {self.study!r}; known: {sorted(STUDIES)}")

    @property
    def folder(self) -> Path:
        """The study's folder, ``<results folder>/<study>`` (it may not exist yet)."""
        return results_dir() / self.study

    def path(self, name: str) -> Path:
        """Where the result ``name`` is (or would be) stored.

        Args:
            name: The file name, e.g. ``"mushroom-50000.json"``.

        Returns:
            ``folder / name``.
        """
        return self.folder / name

    def load(self, name: str) -> Any | None:
        """One stored result.

        Args:
            name: The file name, e.g. ``"active_learning.json"``.

        Returns:
            The decoded JSON, or None when the file is missing or unreadable.
        """
        try:
            return json.loads(self.path(name).read_text())
        except (OSError, ValueError):
            return None

    def load_all(self, pattern: str = "*.json") -> dict[str, Any]:
        """Every readable stored result whose name matches ``pattern``.

        Args:
            pattern: A glob pattern of file names, e.g. ``"peers-*.json"``.

        Returns:
            File name → decoded JSON, by name; unreadable files are skipped.
        """
        found = {path.name: self.load(path.name) for path in sorted(self.folder.glob(pattern))}
        return {name: result for name, result in found.items() if result is not None}

    def save(self, name: str, result: Any, *, indent: int | None = 1) -> Path:
        """Store a result atomically (the folder is created; one of the same name is replaced).

        Args:
            name: The file name.
            result: JSON-serialisable data.
            indent: JSON indentation; None for the most compact form.

        Returns:
            The file written.
        """
        separators = (",", ":") if indent is None else None
        path = self.path(name)
        atomic_write_text(path, json.dumps(result, indent=indent, separators=separators) + "\n")
        return path
