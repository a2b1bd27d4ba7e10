"""The documentation's numbered lists render as lists: every ``N.`` item of a page's Markdown is
an item of an ordered list in the built page (Python-Markdown, with the site's extensions), not
text run on inside the item before it."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import markdown
import pytest
import yaml

from harness.browser import REPO_ROOT

DOCS = sorted((REPO_ROOT / "docs").rglob("*.md"))
ITEM = re.compile(r"^\s*\d+\. \S")


class _OrderedItems(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.open: list[str] = []
        self.items = 0

    def handle_starttag(self, tag: str, attrs) -> None:
        if tag in ("ol", "ul"):
            self.open.append(tag)
        elif tag == "li" and self.open and self.open[-1] == "ol":
            self.items += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("ol", "ul") and self.open:
            self.open.pop()


def numbered_lines(text: str) -> int:
    """``N.`` list items of a Markdown text, outside fenced code blocks."""
    count, fenced = 0, False
    for line in text.splitlines():
        if line.strip().startswith("```"):
            fenced = not fenced
        elif not fenced and ITEM.match(line):
            count += 1
    return count


def extensions() -> list:
    """The site's Markdown extensions (mkdocs.yml), names only."""
    config = yaml.safe_load((REPO_ROOT / "mkdocs.yml").read_text())
    return [e if isinstance(e, str) else next(iter(e)) for e in config["markdown_extensions"]]


@pytest.mark.parametrize("page", DOCS, ids=[p.relative_to(REPO_ROOT).as_posix() for p in DOCS])
def test_every_numbered_item_is_a_list_item(page):
    text = page.read_text()
    parser = _OrderedItems()
    parser.feed(markdown.markdown(text, extensions=extensions()))
    assert parser.items == numbered_lines(text), f"{page.name}: a numbered item runs on"
