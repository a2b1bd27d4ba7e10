"""The teacher's guide's links: which page each step opens, with which settings."""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import parse_qsl

from core.paths import REPO_ROOT

GUIDE = REPO_ROOT / "docs" / "teaching.md"
"""The teacher's guide."""
LINK = re.compile(r"`http://localhost:8501/(?P<route>\w*)\?(?P<query>[^`\s]*)`")
"""A link as the guide writes it: in backticks, on the teacher's own computer."""


@dataclass(frozen=True)
class GuideLink:
    """One link of the guide.

    Attributes:
        route: The page's address (its file's stem; ``"home"`` for the home page).
        query: The link's settings, URL parameter → value (``present`` included).
        line: The 1-based line of the guide it is on.
    """

    route: str
    query: dict[str, str]
    line: int


def guide_links(text: str) -> list[GuideLink]:
    """Every link of a guide, in order.

    Args:
        text: The guide's Markdown.

    Returns:
        Its links.
    """
    return [
        GuideLink(
            m["route"] or "home",
            dict(parse_qsl(m["query"])),
            text.count("\n", 0, m.start()) + 1,
        )
        for m in LINK.finditer(text)
    ]
