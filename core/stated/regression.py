"""Stated values of the Regression playground's table.

For a preset's default data and the default hyperparameters (the fits shipped with the lab).
"""

from __future__ import annotations

from core.regression.data import PRESETS, make_data
from core.regression.settings import FitSettings
from core.regression.study import compared_numbers, load_fit
from core.stated.registry import stated

COLUMNS = ("rmse_in", "nll_in", "std_in", "std_out", "std_ratio", "coverage90_in", "std_vs_hmc")
"""The table's columns that documents state (as ``%.3f``, like the page)."""


@stated("regression")
def regression_number(preset: str, methods: str, method: str, column: str) -> str:
    """One number of the table for ``methods`` (comma-separated, as the page's link) on a preset.

    e.g. ``regression gap bbb,dropout,ensemble,hmc hmc std_ratio``; ``std_vs_hmc`` needs
    ``hmc`` among the methods.
    """
    if column not in COLUMNS:
        raise ValueError(f"a regression column is one of {COLUMNS}, not {column!r}")
    spec = PRESETS[preset]
    data = make_data(preset, spec.default_n_inputs, spec.default_noise, 0)
    settings = FitSettings()
    fits = {m: load_fit(data, m, settings) for m in methods.split(",")}
    missing = [m for m, fit in fits.items() if fit is None]
    if missing:
        raise LookupError(f"no stored fit of {missing} on {preset}: open the page once")
    return f"{compared_numbers(fits)[method][column]:.3f}"
