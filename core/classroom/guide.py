"""The links of the teacher's guide (``docs/teaching.md``): each page address and its settings.

The guide gives every step of a lesson as a link, ``http://localhost:8501/ROUTE?KEY=VALUE&...``
(the Home page is the route ``""``). :func:`guide_links` reads them from the guide itself, so
that what ``python -m core prepare`` computes before class cannot drift from what the guide
shows (:mod:`core.classroom.prepare`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

from core.storage.paths import REPO_ROOT

GUIDE = REPO_ROOT / "docs" / "teaching.md"
"""The teacher's guide."""
LINK = re.compile(r"http://localhost:8501/[^\s`)>\"'\]]*")
"""A link of the guide, up to the first space, backtick, bracket or quote."""


@dataclass(frozen=True)
class GuideLink:
    """One link of the guide.

    Attributes:
        url: The link as written.
        route: The page's address (``"ood"``; ``""`` for the Home page).
        params: Each query parameter's text, in the link's order.
    """

    url: str
    route: str
    params: tuple[tuple[str, str], ...]

    @property
    def values(self) -> dict[str, str]:
        """The query parameters as a dict (a repeated name keeps its last value)."""
        return dict(self.params)


def parse_link(url: str) -> GuideLink:
    """Split a link into its page and its settings.

    Args:
        url: ``http://localhost:8501/ROUTE?KEY=VALUE&...``.

    Returns:
        The link.
    """
    parts = urlsplit(url)
    route = parts.path.strip("/")
    return GuideLink(url, route, tuple(parse_qsl(parts.query, keep_blank_values=True)))


def guide_links(path: Path = GUIDE) -> list[GuideLink]:
    """Read every distinct link of a guide, in the order they first appear.

    Args:
        path: The guide (Markdown).

    Returns:
        Its links, each once.

    Raises:
        OSError: If the file cannot be read.
    """
    urls = dict.fromkeys(LINK.findall(path.read_text(encoding="utf-8")))
    return [parse_link(url) for url in urls]
