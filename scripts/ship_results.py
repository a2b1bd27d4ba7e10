"""Compute the results of every page's default view and ship them in checkpoints/results/.

Each page of the lab is run once, headless (Streamlit's AppTest, the sidebar's default models
and each widget's default), on an empty cache and without the results shipped before; then
every link of the teacher's guide is prepared (``python -m core prepare``) and every number the
documents state is computed (``python -m core stated``), with the cold-posterior study that the
Calibration page reads but never computes (it trains SGLD at two temperatures: about 20 minutes
more) and the spread of every shipped sampler's samples; every result computed (OOD scores,
attack and pruning curves, calibration fits and tests, the guide's live bandit run, ...) is then
copied into ``core.storage.cache.SHIPPED_DIR``, replacing what was there. A fresh clone's first
visit reads them instead of computing (``tests/app/test_first_visit.py`` checks that it computes
nothing). The stored results named there (:data:`core.storage.results.STUDIES`: long runs and
saved timings, which no page computes) are left in place and read as they are.
Results are keyed by the checkpoints' content: after promoting a checkpoint, run this again.

    .venv/bin/python scripts/ship_results.py          # about 30 minutes on a 2-core laptop
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {"native"}  # compiled kernels: per machine, never shipped


def computed_folders(shipped: Path, stored: dict) -> list[Path]:
    """The folders of computed page results under ``shipped``: all but the stored studies'."""
    if not shipped.is_dir():
        return []
    return sorted(p for p in shipped.iterdir() if p.is_dir() and p.name not in stored)


def main() -> int:
    """Run every page on an empty cache and ship what it computed.

    Returns:
        The exit code: 0.

    Raises:
        RuntimeError: If a page raised (the shipped results are then left as they were).
    """
    cache = Path(tempfile.mkdtemp(prefix="bnn-ship-"))
    os.environ["BNN_CACHE_DIR"] = str(cache)
    from streamlit.testing.v1 import AppTest

    from app.main import PAGES
    from core.catalogue import REGISTRY
    from core.prepare import prepare, read_guide
    from core.stated.documents import DOCUMENTS, compare
    from core.storage.cache import SHIPPED_DIR
    from core.storage.results import STUDIES
    from core.studies.cold_posterior import cold_posterior_study, is_sampler, sample_spread

    aside = SHIPPED_DIR.with_name(SHIPPED_DIR.name + ".old")
    aside.mkdir()
    for folder in computed_folders(SHIPPED_DIR, STUDIES):
        folder.rename(aside / folder.name)
    try:
        for page in PAGES:
            start = time.perf_counter()
            at = AppTest.from_file(str(REPO_ROOT / "app" / "main.py"), default_timeout=3600)
            at.run()  # the home page, then the page as a visitor's click opens it
            at.switch_page(f"../pages/{page.file}").run()
            if at.exception:
                raise RuntimeError(f"{page.title}: {at.exception}")
            print(f"{page.title:22s} {time.perf_counter() - start:7.1f} s", flush=True)
        start = time.perf_counter()  # the teacher's guide's links, as core prepare computes them
        prepare(read_guide())
        for document in DOCUMENTS:  # and every number the documents state
            compare(document)
        cold_posterior_study()
        for name in (name for name, spec in REGISTRY.items() if is_sampler(spec)):
            sample_spread(name)
        print(f"{'guide and documents':22s} {time.perf_counter() - start:7.1f} s", flush=True)
        for study in sorted(p for p in cache.iterdir() if p.is_dir() and p.name not in SKIPPED):
            if study.name in STUDIES:
                raise RuntimeError(f"a cached study is named as stored results: {study.name}")
            target = SHIPPED_DIR / study.name
            target.mkdir(parents=True, exist_ok=True)
            for file in sorted(study.iterdir()):
                if file.is_file() and not file.name.startswith("."):
                    shutil.copy2(file, target / file.name)
    except BaseException:
        for folder in computed_folders(SHIPPED_DIR, STUDIES):
            shutil.rmtree(folder)
        for folder in aside.iterdir():
            folder.rename(SHIPPED_DIR / folder.name)
        aside.rmdir()
        raise
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    shutil.rmtree(aside, ignore_errors=True)
    shipped = computed_folders(SHIPPED_DIR, STUDIES)
    files = [f for folder in shipped for f in folder.rglob("*") if f.is_file()]
    size = sum(f.stat().st_size for f in files)
    print(f"shipped {len(files)} results, {size / 1e6:.1f} MB, in {SHIPPED_DIR}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
