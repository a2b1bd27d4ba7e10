"""One writer process of the multi-process class-database test (run as a script, not collected).

    python -m tests.support.class_writer DB_URL OUT_FILE WRITER THREADS EACH SHARED

``THREADS`` threads each send ``EACH`` drawings of their own plus, after each, one of the
``SHARED`` submission ids every writer also sends (a double click seen by several processes).
Each confirmed submission is appended to ``OUT_FILE`` as ``ok <submission id> <row id>`` and
flushed at once, so a writer killed mid-burst leaves the list of what it was told was stored;
each failure is appended as ``error <seconds the call took>s <one line>``. A line ``ready`` is
written once every thread is about to start, ``done`` when all finished.

The drawing and label of a submission id follow from the id (:func:`drawing_of`), so the test can
check that a confirmed row holds the drawing that was sent.
"""

from __future__ import annotations

import sys
import threading
import time
import uuid
from collections.abc import Callable

import torch

from core.classroom.store import ClassStore


def shared_ids(n: int) -> list[str]:
    """The submission ids every writer also sends."""
    return [str(uuid.uuid5(uuid.NAMESPACE_URL, f"shared-{i}")) for i in range(n)]


def own_id(writer: int, thread: int, i: int) -> str:
    """The submission id of one writer's own drawing."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"own-{writer}-{thread}-{i}"))


def drawing_of(key: str) -> tuple[torch.Tensor, int]:
    """The drawing and digit sent under a submission id.

    Returns:
        ``(image (28, 28) float in [0, 1], label 0–9)``, a function of ``key`` alone.
    """
    seed = uuid.UUID(key).int % (2**63)
    g = torch.Generator().manual_seed(seed)
    image = torch.zeros(28, 28)
    image[4:24, 8:20] = torch.randint(0, 256, (20, 12), generator=g).float() / 255
    image[14, 14] = 1.0
    return image, seed % 10


def run_threads(target: Callable[[int], None], n: int) -> None:
    """Run ``target(0)`` … ``target(n - 1)`` in ``n`` threads at once and wait for all."""
    workers = [threading.Thread(target=target, args=(t,)) for t in range(n)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


def main(url: str, out: str, writer: int, threads: int, each: int, n_shared: int) -> None:
    shared = shared_ids(n_shared)
    lock = threading.Lock()
    barrier = threading.Barrier(threads + 1)
    with open(out, "a", buffering=1) as log:

        def record(line: str) -> None:
            with lock:
                log.write(line + "\n")
                log.flush()

        def student(t: int) -> None:
            store = ClassStore(url)
            barrier.wait()
            for i in range(each):
                for key in (own_id(writer, t, i), shared[(writer + t + i) % n_shared]):
                    image, label = drawing_of(key)
                    began = time.monotonic()
                    try:
                        row = store.submit(image, label, "burst", key)
                    except Exception as exc:  # every failure is recorded, none hidden
                        waited = time.monotonic() - began
                        record(f"error {waited:.2f}s " + " ".join(repr(exc).split()))
                        continue
                    record(f"ok {key} {row}")

        def start(t: int) -> None:
            if t < threads:
                student(t)
            else:  # the extra thread says when every student is about to start
                record("ready")
                barrier.wait()

        run_threads(start, threads + 1)
        record("done")


if __name__ == "__main__":
    url, out, *numbers = sys.argv[1:]
    main(url, out, *(int(n) for n in numbers))
