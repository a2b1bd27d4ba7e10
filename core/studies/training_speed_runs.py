"""The stored runs of the timing study: file names, saving, loading and the device table.

Every machine's runs, the reference report's and the peer benchmark's live among the lab's
stored results (:data:`RUNS`, ``checkpoints/results/training_speed/``), one JSON file a run.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from core.atomic import atomic_write_text
from core.roles import Actor, require_teacher
from core.storage.results import StoredResults
from core.studies.training_speed import FLOOR_IMPL

REFERENCE_FILE = "reference-report-seed-a100.json"
RUNS = StoredResults("training_speed")
"""The saved runs of every machine, the reference report's and the peer benchmark's."""


def result_filename(result: dict) -> str:
    """Name the file a result is saved to.

    Args:
        result: A result with ``device`` and ``date``.

    Returns:
        ``<device-slug>-[<task>-][<prior>-]<YYYY-MM-DD>.json``, e.g.
        ``cpu-2-threads-2026-11-21.json``, ``cpu-1-threads-regression-2026-11-23.json`` or
        ``cuda-nvidia-h100-80gb-hbm3-mixture-2026-11-26.json``.
    """
    slug = re.sub(r"[^a-z0-9]+", "-", result["device"].lower()).strip("-") or "device"
    if result.get("device_type") == "cuda":
        slug = f"cuda-{slug}"
    task = "" if result.get("task", "mnist") == "mnist" else f"{result['task']}-"
    prior = (result.get("config") or {}).get("prior", "gaussian")
    task += "" if prior == "gaussian" else f"{prior}-"
    return f"{slug}-{task}{result['date'][:10]}.json"


def save_result(result: dict, folder: Path | None = None) -> Path:
    """Write a result atomically to ``folder/<device-slug>-<date>.json``.

    Args:
        result: A result of :func:`run_benchmark`.
        folder: Where to save; None for :data:`RUNS`' folder (created if missing).

    Returns:
        The path written.
    """
    folder = folder or RUNS.folder
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / result_filename(result)
    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
    return path


def save_shared_result(actor: Actor, result: dict, folder: Path | None = None) -> Path:
    """Save a run made on the Training speed page among the lab's results, for the teacher.

    Unlike :func:`save_result` (the command line's), it never replaces a saved run: a second
    run of the same machine and day is saved as ``…-2.json``, ``…-3.json``.

    Args:
        actor: Who asks (:func:`core.roles.require_teacher`).
        result: A result of :func:`run_benchmark`.
        folder: Where to save; None for :data:`RUNS`' folder.

    Returns:
        The path written.

    Raises:
        PermissionError: If ``actor`` is not the teacher (nothing is written).
    """
    require_teacher(actor, "save_results")
    folder = folder or RUNS.folder
    folder.mkdir(parents=True, exist_ok=True)
    stem = result_filename(result).removesuffix(".json")
    path, n = folder / f"{stem}.json", 1
    while path.exists():
        n += 1
        path = folder / f"{stem}-{n}.json"
    atomic_write_text(path, json.dumps(result, indent=1) + "\n")
    return path


def load_results(folder: Path | None = None) -> dict[str, dict]:
    """Load the saved results; unreadable files are skipped.

    Args:
        folder: Where to look; None for :data:`RUNS`' folder.

    Returns:
        File name → result, newest date first.
    """
    folder = folder or RUNS.folder
    out = {}
    for path in sorted(folder.glob("*.json")):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(result, dict) and "fits" in result:
            out[path.name] = result
    return dict(sorted(out.items(), key=lambda kv: kv[1].get("date") or "", reverse=True))


DEVICE_COLUMNS = {
    "plain MLP": (FLOOR_IMPL, None),
    "BBB fused, S = 1": ("fused", 1),
    "BBB vmap + LRT, S = 1": ("vmap_lrt", 1),
    "BBB vmap + LRT, S = 10": ("vmap_lrt", 10),
    "BBB sequential, S = 10": ("sequential", 10),
}
"""Columns of :func:`device_table`: title → (implementation, S)."""


def device_table(results: dict[str, dict], prior: str = "gaussian") -> list[dict]:
    """Seconds per MNIST epoch on every device measured: the newest run of each.

    A CUDA run gives two rows, its steps replayed from CUDA graphs and eager.

    Args:
        results: Saved results by file name, newest first (:func:`load_results`).
        prior: The prior of the runs to compare (a key of :data:`PRIORS`).

    Returns:
        Rows ``{"device", "steps", <column title>: seconds or None, ...}`` over
        :data:`DEVICE_COLUMNS`, CPU runs first.
    """
    newest: dict[str, dict] = {}
    for result in results.values():
        config = result.get("config") or {}
        if result.get("reference") or result.get("task", "mnist") != "mnist":
            continue
        if config.get("prior", "gaussian") == prior and result.get("data") == "mnist":
            newest.setdefault(result["device"], result)
    rows = []
    for device, result in sorted(newest.items(), key=lambda kv: kv[1].get("device_type") == "cuda"):
        parts = [(result, "CUDA graphs" if result.get("cuda_graphs") else "eager")]
        if result.get("eager"):
            parts.append((result["eager"], "eager"))
        for part, steps in parts:
            epoch = {(r["impl"], r["samples"]): r["epoch_seconds"] for r in part["timings"]}
            if part.get("mlp"):
                epoch[(FLOOR_IMPL, None)] = part["mlp"]["epoch_seconds"]
            row = {"device": device, "steps": steps}
            rows.append(row | {title: epoch.get(key) for title, key in DEVICE_COLUMNS.items()})
    return rows


def gpu_trained_models() -> list[dict]:
    """The shipped models trained on a GPU, beside the published error of their family.

    Returns:
        Rows ``{"model", "device", "epochs", "training (s)", "test error (%)",
        "published (%)"}`` (the published error of Blundell et al. 2015 and Gal 2016 where
        :data:`core.studies.comparison.LITERATURE_ERROR` has one, else None), from the
        checkpoints' metadata.
    """
    from core.catalogue import list_checkpoints
    from core.studies.comparison import LITERATURE_ERROR

    rows = []
    for info in list_checkpoints():
        meta = info.metadata
        if not info.available or str(meta.get("device", "cpu")).startswith("cpu"):
            continue
        rows.append(
            {
                "model": info.spec.title,
                "device": meta["device"],
                "epochs": meta.get("epochs"),
                "training (s)": round(meta.get("train_seconds", float("nan"))),
                "test error (%)": round(100 * meta["test_error"], 2),
                "published (%)": LITERATURE_ERROR.get(info.spec.name),
            }
        )
    return rows
