"""Stated numbers in Markdown: find, check and rewrite the marked values of a document.

A number a document states about the lab is written between two HTML comments (invisible in
the built site)::

    AUROC <!--n:ood_auroc fashion_mnist bbb_mixture mutual_information-->0.979<!--/n-->

The opening comment names a source of :mod:`core.stated.registry` and its arguments, separated
by spaces; the text up to ``<!--/n-->`` is the value as the document states it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

MARKER = re.compile(r"<!--n:(?P<key>[^>]*?)-->(?P<value>.*?)<!--/n-->", re.DOTALL)


@dataclass(frozen=True)
class Marker:
    """One marked value of a document.

    Attributes:
        source: The registry name of the value's source, e.g. ``"ood_auroc"``.
        args: The source's arguments, as written.
        value: The value as the document states it.
        line: The 1-based line of the document the marker starts on.
    """

    source: str
    args: tuple[str, ...]
    value: str
    line: int

    @property
    def key(self) -> str:
        """The marker's key as written: the source and its arguments."""
        return " ".join((self.source, *self.args))


def markers(text: str) -> list[Marker]:
    """Find every marked value of a document, in order.

    Args:
        text: The document's Markdown.

    Returns:
        Its markers.

    Raises:
        ValueError: If a marker names no source.
    """
    found = []
    for match in MARKER.finditer(text):
        words = match["key"].split()
        line = text.count("\n", 0, match.start()) + 1
        if not words:
            raise ValueError(f"line {line}: a stated-number marker without a source")
        found.append(Marker(words[0], tuple(words[1:]), match["value"], line))
    return found


def rewrite(text: str, values: dict[str, str]) -> str:
    """Put each marker's current value into a document.

    Args:
        text: The document's Markdown.
        values: Marker key (:attr:`Marker.key`) → the value to state.

    Returns:
        The document with every marker's value replaced; markers missing from ``values``
        are left as they are.
    """

    def current(match: re.Match) -> str:
        key = " ".join(match["key"].split())
        value = values.get(key, match["value"])
        return f"<!--n:{match['key']}-->{value}<!--/n-->"

    return MARKER.sub(current, text)
