"""Stated values of "Learn our handwriting" (the Class drawings page).

The stored study of every method learning the lab's canvas-style digits
(:mod:`core.adapt.bench`), as the page's table shows it: ``adapt_study METHOD COLUMN``, METHOD
a row of :data:`core.adapt.bench.ROWS`, COLUMN a short name of
:func:`core.adapt.bench.columns` (``before``, ``20``, ``50``, ``200``, ``ece_before``, ``ece``,
``mnist_before``, ``mnist``, ``seconds``).
"""

from __future__ import annotations

from core.adapt.bench import TITLES, columns, load_study, study_table
from core.stated.registry import stated


@stated("adapt_study")
def adapt_study(method: str, column: str) -> str:
    """One cell of the stored study's table, e.g. ``adapt_study mlp mnist`` → ``19.9``."""
    result = load_study()
    if result is None:
        raise FileNotFoundError(
            "the lab has no stored adaptation study (python -m benchmarks.bench_adapt)"
        )
    if method not in TITLES:
        raise ValueError(f"adapt_study's method is one of {sorted(TITLES)}, not {method!r}")
    names = columns(list(result["settings"]["sizes"]))
    if column not in names:
        raise ValueError(f"adapt_study's column is one of {sorted(names)}, not {column!r}")
    return study_table(result)[TITLES[method]][names[column]]
