"""A method's :class:`~core.methods.base.Setting` as a shared control (its URL parameter too).

The Train page and the regression playground draw a method's hyperparameters from its settings
with :func:`setting_widget`: a toggle for a flag, a radio for a choice, a select slider for
numbers with stops, a number box otherwise.
"""

from __future__ import annotations

import math

import streamlit as st

from app import share
from core.methods.base import Setting, SettingValue


def option(label: str, options, default, key: str, container=st, **kw):
    """A select slider whose default is ``default`` (or the nearest option)."""
    options = tuple(options)
    if default not in options:
        default = min(options, key=lambda o: abs(math.log(o) - math.log(default)))
    return share.select_slider(label, options, value=default, key=key, **kw, container=container)


def setting_widget(
    setting: Setting, key: str, container=st, default: SettingValue | None = None
) -> SettingValue:
    """One setting as a control keyed ``key`` (also its URL parameter).

    Args:
        setting: The method's setting.
        key: The widget's key, e.g. ``"train_beta"``.
        container: Where to draw it.
        default: Its starting value; None for the setting's own default.

    Returns:
        The chosen value.
    """
    default = setting.default if default is None else default
    kw = {"help": setting.help, "container": container}
    if setting.type is bool:
        return share.toggle(setting.label, default, key=key, **kw)
    if setting.type is str:
        index = setting.options.index(default)
        return share.radio(setting.label, setting.options, index, setting.title, key=key, **kw)
    if setting.options:
        return option(setting.label, setting.options, default, key, format_func=setting.title, **kw)
    return share.number_input(setting.label, setting.low, setting.high, default, key=key, **kw)
