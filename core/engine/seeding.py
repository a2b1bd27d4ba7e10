"""Seeded randomness that leaves the caller's random state as it was.

Every seeded computation of the lab (fixed Monte-Carlo noise of a study, a model's initial
weights, a bandit group's draws) runs inside :func:`seeded`: torch's generators are forked,
seeded, and restored afterwards, so a page or a test that draws random numbers around it sees
the same stream as without it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def seeded(seed: int, *, cuda: bool | None = None) -> Iterator[None]:
    """Run the block with torch's generators seeded by ``seed``; restore them afterwards.

    Args:
        seed: The seed.
        cuda: Also fork and seed the CUDA generators; None: when CUDA is available. The CPU's
            alone (False) is cheap: ``torch.manual_seed`` on a machine whose CUDA is not
            initialised queues a lazy seeding that costs about 2 ms per call.
    """
    cuda = torch.cuda.is_available() if cuda is None else cuda
    devices = list(range(torch.cuda.device_count())) if cuda else []
    with torch.random.fork_rng(devices=devices):
        torch.default_generator.manual_seed(seed)
        if cuda:
            torch.cuda.manual_seed_all(seed)
        yield
