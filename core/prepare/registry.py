"""Prepare for class: one preparer per page, and the run over a guide's links.

One registry, :data:`PREPARERS`, maps a page's address to its :class:`Preparer`: the query
parameters it understands and the work (:class:`~core.progress.Job` s) a link with those
values needs that is not cached yet — the same core calls the page makes, with the link's
values, so that they fill the same content-keyed caches (:mod:`core.storage.cache`) and the
page's first visit then reads instead of computing. :func:`problems` names the links of a guide
that no preparer covers (a test runs it on ``docs/teaching.md``, read by
:func:`core.stated.guide.guide_links`); :func:`prepare` runs them all
with one progress and can be stopped between two pieces of work. ``python -m core prepare``
(:mod:`core.cli.prepare`) and the teacher's button on the Class drawings page call it.

Work started in class is not prepared: a training job (Train page) and an active-learning run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core.bandits.live import LINK_SETTINGS
from core.catalogue import default_models, list_checkpoints
from core.data import DatasetUnavailable
from core.progress import Job, ProgressFn, report, share
from core.stated.guide import GUIDE, GuideLink, guide_links
from core.storage.checkpoints import CheckpointError, checkpoint_dataset
from core.storage.user_models import list_user_checkpoints

COMMON = frozenset({"present", "hide", "class", "sidebar_models", "sidebar_samples"})
"""Parameters of every page: presenter mode, hidden controls, the class, the sidebar's models."""


@dataclass(frozen=True)
class Preparer:
    """What one page computes for a link.

    Attributes:
        jobs: ``jobs(values)``: the work not cached yet for a link's query parameters.
        understands: The page's parameters ``jobs`` reads, or knows need nothing.
        live: Prefixes of parameters of work the class starts itself (nothing to prepare).
    """

    jobs: Callable[[Mapping[str, str]], list[Job]]
    understands: frozenset[str] = frozenset()
    live: tuple[str, ...] = ()

    def unknown(self, names: list[str]) -> list[str]:
        """The parameters among ``names`` this preparer does not understand."""
        return [
            n
            for n in names
            if n not in COMMON and n not in self.understands and not n.startswith(self.live)
        ]


@dataclass
class LinkReport:
    """What preparing one link did.

    Attributes:
        url: The link.
        jobs: Pieces of work that were missing (0: everything was cached already).
        seconds: Time spent on the link, listing included.
        skipped: Why it could not be prepared (e.g. a missing dataset); empty if it was.
    """

    url: str
    jobs: int = 0
    seconds: float = 0.0
    skipped: str = ""

    @property
    def cached(self) -> bool:
        """Whether everything the link needs was cached before."""
        return not self.jobs and not self.skipped


@dataclass
class Preparation:
    """The outcome of :func:`prepare`.

    Attributes:
        links: One report per link prepared (or skipped), in order.
        stopped: Whether ``should_stop`` ended it before the last link.
    """

    links: list[LinkReport] = field(default_factory=list)
    stopped: bool = False


def guide_url(link: GuideLink) -> str:
    """The link as the guide writes it (``http://localhost:8501/ood?present=1&...``)."""
    route = "" if link.route == "home" else link.route
    return f"http://localhost:8501/{route}?" + "&".join(f"{k}={v}" for k, v in link.query.items())


def read_guide(path: Path = GUIDE) -> list[GuideLink]:
    """Every distinct link of a guide, in the order they first appear.

    Args:
        path: The guide (Markdown).

    Returns:
        Its links, each once.

    Raises:
        OSError: If the file cannot be read.
    """
    links = {}
    for link in guide_links(path.read_text(encoding="utf-8")):
        links.setdefault(guide_url(link), link)
    return list(links.values())


# --- reading a link's values ------------------------------------------------------------------


def _items(text: str) -> list[str]:
    """A list value of a link (``app.share.encode``: comma-separated, a comma as ``%2C``)."""
    return [
        item.replace("%2C", ",").replace("%2c", ",").replace("%25", "%")
        for item in text.split(",")
        if item
    ]


def _flag(text: str | None) -> bool:
    return (text or "").strip().lower() in ("1", "true", "yes", "on")


def _available() -> list[str]:
    """The checkpoints that load: shipped ones, then the user-trained ones."""
    return [i.spec.name for i in list_checkpoints() + list_user_checkpoints() if i.available]


def _models(values: Mapping[str, str]) -> list[str]:
    """The link's sidebar models that load, else the pages' default choice."""
    available = _available()
    if "sidebar_models" in values:
        return [n for n in _items(values["sidebar_models"]) if n in available]
    return default_models(available)


# --- one preparer per page --------------------------------------------------------------------


def _nothing(values: Mapping[str, str]) -> list[Job]:
    return []


def _thresholds(values: Mapping[str, str]) -> list[Job]:
    """The "I don't know" limits of the sidebar's models: each scored on its own test set."""
    from core.studies.evaluations import evaluation_jobs

    return [
        job
        for name in _models(values)
        for job in evaluation_jobs([name], [checkpoint_dataset(name)])
    ]


def _ood(values: Mapping[str, str]) -> list[Job]:
    """The OOD explorer's evaluations: each model on its task's and the chosen dataset's inputs."""
    from core.studies.evaluations import evaluation_jobs

    task = values.get("ood_task", "mnist")
    dataset = values.get("ood_dataset", "mnist" if task == "fashion_mnist" else "fashion_mnist")
    models = [n for n in _models(values) if checkpoint_dataset(n) == task]
    return evaluation_jobs(
        models,
        [task, dataset],
        n_samples=int(values.get("ood_samples", 50)),
        n_inputs=int(values.get("ood_subset", 2000)),
    )


def _pruning(values: Mapping[str, str]) -> list[Job]:
    """The Pruning page's curves (:func:`core.studies.pruning_curves.compared_curves`)."""
    from core.studies.pruning_curves import compared_curves, pruning_jobs

    name = values.get("pruning_model", "bbb_mixture")
    curves = compared_curves(
        name, checkpoint_dataset(name), _flag(values.get("pruning_compare")), _available()
    )
    return pruning_jobs([(n, m, f"{n}, {m}") for n, m in curves])


def _regression(values: Mapping[str, str]) -> list[Job]:
    """The Regression playground's fits of a preset at the page's default hyperparameters."""
    from core.regression.data import PRESETS, make_data
    from core.regression.settings import FitSettings
    from core.regression.study import fit_jobs
    from core.regression.variants import DEFAULT_METHODS

    source = values.get("reg_data", next(iter(PRESETS)))
    if source not in PRESETS:  # points drawn in class
        return []
    preset = PRESETS[source]
    data = make_data(source, preset.default_n_inputs, float(preset.default_noise), 0)
    methods = _items(values["reg_methods"]) if "reg_methods" in values else DEFAULT_METHODS
    return fit_jobs(data, methods, FitSettings())


def _bandits(values: Mapping[str, str]) -> list[Job]:
    """The live run a link sets up (the stored long runs need nothing)."""
    from core.bandits.live import link_config
    from core.bandits.store import cached_result, run_bandit

    config = link_config(values)
    if config is None or cached_result(config) is not None:
        return []
    return [Job("live run", lambda progress: run_bandit(config, progress=progress))]


PREPARERS: dict[str, Preparer] = {
    "home": Preparer(_nothing),  # the Home page's table ships with the lab
    "draw": Preparer(_thresholds, frozenset({"draw_sweep", "draw_sweep_steps"})),
    "classroom": Preparer(_thresholds, live=("learn_",)),  # the teacher adapts in class
    "ood": Preparer(
        _ood,
        frozenset(
            {"ood_task", "ood_dataset", "ood_score", "ood_seed", "ood_subset", "ood_samples"}
        ),
    ),
    "pruning": Preparer(
        _pruning,
        frozenset(
            {
                "pruning_model",
                "pruning_method",
                "pruning_percent",
                "pruning_compare",
                "pruning_log_density",
            }
        ),
    ),
    "regression": Preparer(_regression, frozenset({"reg_data", "reg_methods", "reg_layout"})),
    "bandits": Preparer(_bandits, frozenset({*LINK_SETTINGS, "bandit_seed", "bandit_reference"})),
    "train": Preparer(_nothing, live=("train_",)),  # a job the teacher starts in class
    "active": Preparer(_nothing, live=("active_",)),  # a run started in class
}
"""A page's address → its preparer."""


def problems(links: list[GuideLink]) -> list[str]:
    """Name the links no preparer covers.

    Args:
        links: A guide's links (:func:`read_guide`).

    Returns:
        One line per link whose page has no preparer or that has a parameter its preparer does
        not understand; empty when every link is covered.
    """
    found = []
    for link in links:
        preparer = PREPARERS.get(link.route)
        if preparer is None:
            found.append(f"{guide_url(link)}: no preparer for the page {link.route!r}")
        elif unknown := preparer.unknown(list(link.query)):
            found.append(f"{guide_url(link)}: {', '.join(unknown)} not understood")
    return found


def link_jobs(link: GuideLink) -> list[Job]:
    """The work a link needs that is not cached yet.

    Args:
        link: A link covered by :data:`PREPARERS` (see :func:`problems`).

    Returns:
        Its missing pieces of work.

    Raises:
        KeyError: If no preparer covers the link's page.
        DatasetUnavailable: If a dataset the link shows is missing.
        CheckpointError: If a model the link shows does not load.
    """
    return PREPARERS[link.route].jobs(link.query)


def prepare(
    links: list[GuideLink],
    progress: ProgressFn | None = None,
    should_stop: Callable[[], bool] | None = None,
    on_link: Callable[[LinkReport], None] | None = None,
) -> Preparation:
    """Compute and cache what each link needs, link by link.

    A link whose dataset or model is missing is skipped with the reason; the others go on.

    Args:
        links: The links (:func:`read_guide`), covered by
            :data:`PREPARERS`.
        progress: Gets the fraction of links done and what is being computed.
        should_stop: Asked before each piece of work; True ends the preparation there (the
            pieces already done stay cached).
        on_link: Gets each link's report as soon as the link is done.

    Returns:
        The reports, and whether it was stopped.
    """
    outcome = Preparation()
    stop = should_stop or (lambda: False)
    for i, link in enumerate(links):
        start = time.perf_counter()
        done = LinkReport(guide_url(link))
        step = share(progress, i, len(links), f"{i + 1}/{len(links)} {link.route}")
        try:
            jobs = link_jobs(link)
            done.jobs = len(jobs)
            for j, job in enumerate(jobs):
                if stop():
                    outcome.stopped = True
                    break
                job.run(share(step, j, len(jobs), job.title))
        except (DatasetUnavailable, CheckpointError, ValueError) as exc:
            done.skipped = str(exc).split("\n")[0]
        done.seconds = time.perf_counter() - start
        report(step, 1.0, "cached" if done.cached else "done")
        if outcome.stopped:
            break
        outcome.links.append(done)
        if on_link is not None:
            on_link(done)
        if stop() and i + 1 < len(links):
            outcome.stopped = True
            break
    report(progress, 1.0, "stopped" if outcome.stopped else "done")
    return outcome
