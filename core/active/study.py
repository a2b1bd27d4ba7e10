"""The active-learning study: runs cached on disk, curves over seeds, the stored result."""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch

from core.active.acquisition import MODEL_FREE
from core.active.loop import (
    CACHE_VERSION,
    ActiveConfig,
    ActiveData,
    Round,
    load_active_data,
    run_active,
)
from core.processes import run_in_processes
from core.progress import Job, ProgressFn
from core.storage.cache import CacheEntry, cache_entry
from core.storage.results import StoredResults


def run_entry(config: ActiveConfig):
    """The disk-cache entry of a finished run.

    Args:
        config: The run's settings.

    Returns:
        A :class:`core.storage.cache.CacheEntry`.
    """
    return cache_entry("active", CACHE_VERSION, settings=config.to_dict())


def partial_entry(config: ActiveConfig) -> CacheEntry:
    """Where an unfinished run of ``config`` keeps its rounds (:meth:`ActiveLearner.state`).

    Args:
        config: The run's settings.

    Returns:
        A :class:`core.storage.cache.CacheEntry` (tensors).
    """
    return cache_entry("active-partial", CACHE_VERSION, settings=config.to_dict(), format="pt")


def cached_run(
    config: ActiveConfig, data: ActiveData | None = None, progress: ProgressFn | None = None
) -> list[Round]:
    """:func:`run_active`, computed once and then read from the disk cache.

    An interrupted run is saved after every round and resumes at its next round.

    Args:
        config: The run's settings.
        data: The datasets; loaded when None and the run is not cached.
        progress: Called with (fraction done, message).

    Returns:
        The rounds.
    """
    partial = partial_entry(config)
    rounds = run_entry(config).load_or_compute(
        lambda: run_active(config, data or load_active_data(), progress, partial),
        decode=lambda stored: [Round(**r) for r in stored],
        encode=lambda rounds: [asdict(r) for r in rounds],
    )
    partial.path.unlink(missing_ok=True)
    return rounds


def curve_jobs(configs: list[ActiveConfig], data: ActiveData | None = None) -> list[Job]:
    """A :class:`~core.progress.Job` per run of ``configs`` not cached yet.

    Args:
        configs: The runs.
        data: The datasets (loaded by each job when None).

    Returns:
        The jobs.
    """
    return [
        Job(
            f"{c.acquisition}, seed {c.seed}",
            lambda progress, c=c: cached_run(c, data, progress),
        )
        for c in configs
        if not run_entry(c).exists()
    ]


@dataclass(frozen=True)
class Curve:
    """Test accuracy against labels over seeds for one acquisition function.

    Attributes:
        acquisition: Its name.
        labels: ``(R,)`` labelled-set sizes.
        mean: ``(R,)`` mean accuracy over seeds.
        std: ``(R,)`` standard deviation over seeds (0 for one seed).
        seeds: Number of seeds.
    """

    acquisition: str
    labels: list[int]
    mean: list[float]
    std: list[float]
    seeds: int

    def labels_to(self, accuracy: float) -> int | None:
        """The fewest labels at which the mean accuracy reaches ``accuracy``.

        Args:
            accuracy: Target accuracy (fraction).

        Returns:
            The labelled-set size, or None when the curve never reaches it.
        """
        return labels_to(self.labels, self.mean, accuracy)

    def area(self) -> float:
        """Mean accuracy over the rounds (area under the curve per round).

        Returns:
            A fraction.
        """
        return sum(self.mean) / len(self.mean)


def labels_to(labels: list[int], accuracies: list[float], accuracy: float) -> int | None:
    """The fewest labels at which a curve reaches ``accuracy``.

    Args:
        labels: Labelled-set sizes, increasing.
        accuracies: The accuracy (fraction) at each.
        accuracy: The target.

    Returns:
        The labelled-set size, or None when the curve never reaches it.
    """
    return next((n for n, a in zip(labels, accuracies, strict=True) if a >= accuracy), None)


def curve_of(run: list[Round]) -> tuple[list[int], list[float]]:
    """A run's labelled-set sizes and accuracies, round by round.

    Args:
        run: Its rounds.

    Returns:
        ``(labels, accuracies)``.
    """
    return [r.labels for r in run], [r.accuracy for r in run]


def curve(runs: list[list[Round]], acquisition: str) -> Curve:
    """Mean ± std over seeds, up to the rounds every run has (runs stopped early are shorter).

    Args:
        runs: One list of rounds per seed, the same labelled-set sizes round by round.
        acquisition: The function's name.

    Returns:
        The curve.
    """
    length = min(len(run) for run in runs)
    acc = torch.tensor([[r.accuracy for r in run[:length]] for run in runs], dtype=torch.float64)
    std = acc.std(0, correction=0) if len(runs) > 1 else torch.zeros(acc.shape[1])
    return Curve(
        acquisition,
        [r.labels for r in runs[0][:length]],
        acc.mean(0).tolist(),
        std.tolist(),
        len(runs),
    )


RESULT_FILE = "active_learning.json"  # the stored curves the page shows (the CNN)
STORED = StoredResults("active_learning")
"""The stored studies (``python -m core active --save``), by file name."""


def stored_result(name: str = RESULT_FILE) -> dict | None:
    """A stored study (``python -m core active --save``), or None.

    Args:
        name: The file's name; by default the curves the Active learning page shows.

    Returns:
        The saved result (``settings``, ``curves`` by acquisition function, ...), or None
        when the file is missing or unreadable.
    """
    return STORED.load(name)


def longest_first(configs: list[ActiveConfig]) -> list[ActiveConfig]:
    """``configs`` with the runs expected to take longest first (a stable reordering).

    A run without a model to score the pool with (random picking) needs the most labels to
    reach its ``stop_at`` or budget, and every round retrains on all of them: in Gal et al.'s
    study random picking's runs took 36–45 minutes, the others 10–16.

    Args:
        configs: The runs.

    Returns:
        The same runs, those of :data:`~core.active.acquisition.MODEL_FREE` functions first.
    """
    return sorted(configs, key=lambda c: c.acquisition not in MODEL_FREE)


def curves_for(
    acquisitions: list[str],
    seeds: int,
    base: ActiveConfig | None = None,
    progress: ProgressFn | None = None,
    workers: int = 1,
) -> dict:
    """Curves of several acquisition functions over ``seeds`` seeds (runs cached on disk).

    Args:
        acquisitions: Keys of :data:`core.active.acquisition.ACQUISITIONS`.
        seeds: Seeds 0 … seeds − 1 per function.
        base: Settings shared by every run (its ``acquisition`` and ``seed`` are replaced).
        progress: Called with (fraction done, message).
        workers: 1: the runs one after another in this process; more: the runs not cached
            yet in that many processes side by side, one CPU thread each
            (:func:`core.processes.run_in_processes`), the longest first
            (:func:`longest_first`). A run gives the same rounds either way on one thread.

    Returns:
        ``{"settings": base settings, "curves": {name: {labels, mean, std, seeds,
        labels_to_85, labels_to_90, labels_to_95, area, per_seed}}}``; ``labels_to_T`` is
        read off the mean curve, ``per_seed`` holds each seed's ``labels_to_T`` (None: not
        reached) and its rounds' labels and accuracies.
    """
    from dataclasses import replace

    from core.progress import run_all

    base = base or ActiveConfig()
    configs = [replace(base, acquisition=a, seed=s) for a in acquisitions for s in range(seeds)]
    if workers > 1:
        missing = [c for c in longest_first(configs) if not run_entry(c).exists()]
        titles = [f"{c.acquisition}, seed {c.seed}" for c in missing]
        run_in_processes(
            cached_run, [(c,) for c in missing], workers, titles=titles, progress=progress
        )
    else:
        missing = curve_jobs(configs)
        data = load_active_data() if missing else None
        run_all(curve_jobs(configs, data), progress)
    curves = {}
    for a in acquisitions:
        runs = [cached_run(replace(base, acquisition=a, seed=s)) for s in range(seeds)]
        c = curve(runs, a)
        curves[a] = {
            **asdict(c),
            "labels_to_85": c.labels_to(0.85),
            "labels_to_90": c.labels_to(0.90),
            "labels_to_95": c.labels_to(0.95),
            "area": c.area(),
            "per_seed": [
                {
                    **{f"labels_to_{t}": labels_to(*curve_of(run), t / 100) for t in (85, 90, 95)},
                    "labels": curve_of(run)[0],
                    "accuracy": curve_of(run)[1],
                }
                for run in runs
            ],
        }
    return {"settings": {**base.to_dict(), "seeds": seeds}, "curves": curves}
