"""One progress-report convention for all long work in ``core``.

Long functions take ``progress: ProgressFn | None`` and call it with the fraction done in
[0, 1] and a short message. The CLI renders it as a text bar (:func:`text_progress`), the app
as ``st.progress``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

ProgressFn = Callable[[float, str], None]


def report(progress: ProgressFn | None, fraction: float, message: str = "") -> None:
    """Call ``progress`` if given, clamping ``fraction`` to [0, 1]."""
    if progress is not None:
        progress(min(max(float(fraction), 0.0), 1.0), message)


def text_progress(label: str, stream: TextIO | None = None, width: int = 30) -> ProgressFn:
    """A :data:`ProgressFn` drawing ``label [#####-----]  42% message`` on one terminal line."""
    out = stream or sys.stderr
    start = time.perf_counter()

    def draw(fraction: float, message: str) -> None:
        filled = int(round(fraction * width))
        elapsed = time.perf_counter() - start
        bar = "#" * filled + "-" * (width - filled)
        out.write(f"\r{label} [{bar}] {fraction:4.0%} {elapsed:6.1f}s {message}"[:160].ljust(100))
        if fraction >= 1.0:
            out.write("\n")
        out.flush()

    return draw
