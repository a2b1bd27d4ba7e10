"""Stated values of the Train page: the guide's training runs, trained as the page trains them.

The teacher's guide starts three short Bayes-by-Backprop runs from links of the Train page
(``train_kind=bbb&train_epochs=3&...&train_name=bbb_narrow``). :func:`train_guide_runs` builds
each link's request exactly as the page does (:func:`~core.jobs.make_request` with the method's
defaults and the link's settings, the job's seed) and trains it, and :data:`RUNS_FILE` keeps
what the page would show (minutes of CPU: ``python -m core stated --train`` refreshes it).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from core.jobs import make_request, run_training
from core.jobs.training import TrainRequest
from core.methods import method
from core.progress import ProgressFn, share
from core.stated.guide import GUIDE, guide_links
from core.stated.registry import stated
from core.storage.results import StoredResults

RUNS = StoredResults("teaching")
RUNS_FILE = "teaching-train-runs.json"
"""The guide's training runs as the Train page shows them, in :data:`RUNS`."""
PAGE_SETTINGS = {"train_epochs": "epochs"}
"""The Train page's settings that are not a method's own, by URL parameter."""


def guide_requests(text: str) -> dict[str, TrainRequest]:
    """The request each Train link of a guide starts (the link's ``train_name`` → request).

    Args:
        text: The guide's Markdown.

    Returns:
        One request per Train link, built as the page builds it from the link's settings.
    """
    requests = {}
    for link in guide_links(text):
        if link.route != "train":
            continue
        query = link.query
        unit = method(query["train_kind"])
        values: dict = {}
        for setting in unit.settings:
            if setting.applies(values):
                raw = query.get(f"train_{setting.name}")
                values[setting.name] = setting.default if raw is None else setting.type(raw)
        name = query["train_name"]
        requests[name] = make_request(
            name,
            query["train_kind"],
            n_train=int(query.get("train_subset", 10_000)),
            n_eval_samples=int(query.get("train_eval_samples", 100)),
            epochs=int(query.get("train_epochs", 3)),
            **values,
        )
    return requests


def train_guide_runs(progress: ProgressFn | None = None, text: str | None = None) -> Path:
    """Train every Train link of the guide as the page would, and store what it shows.

    Args:
        progress: Called with (fraction done, message); None for silence.
        text: The guide's Markdown; None reads :data:`~core.stated.guide.GUIDE`.

    Returns:
        The file written (:data:`RUNS_FILE` in :data:`RUNS`), atomically.
    """
    requests = guide_requests(GUIDE.read_text() if text is None else text)
    runs = {}
    with tempfile.TemporaryDirectory(prefix="bnn-guide-runs-") as folder:
        for i, (name, request) in enumerate(requests.items()):
            steps = []
            outcome = run_training(
                request,
                directory=Path(folder),
                progress=share(progress, i, len(requests)),
                on_step=steps.append,
            )
            runs[name] = {
                "request": request.to_dict(),
                "first_steps": [vars(s) for s in steps[:1]],
                "epochs": [vars(e) for e in outcome.history],
                "metrics": outcome.metrics,
                "seconds": outcome.seconds,
            }
    return RUNS.save(RUNS_FILE, runs)


def stored_runs() -> dict:
    """The stored guide runs (:data:`RUNS_FILE`).

    Returns:
        Run name → its request (in today's form: runs stored before methods owned their
        parameters are read through the same migration as a stored job), first running
        averages, epochs and final metrics.

    Raises:
        FileNotFoundError: If the runs were never stored.
    """
    runs = RUNS.load(RUNS_FILE)
    if runs is None:
        raise FileNotFoundError(f"no stored guide runs at {RUNS.path(RUNS_FILE)}")
    return {
        name: run | {"request": TrainRequest.from_dict(run["request"]).to_dict()}
        for name, run in runs.items()
    }


@stated("train_run", on_opening=False)
def train_run(name: str, field: str) -> str:
    """A number of one of the guide's runs, as the Train page shows it.

    ``field``: ``test_error`` (the saved model's, ``6.31%``), ``kl_start`` / ``kl_end`` (the KL
    term at the first running average and the last epoch, in millions of nats, ``2.95``),
    ``nll_start`` / ``nll_end`` (the training NLL, ``0.71``), ``epoch_test_error`` (the last
    epoch's, ``6.3%``).
    """
    run = stored_runs()[name]
    first, last = run["first_steps"][0], run["epochs"][-1]
    texts = {
        "test_error": f"{run['metrics']['test_error']:.2%}",
        "kl_start": f"{first['kl'] / 1e6:.2f}",
        "kl_end": f"{last['kl'] / 1e6:.2f}",
        "nll_start": f"{first['nll']:.2f}",
        "nll_end": f"{last['nll']:.2f}",
    }
    return texts[field]


@stated("train_kl_ratio", on_opening=False)
def train_kl_ratio(first: str, second: str) -> str:
    """How many times larger the first run's KL term starts than the second's (``3.5``)."""
    runs = stored_runs()
    return f"{runs[first]['first_steps'][0]['kl'] / runs[second]['first_steps'][0]['kl']:.1f}"
