"""Stated numbers: every number a document states about the lab, computed by the lab.

A document marks each such number (:mod:`core.stated.markers`); a source of
:mod:`core.stated.registry` computes it with the same core call, settings and seeds as the
page that shows it. ``python -m core stated`` checks a document against the lab and
``--write`` rewrites its numbers; ``tests/app/test_stated.py`` fails when they disagree.
"""

from core.stated.markers import Marker, markers, rewrite
from core.stated.registry import sources, stated, value

__all__ = ["Marker", "markers", "rewrite", "sources", "stated", "value"]
