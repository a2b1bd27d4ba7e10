"""The lab's settings from the environment: every ``BNN_*`` variable is declared and read here.

Each setting is read when it is asked for (never cached), so a test or a script may change the
environment between calls. The rest of the package asks through :func:`text`,
:func:`positive_int` or :func:`enabled` with the setting's name; no other module reads
``os.environ`` for a ``BNN_*`` name (a test checks it).
"""

from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Setting:
    """One environment variable of the lab.

    Attributes:
        name: The variable, ``BNN_...``.
        default: What an unset (or blank) variable means, in words.
        help: One line on what it changes.
        job: A training job reads it: it is handed to the job's Ray worker (:func:`job_settings`).
            Only settings without secrets may be marked; the teacher's key and a database URL
            that may hold a password never are.
    """

    name: str
    default: str
    help: str
    job: bool = False


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in (
        Setting("BNN_DATA_DIR", "<repo>/data", "the writable data folder (datasets)", job=True),
        Setting(
            "BNN_DATA_PATH",
            "none",
            "read-only dataset folders searched after it (os.pathsep)",
            job=True,
        ),
        Setting("BNN_CACHE_DIR", "<repo>/.cache", "the on-disk evaluation cache", job=True),
        Setting(
            "BNN_MODELS_DIR",
            "<data folder>/models",
            "where user-trained models are saved",
            job=True,
        ),
        Setting("BNN_CHECKPOINT_DIR", "<repo>/checkpoints", "the shipped checkpoints", job=True),
        Setting(
            "BNN_RESULTS_DIR",
            "<checkpoint folder>/results",
            "the stored results the pages read: long runs, saved timings",
        ),
        Setting(
            "BNN_CLASS_DB",
            "SQLite in the data folder",
            "the lab's database URL: class drawings and training jobs (sqlite or postgresql)",
        ),
        Setting(
            "BNN_CLASS_DB_FILE",
            "none (BNN_CLASS_DB)",
            "a file (mode 0600) holding the database URL, read instead of BNN_CLASS_DB",
            job=True,
        ),
        Setting("BNN_CLASS_LIMIT", "2000", "most drawings one class may hold"),
        Setting(
            "BNN_PUBLIC_URL",
            "the address the browser reached, else this machine's network address",
            "the lab's address for students (e.g. http://10.0.0.5:8501): the Class page's "
            "link and QR code",
        ),
        Setting("BNN_TORCH_THREADS", "1", "torch threads of the app's server process"),
        Setting("BNN_TRAIN_WORKERS", "1", "training jobs the Train page runs at once"),
        Setting("BNN_TRAIN_THREADS", "1", "torch threads of each training job"),
        Setting("BNN_NATIVE", "1", "0 turns the compiled CPU kernels off", job=True),
        Setting(
            "BNN_CUDA_GRAPHS", "1", "0 turns the CUDA graphs of the training step off", job=True
        ),
        Setting(
            "BNN_TEACHER_KEY",
            "made at first start, kept in the data folder",
            "the teacher's key (signs a browser in as the teacher; replicas share it this way)",
        ),
        Setting(
            "BNN_JOBS_PER_VISITOR",
            "3",
            "training jobs one student (browser, and network address) may have queued or running",
        ),
        Setting(
            "BNN_QUEUE_JOBS",
            "12",
            "students' training jobs the class's queue holds, queued or running (teacher's apart)",
        ),
        Setting("BNN_JOB_IMAGES", "1000000", "most images one job trains on (epochs × images)"),
        Setting(
            "BNN_TRUSTED_PROXY",
            "0",
            "1 behind a reverse proxy: a student's address is the last X-Forwarded-For hop",
        ),
        Setting(
            "BNN_RAY_ADDRESS",
            "none (jobs train in the server's threads)",
            "a Ray cluster that trains the jobs instead, e.g. auto or ray://host:10001",
        ),
        Setting("BNN_RAY_CPUS", "1", "CPUs each training job asks Ray for"),
        Setting("BNN_RAY_GPUS", "0", "GPUs each training job asks Ray for (1: GPU machines)"),
    )
}


def _declared(name: str) -> str:
    if name not in SETTINGS:
        raise KeyError(f"{name} is not a declared setting ({', '.join(SETTINGS)})")
    return name


def text(name: str) -> str:
    """Give a setting's value as written.

    Args:
        name: A key of :data:`SETTINGS`.

    Returns:
        The variable's value with surrounding spaces removed; "" when it is unset.

    Raises:
        KeyError: If ``name`` is not declared.
    """
    return os.environ.get(_declared(name), "").strip()


def positive_int(name: str, default: int) -> int:
    """Give a setting that counts something.

    Args:
        name: A key of :data:`SETTINGS`.
        default: The value when the variable is unset, blank or not a whole number ≥ 1.

    Returns:
        The whole number ≥ 1 it holds, or ``default``.

    Raises:
        KeyError: If ``name`` is not declared.
    """
    value = text(name)
    return int(value) if value.isdigit() and int(value) > 0 else default


def enabled(name: str) -> bool:
    """Give a switch that is on unless set to ``0``.

    Args:
        name: A key of :data:`SETTINGS`.

    Returns:
        False when the variable is ``0``; True otherwise (unset included).

    Raises:
        KeyError: If ``name`` is not declared.
    """
    return text(name) != "0"


def job_settings() -> dict[str, str]:
    """Give the settings a training job reads, to hand them to a job's Ray worker.

    Returns:
        Name → value as written, for the settings marked :attr:`Setting.job` that are set and
        not blank (never the teacher's key or ``BNN_CLASS_DB``).
    """
    return {name: os.environ[name] for name, s in SETTINGS.items() if s.job and text(name)}
