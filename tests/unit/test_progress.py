"""Server-wide compute slots: a pool admits its size, refuses or waits beyond it."""

from __future__ import annotations

import threading
from contextlib import contextmanager

from core.progress import compute_slot


def test_a_pool_admits_its_size_then_refuses_or_waits():
    with compute_slot("test pool", 2) as first, compute_slot("test pool", 2) as second:
        assert first and second
        with compute_slot("test pool", 2) as third:
            assert not third  # full: nothing held, nothing to release
        with compute_slot("another pool", 1) as other:
            assert other  # pools are separate
    with compute_slot("test pool", 2) as again:
        assert again  # released on leaving

    waited = []

    @contextmanager
    def note_waiting():
        waited.append(True)
        yield

    holder_in, release = threading.Event(), threading.Event()

    def hold():
        with compute_slot("one at a time", 1):
            holder_in.set()
            release.wait(5)

    thread = threading.Thread(target=hold)
    thread.start()
    holder_in.wait(5)
    threading.Timer(0.2, release.set).start()
    with compute_slot("one at a time", 1, waiting=note_waiting) as held:
        assert held and waited == [True]  # it waited, then got the slot
    thread.join(5)
