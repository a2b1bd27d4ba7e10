"""Papers' experiments as named presets, each setting with where it comes from.

A :class:`Protocol` is a run configuration (anything with ``to_dict()``: a bandit
:class:`~core.bandits.runner.RunConfig`, an active-learning
:class:`~core.active.protocols.ActiveStudy`) and, for every setting it fixes, one line on its
source: the paper's text, or what the paper leaves open and the value chosen here. The
commands print that table before they run one (``--protocol NAME``); the lab's quick settings
stay what the live pages use.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Protocol:
    """A paper's experiment.

    Attributes:
        name: Its key, e.g. ``"blundell2015"``.
        title: The paper and the experiment, for people.
        config: The run it is (has ``to_dict()``).
        sources: Setting (a key of ``config.to_dict()``, or ``parent.key`` inside a nested
            settings dict, e.g. ``model.hidden``) → where its value comes from.
    """

    name: str
    title: str
    config: Any
    sources: dict[str, str]

    def values(self) -> dict[str, object]:
        """Every setting of the configuration, nested settings as ``parent.key``.

        Returns:
            Setting → value.
        """
        flat: dict[str, object] = {}
        for key, value in self.config.to_dict().items():
            if isinstance(value, dict):
                flat |= {f"{key}.{inner}": v for inner, v in value.items()}
            else:
                flat[key] = value
        return flat

    def settings(self) -> list[tuple[str, object, str]]:
        """Every setting the protocol fixes, its value and its source.

        Returns:
            ``(setting, value, source)`` in the order of :attr:`sources`.
        """
        values = self.values()
        return [(key, values[key], source) for key, source in self.sources.items()]

    def describe(self) -> str:
        """The settings for people: the title, then one line each with its source.

        Returns:
            ``setting = value  (source)`` lines after the title.
        """
        lines = [f"{self.title}:"]
        lines += [f"  {key} = {value}  ({source})" for key, value, source in self.settings()]
        return "\n".join(lines)
