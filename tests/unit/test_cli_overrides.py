"""``--set KEY=VALUE``: typed by the field's default, checked by the settings' own rules."""

from __future__ import annotations

import pytest

from core.active.loop import ActiveConfig
from core.bandits.settings import ModelSettings
from core.cli.overrides import suffix, with_overrides


def test_values_take_the_type_of_the_fields_default():
    config = with_overrides(
        ActiveConfig(), ["hidden=64,32", "stop_at=0.9", "n_samples=7", "init=glorot"]
    )
    assert config.hidden == (64, 32) and config.stop_at == 0.9 and config.n_samples == 7
    assert config.init == "glorot" and with_overrides(config, ["stop_at=none"]).stop_at is None
    assert with_overrides(ModelSettings(), ["updates_per_step=4"]).updates_per_step == 4
    assert with_overrides(ActiveConfig(), []) == ActiveConfig()


@pytest.mark.parametrize(
    ("item", "message"),
    [
        ("depth=3", "KEY=VALUE with KEY one of"),
        ("n_samples", "KEY=VALUE"),
        ("n_samples=many", "'many' is not a whole number"),
        ("stop_at=soon", "'soon' is not a number"),
        ("stop_at=2", "stop_at must be a fraction"),  # the settings' own check
    ],
)
def test_bad_items_are_refused_with_a_message(item, message):
    with pytest.raises(ValueError, match=message):
        with_overrides(ActiveConfig(), [item])


def test_the_suffix_names_the_changed_settings():
    assert suffix([]) == ""
    assert suffix(["init=glorot", "hidden=64,32"]) == "-init_glorot-hidden_64-32"
