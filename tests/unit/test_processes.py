"""Worker processes: results in order, one thread each, errors raised, freed memory kept."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
import torch

from core.processes import POLL_S, run_in_processes
from harness.browser import REPO_ROOT


def halfway(value: int, progress) -> int:
    """A call that reports half its work, then takes a while (run by the workers)."""
    progress(0.5, "half")
    time.sleep(2.5 * POLL_S)
    return value * 2


def test_calls_run_in_fresh_processes_with_one_thread_and_return_in_order():
    assert run_in_processes(pow, [(2, 10), (3, 4), (5, 2)], 2) == [1024, 81, 25]
    assert run_in_processes(torch.get_num_threads, [(), ()], 2) == [1, 1]
    assert run_in_processes(torch.get_num_threads, [()], 1, threads=2) == [2]
    assert run_in_processes(pow, [], 2) == []


def test_the_workers_progress_reaches_the_caller_as_one_bar():
    seen = []
    results = run_in_processes(
        halfway, [(1,), (2,), (3,)], 2, titles="abc", progress=lambda f, m: seen.append((f, m))
    )
    assert results == [2, 4, 6]
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    assert any(m in ("a: half", "b: half") for _, m in seen)  # before any call ended
    assert {m for _, m in seen if m.endswith("done")} == {"a done", "b done", "c done"}
    assert all(0 < f < 1 for f, m in seen if m.endswith("half"))


def at_once(value: int, progress) -> int:
    """A call that ends at once (run by the workers)."""
    return value


def test_every_call_that_ends_is_reported_even_when_several_end_within_one_poll():
    seen = []
    run_in_processes(
        at_once,
        [(i,) for i in range(6)],
        2,
        titles="abcdef",
        progress=lambda f, m: seen.append((f, m)),
    )
    assert sorted(m for _, m in seen) == [f"{t} done" for t in "abcdef"]
    fractions = [f for f, _ in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0


def test_a_failing_call_raises_its_error_and_bad_counts_are_refused():
    with pytest.raises(ValueError, match="invalid literal"):
        run_in_processes(int, [("12",), ("twelve",)], 1)
    with pytest.raises(ValueError, match="at least one worker"):
        run_in_processes(pow, [(1, 1)], 0)


PAGE_FAULTS = """
import ctypes, resource, statistics, sys, torch
from core.processes import M_MMAP_THRESHOLD, keep_freed_memory
if sys.argv[1] == "keep":
    kept = keep_freed_memory()
else:  # glibc's default threshold, fixed: every block of 128 KiB or more goes back when freed
    kept = bool(ctypes.CDLL(None).mallopt(M_MMAP_THRESHOLD, 128 << 10))
torch.set_num_threads(1)
conv = torch.nn.Sequential(torch.nn.Conv2d(1, 32, 4), torch.nn.ReLU(), torch.nn.Conv2d(32, 32, 4))
x = torch.randn(128, 1, 28, 28)
def step():
    conv(x).square().mean().backward()  # as a training step of Gal et al.'s CNN
for _ in range(5):  # the heap grows to what a step needs
    step()
faults = []
for _ in range(15):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    step()
    faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
print(kept, statistics.median(faults))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc only")
def test_kept_freed_memory_spares_the_page_faults_of_each_new_block():
    def faults(mode: str) -> tuple[str, float]:
        """Whether the settings took, and the median page faults of a step after warm-up."""
        out = subprocess.run(
            [sys.executable, "-c", PAGE_FAULTS, mode],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout.split()
        return out[0], float(out[1])

    kept, with_keep = faults("keep")
    if kept != "True":
        pytest.skip("not glibc")
    _, without = faults("return")
    block = 128 * 32 * 25 * 25 * 4 // 4096  # pages of the first convolution's output
    # The median step: with every freed block returned, each new one is faulted in again; kept,
    # the heap is reused (measured: 0 pages). glibc's own default moves its threshold with the
    # blocks it sees, between both (measured: a median of 0 to 4,400 pages), so it is no baseline.
    assert without > 10 * block  # measured: 39,942 pages
    assert with_keep < block / 10
