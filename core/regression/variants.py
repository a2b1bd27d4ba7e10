"""The regression playground's methods, read from the method registry.

Every method of :data:`core.methods.METHODS` that can fit a regression
(:attr:`~core.methods.base.Method.regression`) is a playground method under its own kind; the
playground's own table (:data:`core.catalogue.REGRESSION_VARIANTS`) adds variants that fix
some of a method's parameters (BBB with the scale-mixture prior, with local
reparameterisation), its titles and notices, and the HMC reference sampled by NUTS, and
:data:`core.catalogue.REGRESSION_KINDS` the playground's defaults for a method's settings. A
new method package appears here with no edit; deleting it removes it.

Every method shares the playground's prior N(0, σp²) with HMC, so the prior settings
(:data:`~core.methods.base.PRIOR_SETTINGS`) are the playground's, not offered per method; so
are the fields of :class:`~core.training.TrainConfig` (epochs and learning rate are shared).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.catalogue import REGRESSION_KINDS, REGRESSION_VARIANTS
from core.methods import METHODS, method
from core.methods.base import PRIOR_SETTINGS, TRAIN_FIELDS, Setting


@dataclass(frozen=True)
class Variant:
    """One playground method: a method of :mod:`core.methods` with some parameters fixed.

    Attributes:
        name: Its key (cache files, the page's ``reg_methods`` parameter).
        kind: The method of its network, a key of :data:`core.methods.METHODS`.
        title: Human name.
        notice: What to look for in its picture.
        fixed: Values it sets and does not offer: parameters of its method or fields of
            :class:`~core.training.TrainConfig` (e.g. the learning rate of a sampler).
        first: Whether the page shows it before any choice.
        nuts: Whether it is sampled by NUTS (:mod:`core.regression.hmc`) instead of trained.
        members_are_passes: Whether its networks are its ``members``, each with its own
            learned noise level and one pass at prediction.
    """

    name: str
    kind: str
    title: str
    notice: str
    fixed: dict = field(default_factory=dict)
    first: bool = False
    nuts: bool = False
    members_are_passes: bool = False


def _fixed_by_kind(kind: str) -> dict:
    return dict(REGRESSION_KINDS.get(kind, {}).get("fixed", {}))


def _variant(name: str, entry: dict) -> Variant:
    kind = entry["kind"]
    return Variant(
        name=name,
        kind=kind,
        title=entry["title"],
        notice=entry["notice"],
        fixed=_fixed_by_kind(kind) | entry.get("fixed", {}),
        first=entry.get("first", False),
        nuts=entry.get("nuts", False),
        members_are_passes=REGRESSION_KINDS.get(kind, {}).get("members_are_passes", False),
    )


def discover() -> dict[str, Variant]:
    """Every playground method, in display order.

    Returns:
        Name → variant: the table's entries whose method is registered and can fit a
        regression, then each other such method under its own kind (title and summary from
        the registry), then the NUTS references.
    """
    kinds = [k for k, m in METHODS.items() if m.regression]
    listed = [
        _variant(name, entry)
        for name, entry in REGRESSION_VARIANTS.items()
        if entry["kind"] in kinds
    ]
    named = {v.kind for v in listed if not v.nuts}
    new = [
        Variant(k, k, METHODS[k].title, METHODS[k].summary, _fixed_by_kind(k))
        for k in kinds
        if k not in named
    ]
    ordered = [v for v in listed if not v.nuts] + new + [v for v in listed if v.nuts]
    return {v.name: v for v in ordered}


VARIANTS: dict[str, Variant] = discover()
"""Every playground method by name, in display order."""

DEFAULT_METHODS: list[str] = [name for name, v in VARIANTS.items() if v.first]
"""The methods the playground shows first; their fits of every preset's default data ship with
the lab (:mod:`core.regression.study`)."""

PLAYGROUND_SET = frozenset(s.name for s in PRIOR_SETTINGS) | TRAIN_FIELDS
"""Names the playground sets for every method: the shared prior and training settings."""


def check_method(name: str) -> Variant:
    """The playground method called ``name``.

    Args:
        name: A key of :data:`VARIANTS`.

    Returns:
        Its variant.

    Raises:
        ValueError: If there is none.
    """
    if name not in VARIANTS:
        raise ValueError(f"method must be one of {tuple(VARIANTS)}, got {name!r}")
    return VARIANTS[name]


def regression_kinds() -> list[str]:
    """The kinds of the trained playground methods, once each, in display order."""
    return list(dict.fromkeys(v.kind for v in VARIANTS.values() if not v.nuts))


def offered(kind: str) -> tuple[Setting, ...]:
    """The settings of a method that the playground offers.

    Its own settings but the shared ones (:data:`PLAYGROUND_SET`) and those any of its
    variants fixes.

    Args:
        kind: A key of :data:`core.methods.METHODS`.

    Returns:
        The settings, in the method's order.
    """
    fixed = {n for v in VARIANTS.values() if v.kind == kind and not v.nuts for n in v.fixed}
    return tuple(
        s for s in method(kind).settings if s.name not in PLAYGROUND_SET and s.name not in fixed
    )


def default_params(kind: str) -> dict:
    """The playground's starting values of a method's offered settings.

    Args:
        kind: A key of :data:`core.methods.METHODS`.

    Returns:
        Setting name → value: the playground's default (:data:`core.catalogue.REGRESSION_KINDS`)
        where it has one, else the method's.
    """
    own = REGRESSION_KINDS.get(kind, {}).get("defaults", {})
    return {s.name: s.check(own.get(s.name, s.default)) for s in offered(kind)}


def complete_params(kind: str, given: dict) -> dict:
    """A method's offered settings: the given values checked, the others at their defaults.

    Args:
        kind: A key of :data:`core.methods.METHODS`.
        given: Values by setting name.

    Returns:
        Every offered setting's value by name.

    Raises:
        ValueError: For a setting the playground does not offer, or a bad value.
    """
    settings = {s.name: s for s in offered(kind)}
    unknown = set(given) - set(settings)
    if unknown:
        raise ValueError(f"{kind} offers no setting {', '.join(sorted(unknown))} here")
    return default_params(kind) | {k: settings[k].check(v) for k, v in given.items()}
