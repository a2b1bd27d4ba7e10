"""Stated values of the Home page's comparison of every method (:mod:`core.studies.comparison`).

Columns are named by the fields of a comparison row: ``test_error``, ``nll``, ``ece``,
``ood_auroc`` (with the OOD set), ``fgsm_accuracy``, ``predict_ms``, ``train_minutes``.
"""

from __future__ import annotations

from core.stated.registry import stated
from core.studies.comparison import SET_TITLES, comparison_table, load_comparison, row_title

FIELDS = {
    "test_error": "test error (%)",
    "nll": "NLL",
    "ece": "ECE",
    "fgsm_accuracy": "FGSM ε=0.1 acc. (%)",
    "predict_ms": "ms per image (100 passes)",
    "train_minutes": "training (min)",
}


def _column(field: str, dataset: str | None) -> str:
    if field == "ood_auroc":
        if dataset not in SET_TITLES:
            raise ValueError(f"ood_auroc needs one of {sorted(SET_TITLES)}, not {dataset!r}")
        return f"OOD AUROC, {SET_TITLES[dataset]}"
    if field not in FIELDS or dataset is not None:
        raise ValueError(f"a comparison column is one of {sorted(FIELDS)} or 'ood_auroc SET'")
    return FIELDS[field]


def _stored() -> dict:
    """The stored comparison, as the Home page reads it."""
    result = load_comparison()
    if result is None:
        raise FileNotFoundError("the lab has no stored comparison (python -m core compare --save)")
    return result


def _cells(field: str, dataset: str | None) -> dict[str, str]:
    """Checkpoint name → the Home table's text in one column."""
    column = _column(field, dataset)
    table = comparison_table(result := _stored())
    return {row["checkpoint"]: table[row_title(row)][column] for row in result["rows"]}


@stated("comparison")
def comparison_cell(checkpoint: str, field: str, dataset: str | None = None) -> str:
    """One cell of the Home table, e.g. ``comparison mlp ood_auroc notmnist`` → ``0.74``."""
    return _cells(field, dataset)[checkpoint]


@stated("comparison_min")
def comparison_min(field: str, dataset: str | None = None) -> str:
    """The lowest value of a Home table column over every method, as the table shows it."""
    return min(_measured(field, dataset), key=float)


@stated("comparison_max")
def comparison_max(field: str, dataset: str | None = None) -> str:
    """The highest value of a Home table column over every method, as the table shows it."""
    return max(_measured(field, dataset), key=float)


def _measured(field: str, dataset: str | None) -> list[str]:
    return [text for text in _cells(field, dataset).values() if text != "—"]


@stated("comparison_markdown")
def comparison_markdown() -> str:
    """The Home table of every method as a Markdown table, each cell as the page shows it.

    The value starts and ends with a blank line, so that the table stands on its own between
    its markers.
    """
    table = comparison_table(_stored())
    heads = list(next(iter(table.values())))
    lines = ["| method | " + " | ".join(heads) + " |", "|---" * (len(heads) + 1) + "|"]
    lines += [
        f"| {title} | " + " | ".join(cells[head] for head in heads) + " |"
        for title, cells in table.items()
    ]
    return "\n\n" + "\n".join(lines) + "\n\n"
