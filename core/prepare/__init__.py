"""Prepare for class: compute and cache what every link of the teacher's guide shows.

* :mod:`core.prepare.registry`: one preparer per page (:data:`~core.prepare.registry.PREPARERS`),
  which links a guide has that none covers, and :func:`~core.prepare.registry.prepare`, which
  runs them with one progress (``python -m core prepare``);
* :mod:`core.prepare.background`: the server's one preparation, run in a thread for the
  teacher's *Prepare for class* button, with a cancel.

The links are read from the guide itself (:func:`core.stated.guide.guide_links`), so what is
prepared cannot drift from what the guide shows.
"""

from core.prepare.background import PreparationRun, PreparationState
from core.prepare.registry import (
    PREPARERS,
    LinkReport,
    Preparation,
    Preparer,
    guide_url,
    link_jobs,
    prepare,
    problems,
    read_guide,
)

__all__ = [
    "PREPARERS",
    "LinkReport",
    "Preparation",
    "PreparationRun",
    "PreparationState",
    "Preparer",
    "guide_url",
    "link_jobs",
    "prepare",
    "problems",
    "read_guide",
]
