"""Documents that state the lab's numbers: compare each with the lab, and bring it up to date."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core.atomic import atomic_write_text
from core.paths import REPO_ROOT
from core.progress import ProgressFn, report
from core.stated.markers import Marker, markers, rewrite
from core.stated.registry import value

DOCUMENTS = tuple(
    REPO_ROOT / path
    for path in (
        "docs/teaching.md",
        "README.md",
        "docs/models.md",
        "docs/methods.md",
        "docs/results.md",
        "docs/bandits.md",
        "docs/experiments/bandits.md",
        "docs/experiments/speed.md",
    )
)
"""The documents whose numbers are generated: ``python -m core stated`` checks these."""


@dataclass(frozen=True)
class Stated:
    """One marked number of a document, beside what the lab computes for it.

    Attributes:
        marker: The marker as the document has it.
        computed: The value the lab computes now.
    """

    marker: Marker
    computed: str

    @property
    def agrees(self) -> bool:
        """Whether the document states what the lab computes."""
        return self.marker.value == self.computed


def compare(path: Path, progress: ProgressFn | None = None) -> list[Stated]:
    """Compute every marked number of a document.

    Args:
        path: The Markdown document.
        progress: Called with (fraction done, message) per number; None for silence.

    Returns:
        Every marker with its computed value, in the document's order.

    Raises:
        ValueError: If a marker names no source.
        KeyError: If a marker names an unknown source.
    """
    found = markers(path.read_text())
    stated = []
    for i, marker in enumerate(found):
        report(progress, i / max(len(found), 1), marker.key)
        stated.append(Stated(marker, value(marker.key)))
    report(progress, 1.0, "done")
    return stated


def update(path: Path, stated: list[Stated]) -> int:
    """Write the computed values into a document (atomically; untouched when all agree).

    Args:
        path: The Markdown document.
        stated: Its numbers, from :func:`compare`.

    Returns:
        How many numbers changed.
    """
    changed = [s for s in stated if not s.agrees]
    if changed:
        values = {s.marker.key: s.computed for s in stated}
        atomic_write_text(path, rewrite(path.read_text(), values))
    return len(changed)
