"""The live active-learning comparison: learners advanced together by a background thread."""

from __future__ import annotations

import threading
from types import SimpleNamespace

from core.active.live import LiveComparison, LiveState, rounds_to_budget
from core.active.loop import ActiveConfig, Round


class Learner:
    """A stand-in for ActiveLearner: each step labels ``acquire`` more, optionally after a gate."""

    def __init__(self, budget: int = 50, gate: threading.Event | None = None) -> None:
        self.config = SimpleNamespace(initial=20, acquire=10, budget=budget)
        self.rounds: list[Round] = []
        self.gate = gate
        self.started = threading.Event()

    @property
    def done(self) -> bool:
        return bool(self.rounds) and self.rounds[-1].labels >= self.config.budget

    def step(self) -> Round:
        self.started.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        labels = self.config.initial + self.config.acquire * len(self.rounds)
        last = labels >= self.config.budget
        self.rounds.append(Round(labels, 0.5, [] if last else [labels], [] if last else [1.0]))
        return self.rounds[-1]


def test_rounds_to_budget_counts_the_first_and_a_last_partial_round():
    assert rounds_to_budget(SimpleNamespace(config=ActiveConfig(budget=150))) == 14
    assert rounds_to_budget(SimpleNamespace(config=ActiveConfig(budget=155))) == 15


def test_every_published_round_has_every_learner_at_the_same_labels():
    gate = threading.Event()
    learners = {"bald": Learner(), "random": Learner(gate=gate)}
    run = LiveComparison(learners, slots=1).start()
    assert learners["random"].started.wait(30)  # bald has stepped, random is mid-step
    snap = run.snapshot()
    assert snap.state is LiveState.RUNNING
    assert snap.rounds == {"bald": [], "random": []}  # half a round is never shown
    gate.set()
    assert run.join(30)
    snap = run.snapshot()
    assert snap.state is LiveState.DONE and snap.total == snap.done_rounds == 4
    labels = {name: [r.labels for r in rounds] for name, rounds in snap.rounds.items()}
    assert labels == {"bald": [20, 30, 40, 50], "random": [20, 30, 40, 50]}


def test_a_cancelled_run_keeps_its_whole_rounds_and_stops_within_a_step():
    gate = threading.Event()
    learners = {"bald": Learner(gate=gate), "random": Learner()}
    run = LiveComparison(learners, slots=1).start()
    assert learners["bald"].started.wait(30)
    run.cancel()
    gate.set()
    assert run.join(30)
    snap = run.snapshot()
    assert snap.state is LiveState.CANCELLED
    assert snap.rounds == {"bald": [], "random": []}
    assert len(learners["random"].rounds) == 0  # stopped before random's step


def test_a_second_run_waits_for_a_slot_and_says_so():
    gate = threading.Event()
    first = LiveComparison({"bald": Learner(gate=gate)}, slots=1, pool="test-slots").start()
    assert first.learners["bald"].started.wait(30)
    second = LiveComparison({"bald": Learner()}, slots=1, pool="test-slots").start()
    assert second.join(0.5) is False  # still waiting for the slot
    assert second.snapshot().state is LiveState.WAITING
    assert not second.learners["bald"].started.is_set()
    gate.set()
    assert first.join(30) and second.join(30)
    assert second.snapshot().state is LiveState.DONE


def test_an_error_fails_the_run_with_one_line():
    learner = Learner()
    learner.step = lambda: 1 / 0
    run = LiveComparison({"bald": learner}, slots=1)
    run.start()
    assert run.join(30)
    snap = run.snapshot()
    assert snap.state is LiveState.FAILED and snap.error.startswith("ZeroDivisionError")


def test_nothing_computes_before_start():
    learner = Learner()
    run = LiveComparison({"bald": learner}, slots=1)
    assert run.snapshot().state is LiveState.STARTING and run.snapshot().state.active
    assert not run.started and run.join(0)
    assert not learner.started.is_set()
