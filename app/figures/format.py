"""Numbers and dates as people read them in tables and labels.

One helper for the pages: integers with thousands separators and no decimals, other values to
three significant digits, a dash where nothing was measured; dates as "17:35" (today),
"4 Dec 17:35" (with the time) or "26 Nov 2026" (a day); devices as "NVIDIA H100" or
"CPU, 1 thread".
"""

from __future__ import annotations

import math
import re
from datetime import datetime

DASH = "–"


def number(value: float | int | None) -> str:
    """Format a number for a table cell.

    Args:
        value: The number; None or NaN where nothing was measured.

    Returns:
        ``"6,307"`` for a whole number (also ``6307.0``), ``"0.123"``, ``"12.3"`` or
        ``"1.2e-07"`` for others (three significant digits), ``"–"`` for no value.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return DASH
    if isinstance(value, bool):
        return str(value)
    if float(value).is_integer() or abs(value) >= 1000:
        return f"{value:,.0f}"
    if abs(value) < 0.001:
        return f"{value:.2g}"
    return f"{value:.3g}"


def table_text(rows: list[dict]) -> list[dict]:
    """Write every number of a table's rows with :func:`number`, and a missing value as a dash.

    Args:
        rows: The table's rows; a row may lack some of the others' columns.

    Returns:
        The rows, every column in each, their numbers and missing values as text.
    """
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [{c: row.get(c) for c in columns} for row in rows]
    return [
        {c: number(v) if v is None or isinstance(v, int | float) else v for c, v in row.items()}
        for row in cells
    ]


def _parse(moment: str | datetime) -> datetime:
    return datetime.fromisoformat(moment) if isinstance(moment, str) else moment


def day(moment: str | datetime | None) -> str:
    """Format the day of a moment, e.g. ``"26 Nov 2026"``.

    Args:
        moment: An ISO 8601 timestamp or a datetime; None where unknown.

    Returns:
        The day, or ``"–"`` for None.
    """
    if moment is None:
        return DASH
    when = _parse(moment)
    return f"{when.day} {when:%b %Y}"


def time_of_day(moment: str | datetime, now: datetime | None = None) -> str:
    """Format a moment as ``"17:35"`` if it is today, else ``"4 Dec 17:35"``.

    Args:
        moment: An ISO 8601 timestamp or a datetime (aware or naive, like ``now``).
        now: The present, in the same kind of time as ``moment``; None for the local clock.

    Returns:
        The text, in the local time zone for an aware moment when ``now`` is None.
    """
    when = _parse(moment)
    if now is None:
        when = when.astimezone() if when.tzinfo else when
        now = datetime.now(when.tzinfo)
    if when.date() == now.date():
        return f"{when:%H:%M}"
    return f"{when.day} {when:%b %H:%M}"


def device_words(device: str, threads: int | None = None) -> str:
    """Name a device as people write it.

    Args:
        device: The recorded name, e.g. ``"NVIDIA H100 80GB HBM3"`` or ``"cpu (1 threads)"``.
        threads: The CPU threads used, if known (else read from ``device``).

    Returns:
        E.g. ``"NVIDIA H100"`` or ``"CPU, 1 thread"``.
    """
    cpu = re.fullmatch(r"cpu(?: \((\d+) threads?\))?", device)
    if cpu is None:
        return re.sub(r"\s+\d+\s*GB\b.*$", "", device)  # the memory size and kind
    threads = threads or int(cpu.group(1) or 0)
    return f"CPU, {threads} thread{'' if threads == 1 else 's'}" if threads else "CPU"
