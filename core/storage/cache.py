"""The one on-disk cache of expensive results, keyed by content.

A :class:`CacheEntry` is one result of one study: ``cache_dir()/<study>/<digest>.<format>``,
where the digest hashes the study's :data:`version`, the SHA-256 of every checkpoint file the
result depends on (:func:`core.storage.checkpoints.content_hash`, so a retrained checkpoint gets
new results) and the settings. Entries are written atomically and read back with
``torch.load(weights_only=True)`` (tensors) or as JSON; an absent, corrupt or incompatible entry
reads as ``None`` and is simply computed again.

The results of the pages' default views ship with the lab in :data:`SHIPPED_DIR`
(``<study>/<digest>.<format>``, the same names; ``python scripts/ship_results.py`` computes
them): an entry absent from the cache is read from there, so that a fresh clone's first visit
shows them at once. They are read only; what is computed is saved in the cache.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from core.atomic import atomic_write
from core.paths import CHECKPOINT_DIR, cache_dir
from core.storage.checkpoints import content_hash, resolve_checkpoint

FORMATS = ("json", "pt")
SHIPPED_DIR = CHECKPOINT_DIR / "results"
"""Results of the pages' default views that ship with the lab (read only)."""
T = TypeVar("T")


@dataclass(frozen=True)
class CacheEntry:
    """Where one result lives and how it is stored.

    Attributes:
        path: The file, ``cache_dir()/<study>/<digest>.<format>``.
        format: ``"json"`` or ``"pt"`` (tensors).
    """

    path: Path
    format: str

    @property
    def shipped(self) -> Path:
        """Where this entry would ship with the lab: ``SHIPPED_DIR/<study>/<name>``."""
        return SHIPPED_DIR / self.path.parent.name / self.path.name

    def exists(self) -> bool:
        """Whether the entry is cached or shipped (it may still be unreadable; see :meth:`load`).

        Returns:
            True if ``path`` or :attr:`shipped` is a file.
        """
        return self.path.is_file() or self.shipped.is_file()

    def load(self) -> Any | None:
        """The stored value: the cache's, else the shipped one.

        Returns:
            The value, or None when absent or unreadable (then it is recomputed).
        """
        for path in (self.path, self.shipped):
            try:
                if self.format == "json":
                    return json.loads(path.read_text())
                return torch.load(path, weights_only=True)
            except Exception:  # absent, truncated, corrupt or from an incompatible version
                continue
        return None

    def read(self, decode: Callable[[Any], T]) -> T | None:
        """The stored value, decoded.

        Args:
            decode: Builds the result from what :meth:`load` returns; raises ``TypeError``,
                ``ValueError``, ``KeyError`` or ``AttributeError`` for another layout.

        Returns:
            The result, or None when absent, unreadable or of another version's layout.
        """
        stored = self.load()
        if stored is None:
            return None
        try:
            return decode(stored)
        except (TypeError, ValueError, KeyError, AttributeError):  # another version's layout
            return None

    def load_or_compute(
        self,
        compute: Callable[[], T],
        *,
        decode: Callable[[Any], T] = lambda stored: stored,
        encode: Callable[[T], Any] = lambda value: value,
    ) -> T:
        """The stored result, or compute it once and store it: the one cache pattern.

        Args:
            compute: Computes the result (reporting its own progress).
            decode: Builds the result from the stored value (see :meth:`read`).
            encode: What to store of a computed result (JSON values or tensors).

        Returns:
            The result.
        """
        value = self.read(decode)
        if value is None:
            value = compute()
            self.save(encode(value))
        return value

    def save(self, value: Any) -> None:
        """Store ``value`` atomically.

        Args:
            value: JSON-serialisable for ``"json"``, tensors (in containers) for ``"pt"``.
        """
        if self.format == "json":
            text = json.dumps(value, sort_keys=True).encode()
            atomic_write(self.path, lambda f: f.write(text))
        else:
            atomic_write(self.path, lambda f: torch.save(value, f))


def cache_entry(
    study: str,
    version: int,
    *,
    checkpoints: tuple[str | Path | None, ...] = (),
    settings: dict | None = None,
    format: str = "json",
    prefix: str = "",
) -> CacheEntry:
    """The cache entry of ``study`` for these checkpoints and settings.

    Args:
        study: Name of the study, the entry's folder.
        version: The study's result version; bump it to invalidate old entries.
        checkpoints: Registry names or ``.pt`` paths whose content is hashed; None for "no
            checkpoint", e.g. a white-box attack's missing source.
        settings: JSON-serialisable settings of the result.
        format: ``"json"`` or ``"pt"``.
        prefix: Makes file names readable (e.g. the dataset).

    Returns:
        The entry (which may not exist yet).

    Raises:
        ValueError: If ``format`` is not in :data:`FORMATS`.
    """
    if format not in FORMATS:
        raise ValueError(f"cache format must be one of {FORMATS}, got {format!r}")
    key = json.dumps(
        {
            "version": version,
            "checkpoints": [
                None if c is None else content_hash(resolve_checkpoint(c)) for c in checkpoints
            ],
            "settings": settings or {},
        },
        sort_keys=True,
    )
    digest = hashlib.sha256(key.encode()).hexdigest()[:32]
    name = f"{prefix}-{digest}" if prefix else digest
    return CacheEntry(cache_dir() / study / f"{name}.{format}", format)
