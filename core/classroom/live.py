"""The Class page's evaluation, drawing by drawing (no streamlit; one cache per server process).

A stored drawing never changes and its id is never reused, so a model's predictions on it
(:class:`core.classroom.report.Predictions`) are computed once and kept in a
:class:`PredictionCache`, per database, class, model name, model file version and number of
passes. A refresh of the page (:func:`live_reports`) runs each model only on the drawings it has
not seen, oldest first in batches of :data:`BATCH`, within a time budget (one batch per model at
least; the rest follow at the next refreshes), forgets drawings that are gone, and assembles the
reports from the kept predictions (:func:`core.classroom.report.assemble_report`, cheap).

Each batch's Monte-Carlo noise is seeded by its first drawing's id, so a drawing's result does
not change when others arrive and a set evaluated the same way twice gives the same report. For
a stochastic model a drawing's noise depends on which drawings shared its batch, so a class that
grew drawing by drawing and the same class evaluated at once differ by Monte-Carlo noise only; a
deterministic model gives the same predictions either way.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import torch

from core.classroom.drawings import Drawing, as_tensors
from core.classroom.report import ModelReport, Predictions, assemble_report, predict
from core.engine.interface import LabModel
from core.evaluation.uncertainty import DEFAULT_SCORE, Thresholds

BATCH = 16
"""Drawings per model evaluation: as fast per drawing as larger batches on the CPU, with a
smaller memory peak (on 2,000 drawings, 100 passes, a BBB network: +44 MB against +137 MB with
64)."""
MAX_ENTRIES = 32
"""(class, model, passes) combinations a cache keeps, the least recently used dropped first."""
BUDGET_S = 1.0
"""Seconds of model evaluation one refresh may spend on new drawings (all models together)."""


class CacheKey(NamedTuple):
    """What one cache entry's predictions depend on.

    Attributes:
        database: The database URL.
        code: The class code.
        name: The model's name.
        version: The model file's version (e.g. its modification time), so a retrained model is
            evaluated afresh.
        n_samples: Monte-Carlo passes per drawing.
    """

    database: str
    code: str
    name: str
    version: int
    n_samples: int


@dataclass
class _Entry:
    """One key's predictions, sorted by drawing id (``ids`` int64 ``(M,)`` ascending)."""

    ids: torch.Tensor
    predictions: Predictions | None
    lock: threading.Lock


@dataclass(frozen=True)
class LiveReport:
    """A model's report on the drawings it has evaluated so far.

    Attributes:
        report: The report; its row ``i`` is ``records[i]``.
        records: The drawings it covers, in the order they were given (oldest first).
        pending: How many of the class's drawings this model has not evaluated yet.
    """

    report: ModelReport
    records: list[Drawing]
    pending: int


class PredictionCache:
    """Per-drawing predictions, kept per :class:`CacheKey` and shared by threads (sessions).

    Memory: at most ``max_entries`` entries of about 72 bytes per drawing (its id, 10 mean
    probabilities and the uncertainty scores, float32); one evaluation holds one batch's passes.

    Args:
        max_entries: Entries kept; the least recently used is dropped first.
        batch: Drawings per model evaluation.
    """

    def __init__(self, max_entries: int = MAX_ENTRIES, batch: int = BATCH):
        self.max_entries = max_entries
        self.batch = batch
        self._entries: OrderedDict[CacheKey, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """Number of entries kept."""
        return len(self._entries)

    def _entry(self, key: CacheKey) -> _Entry:
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                entry = _Entry(torch.zeros(0, dtype=torch.long), None, threading.Lock())
                self._entries[key] = entry
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)
            return entry

    def forget(self, database: str, code: str) -> None:
        """Drop every entry of one class (e.g. after it was cleared).

        Args:
            database: The database URL.
            code: The class code.
        """
        with self._lock:
            for key in [k for k in self._entries if (k.database, k.code) == (database, code)]:
                del self._entries[key]

    def evaluate(
        self,
        key: CacheKey,
        model: LabModel,
        records: Sequence[Drawing],
        deadline: float = math.inf,
    ) -> tuple[list[Drawing], Predictions]:
        """Bring one entry up to date with the class's drawings and give its predictions.

        Drawings the entry holds but ``records`` lacks are dropped; new ones are evaluated in
        batches, oldest first: always one, then more until ``deadline`` (so every call makes
        progress and the result is never empty).

        Args:
            key: The entry (``key.n_samples`` passes per drawing).
            model: The model ``key`` names (not modified).
            records: The class's drawings, at least one, in any order.
            deadline: :func:`time.perf_counter` value after which no new batch is started.

        Returns:
            ``(covered, predictions)``: the drawings of ``records`` evaluated so far, in the
            order given, and their predictions (row ``i`` is ``covered[i]``).

        Raises:
            ValueError: Without drawings.
        """
        if not records:
            raise ValueError("need at least one drawing")
        present = torch.tensor([r.id for r in records], dtype=torch.long)
        entry = self._entry(key)
        with entry.lock:
            self._drop_absent(entry, present)
            seen = torch.isin(present, entry.ids).tolist()
            new = [r for r, known in zip(records, seen, strict=True) if not known]
            new.sort(key=lambda r: r.id)
            parts, done = [], []
            for start in range(0, len(new), self.batch):
                if parts and time.perf_counter() >= deadline:
                    break
                batch = new[start : start + self.batch]
                parts.append(predict(model, as_tensors(batch).images, key.n_samples, batch[0].id))
                done.extend(r.id for r in batch)
            if parts:
                self._add(entry, torch.tensor(done, dtype=torch.long), parts)
            covered = torch.isin(present, entry.ids)
            rows = torch.searchsorted(entry.ids, present[covered])
            kept = [r for r, c in zip(records, covered.tolist(), strict=True) if c]
            return kept, entry.predictions.take(rows)

    @staticmethod
    def _drop_absent(entry: _Entry, present: torch.Tensor) -> None:
        keep = torch.isin(entry.ids, present)
        if bool(keep.all()):
            return
        entry.ids = entry.ids[keep]
        rows = keep.nonzero().squeeze(1)
        entry.predictions = entry.predictions.take(rows) if len(rows) else None

    @staticmethod
    def _add(entry: _Entry, ids: torch.Tensor, parts: list[Predictions]) -> None:
        old = [] if entry.predictions is None else [entry.predictions]
        joined = torch.cat([entry.ids, ids])
        order = joined.argsort()
        entry.ids = joined[order]
        entry.predictions = Predictions.cat([*old, *parts]).take(order)


def live_reports(
    cache: PredictionCache,
    database: str,
    code: str,
    models: Sequence[tuple[str, int, LabModel]],
    records: Sequence[Drawing],
    n_samples: int,
    thresholds: Mapping[str, Thresholds] | None = None,
    budget_s: float = BUDGET_S,
    score: str = DEFAULT_SCORE,
) -> list[LiveReport]:
    """Each model's report on a class's drawings, evaluating only drawings not seen before.

    The budget is shared out in order: model ``i`` starts no second or later batch after
    ``(i + 1) / len(models)`` of it has passed (what one model leaves is the next ones'), and
    every model with drawings to go evaluates one batch at least, so a refresh takes about the
    budget plus one batch per model at most.

    Args:
        cache: The server's cache.
        database: The database URL.
        code: The class code.
        models: ``(name, file version, model)`` triples.
        records: The class's drawings, at least one, oldest first.
        n_samples: Monte-Carlo passes per drawing.
        thresholds: Name → that model's "I don't know" limits; models missing here get no
            verdicts.
        budget_s: Seconds of evaluation of new drawings, all models together.
        score: The score the "I don't know" rule uses.

    Returns:
        One :class:`LiveReport` per model, in order.

    Raises:
        ValueError: Without drawings.
    """
    limits = thresholds or {}
    start = time.perf_counter()
    reports = []
    for i, (name, version, model) in enumerate(models):
        key = CacheKey(database, code, name, version, n_samples)
        deadline = start + budget_s * (i + 1) / len(models)
        covered, predictions = cache.evaluate(key, model, records, deadline)
        labels = torch.tensor([r.label for r in covered], dtype=torch.long)
        report = assemble_report(name, predictions, labels, n_samples, limits.get(name), score)
        reports.append(LiveReport(report, covered, len(records) - len(covered)))
    return reports
