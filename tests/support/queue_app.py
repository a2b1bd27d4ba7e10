"""The Train page on a training queue whose jobs wait until cancelled, for the browser test of
the queue's limits (``streamlit run tests/support/queue_app.py``): jobs stay queued or running
for as long as the test needs, and no training burns the machine's cores."""

import runpy
from pathlib import Path

import streamlit as st

from core.jobs import JobQueue, set_training_queue
from tests.support.job_worker import forever

ROOT = Path(__file__).resolve().parents[2]


@st.cache_resource
def waiting_queue() -> JobQueue:
    """The server's one queue, installed once: its runner reports, then waits for a cancel."""
    queue = JobQueue(workers=1, threads=1, runner=forever)
    set_training_queue(queue)
    return queue.resume()


queue = waiting_queue()
page = runpy.run_path(str(ROOT / "pages" / "train.py"))
