"""The Active learning page with short live runs, for its real-browser test
(``streamlit run tests/support/active_app.py``): a few rounds of a few seconds, so the test
watches a whole run without burning the machine's cores for minutes."""

import runpy
from pathlib import Path

import torch

from core.active import loop

ROOT = Path(__file__).resolve().parents[2]

SHORT = {"budget": 60, "candidates": 300, "train_steps": 40, "test_size": 500, "n_samples": 8}
"""Five rounds from 20 to 60 labels."""

if not hasattr(loop, "page_live_config"):  # once per server: each script run runs this file
    loop.page_live_config = loop.live_config
    loop.live_config = lambda kind, **fields: loop.page_live_config(kind, **{**fields, **SHORT})
torch.set_num_threads(1)  # the app's thread policy, which app/main.py applies to each run
runpy.run_path(str(ROOT / "pages" / "active.py"))
