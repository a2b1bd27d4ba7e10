"""A griffe extension for the API reference (mkdocs.yml): the Sphinx roles of core's docstrings
(``:func:`load_dataset```, ``:class:`~core.methods.ModelConfig```) shown as code, the name as
written, or only its last part after ``~``, as Sphinx shows them."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":[a-z]+:`(~?)([^`<>]+)`")


def plain(text: str) -> str:
    """``text`` with every Sphinx role written as inline code."""
    return ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class SphinxRoles(griffe.Extension):
    """Rewrites the roles of every docstring griffe reads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
