"""Stated values of the Active learning page's stored curves.

Read by :func:`core.active.study.stored_result`, as the page reads them.
"""

from __future__ import annotations

from core.active.study import stored_result
from core.stated.registry import stated


@stated("active_labels")
def active_labels(acquisition: str, percent: str) -> str:
    """The labels an acquisition function needed to reach ``percent`` % test accuracy.

    As the page's table shows it: a number, or ``not reached``.
    """
    result = stored_result()
    if result is None:
        raise FileNotFoundError("the lab has no stored active-learning curves")
    labels = result["curves"][acquisition][f"labels_to_{int(percent)}"]
    return "not reached" if labels is None else f"{labels}"
