"""The server's warm-up (:mod:`app.warmup`): it finds what the pages import and leaves the
process with the modules, the checkpoint listing, the default models and the test set in memory
(the browser tests serve the whole app through it, ``python -m app.serve``), and starts the
server's training workers, which train the jobs queued before the start without a visit."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from app.warmup import import_all, imported_modules
from core.jobs import JobStatus, JobStore, make_request
from harness.browser import REPO_ROOT, serve_app_process


def test_imported_modules_are_the_absolute_imports_once_in_order(tmp_path):
    page = tmp_path / "page.py"
    page.write_text(
        "import json, os\n"
        "from app import ui\n"
        "from . import sibling\n"
        "import os\n"
        "def later():\n"
        "    import pandas\n"
    )
    assert imported_modules([page]) == ["json", "os", "app", "app.ui", "pandas"]


def test_a_name_imported_from_a_module_is_not_a_failure_but_a_missing_module_is():
    failed = import_all(["os", "os.getcwd", "no_such_module_here", "json"])
    assert failed == ["no_such_module_here"]
    assert "json" in sys.modules


CHECK = """
import json, sys
from app.main import PAGES, REPO_ROOT
from app.warmup import warm_up
before = {
    m: m in sys.modules
    for m in ("pandas", "plotly.graph_objects", "core.studies.ood", "torch._dynamo")
}
seconds = warm_up([REPO_ROOT / "app" / "main.py", *(p.path for p in PAGES)])
from core.storage import checkpoints
from core.engine import native
from app import ui
from core import catalogue
start_hits = checkpoints._shared_model.cache_info().hits
available = [i.spec.name for i in ui.all_checkpoints() if i.available]
ui.load_model(catalogue.default_models(available)[0])
print(json.dumps({
    "before": before,
    "after": {m: m in sys.modules for m in before},
    "steps": sorted(seconds),
    "health": checkpoints._health.cache_info().currsize,
    "kernels": native.build._library is not None or native.build._reason is not None,
    "model_hit": checkpoints._shared_model.cache_info().hits - start_hits,
}))
"""


def test_warm_up_leaves_modules_checkpoints_and_models_in_memory():
    out = subprocess.run(
        [sys.executable, "-c", CHECK],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    ).stdout
    found = json.loads(out.strip().splitlines()[-1])
    assert not any(found["before"].values())
    assert all(found["after"].values())
    assert found["steps"] == ["imports", "kernels, checkpoints, models, test set", "training queue"]
    assert found["health"] > 0  # every shipped checkpoint's health, memoised
    assert found["kernels"]  # built or found unavailable once, not at a page's first use
    assert found["model_hit"] == 1  # the default model a page asks for is already loaded


def test_a_started_server_trains_the_jobs_queued_before_it_without_a_visit(tmp_path, mnist_small):
    """A job queued before the server starts (e.g. before a restart) trains at once: the warm-up
    starts the server's workers, no page is opened."""
    db = f"sqlite:///{tmp_path / 'lab.sqlite'}"
    models = tmp_path / "models"
    store = JobStore(db)
    job_id = store.add(make_request("waited", "mlp", epochs=1, n_train=1000, n_test=200))
    env = {"BNN_CLASS_DB": db, "BNN_MODELS_DIR": str(models)}
    with serve_app_process(env=env, timeout=180) as (_, server):
        deadline = time.monotonic() + 120
        while store.get(job_id).status.active and time.monotonic() < deadline:
            time.sleep(0.5)
        job = store.get(job_id)
    assert job.status is JobStatus.DONE, job.error
    assert job.worker.split(":")[1] == str(server.pid) and (models / "waited.pt").is_file()
