"""docs/department.md followed as a department's administrator would, where a test machine can:
its steps in an order that works on a fresh node, only declared settings, and its database-URL
file and Ray commands run for real (Ray in a PID namespace of its own, so that the guide's
``ray stop`` ends only the head it started)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from core import settings
from core.storage.database_url import database_url
from harness.browser import REPO_ROOT, free_port
from harness.cluster import missing

GUIDE = REPO_ROOT / "docs" / "department.md"
VENV_BIN = Path(sys.executable).parent


def steps() -> dict[str, str]:
    """The guide's numbered steps: "1" → the commands of its bash block."""
    text = GUIDE.read_text()
    found = re.findall(r"\*\*(\d+)\. [^\n]*?(?:\n(?!```)[^\n]*)*\n```bash\n(.*?)```", text, re.S)
    return dict(found)


def commands(block: str) -> list[str]:
    """A block's commands: comments dropped, continued lines joined."""
    joined = re.sub(r"\\\n\s*", "", block)
    lines = (line.split(" #")[0].strip() for line in joined.splitlines())
    return [line for line in lines if line and not line.startswith("#")]


def test_the_steps_work_in_order_on_a_fresh_node():
    found = steps()
    assert list(found) == ["1", "2", "3", "4", "5"], list(found)
    ordered = [c for n in sorted(found) for c in commands(found[n])]
    setup = next(i for i, c in enumerate(ordered) if c.startswith("bash scripts/setup.sh"))
    uses = [i for i, c in enumerate(ordered) if ".venv/" in c]
    assert uses and min(uses) > setup, "a step uses .venv before step 1 creates it"
    for path in re.findall(r"(?:scripts|requirements)[\w./-]*\.(?:sh|txt)", GUIDE.read_text()):
        assert (REPO_ROOT / path).is_file(), path


def test_every_variable_the_guide_names_is_a_setting_of_the_lab():
    named = set(re.findall(r"\bBNN_[A-Z_]+\b", GUIDE.read_text()))
    assert named and not named - set(settings.SETTINGS), named - set(settings.SETTINGS)
    exported = {m for m in re.findall(r"export (BNN_[A-Z_]+)=", steps()["5"])}
    assert {"BNN_CLASS_DB_FILE", "BNN_MODELS_DIR", "BNN_CACHE_DIR"} <= exported
    assert "BNN_CLASS_DB=" not in steps()["5"]  # the URL with its password stays in a file


def test_the_database_url_file_is_the_service_users_alone(tmp_path, monkeypatch):
    url = "postgresql://lab:s3cret-pw@DBHOST:5432/bnn_lab"
    script = "\n".join(commands(steps()["3"]))
    run = subprocess.run(
        ["bash", "-c", script],
        input="s3cret-pw\n",
        env={"HOME": str(tmp_path), "PATH": os.environ["PATH"]},
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert run.returncode == 0, run.stderr
    secret = tmp_path / "bnn-db-url"
    assert stat.S_IMODE(secret.stat().st_mode) == 0o600
    assert secret.read_text().strip() == url
    monkeypatch.delenv("BNN_CLASS_DB", raising=False)
    monkeypatch.setenv("BNN_CLASS_DB_FILE", str(secret))
    assert database_url() == url


def _ray_script(home: Path, temp: Path) -> str:
    """Step 4's commands for one head on loopback (free ports, one CPU, this test's folders),
    a task from a driver with the token and one without it, then the guide's stop.

    The drivers connect to the head's own port, not through its Ray Client port: a client's
    server takes a port from a fixed range (23000 on), which the tests' shared head on the same
    machine may hold."""
    port, client = free_port(), free_port()
    head = [c for c in commands(steps()["4"]) if "--address=" not in c]  # no second machine
    *start, stop = head
    assert stop.endswith("ray stop"), head
    script = "\n".join(start)
    for old, new in (
        ("--node-ip-address=HEAD", "--node-ip-address=127.0.0.1"),
        ("--port=6379", f"--port={port}"),
        ("--ray-client-server-port=10001", f"--ray-client-server-port={client}"),
        ("--num-cpus=4", f"--num-cpus=1 --temp-dir={temp}"),
    ):
        assert old in script, old
        script = script.replace(old, new)
    task = (
        f"python -c \"import ray; ray.init(address='127.0.0.1:{port}'); "
        "print('{said}', ray.get(ray.remote(lambda: 6 * 7).remote()))\""
    )
    return "\n".join(
        [
            "set -e",
            script,
            task.format(said="ran"),
            f"HOME={home}/nobody timeout 90 {task.format(said='anonymous')} || echo refused",
            stop,
            "pgrep -x raylet >/dev/null && echo still-running || echo stopped",
        ]
    ).replace(".venv/bin/", f"{VENV_BIN}/")


@pytest.mark.slow
@pytest.mark.xdist_group("ray")
def test_the_guides_ray_head_needs_its_token_and_stops(tmp_path):
    if shutil.which("unshare") is None:
        missing("unshare (util-linux) is not installed")
    try:
        import ray  # noqa: F401
    except ImportError:
        missing("ray is not installed (pip install -r requirements-cluster.txt)")
    probe = subprocess.run(["unshare", "--pid", "--fork", "--mount-proc", "true"], timeout=30)
    if probe.returncode != 0:
        missing("this user may not make a PID namespace (unshare --pid)")
    home, temp = tmp_path / "home", Path("/tmp") / f"bnn-ray-{os.getpid()}-{free_port()}"
    home.mkdir()
    script = _ray_script(home, temp)
    env = {
        "HOME": str(home),
        "PATH": f"{VENV_BIN}:{os.environ['PATH']}",
        "RAY_USAGE_STATS_ENABLED": "0",
    }
    try:
        run = subprocess.run(
            ["unshare", "--pid", "--fork", "--mount-proc", "bash", "-c", script],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    out = run.stdout
    assert run.returncode == 0, run.stderr[-3000:]
    token = home / ".ray" / "auth_token"
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert "ran 42" in out, out  # the replica, with the token, runs a task
    assert "anonymous 42" not in out and "refused" in out, out  # a client without it does not
    assert out.rstrip().endswith("stopped"), out  # the guide's stop command stops the head
