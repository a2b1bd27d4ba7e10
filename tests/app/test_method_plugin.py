"""A method is one package: a dummy method's folder dropped into ``core/methods/`` appears, with
no other edit, on the Train page, among ``python -m core train``'s flags, in active learning's
methods, in the regression playground (which fits it, its setting a control) and among the
bandit's agents (a Thompson agent that runs on the wheel); once the folder is gone it is gone
from all of them.

Each look is a fresh Python process (the registry is read once per process), run from this
checkout with the temporary folder in place, then without it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
KIND = "plugin_probe"
FOLDER = ROOT / "core" / "methods" / KIND
LABEL = "Logit noise (probe)"
TITLE = "Probe method"
AGENT = "Probe Thompson"

PACKAGE = f'''
"""A test's stand-in method: the backbone MLP with Gaussian noise on its logits."""

import torch

from core.engine.mlp import MLP
from core.methods.base import BanditRole, Method, Setting


class NoisyMLP(MLP):
    """The plain network whose every pass adds N(0, noise²) to the logits."""

    stochastic = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = super().forward(x)
        return out + self.config.params["noise"] * torch.randn_like(out)


METHOD = Method(
    kind="{KIND}",
    title="{TITLE}",
    summary="A stand-in that a test drops in and removes.",
    model_class=NoisyMLP,
    settings=(Setting("noise", "{LABEL}", "Noise of each pass.", 0.1, low=0.0, high=1.0),),
    bandit=BanditRole(agent="{AGENT}", draws=True),
)
'''

LOOK = textwrap.dedent(
    f"""
    import json, subprocess, sys
    from streamlit.testing.v1 import AppTest

    from core.active.loop import MODEL_KINDS
    from core.bandits.agents import AGENTS
    from core.bandits.runner import BanditRun, RunConfig
    from core.bandits.settings import ModelSettings
    from core.methods import METHODS, build_model
    from core.methods import ModelConfig
    from core.regression.variants import VARIANTS

    at = AppTest.from_file("pages/train.py", default_timeout=120)
    at.session_state["train_kind"] = "{KIND}" if "{KIND}" in METHODS else "mlp"
    at.run()
    picker = at.selectbox(key="train_kind")
    labels = [w.label for w in at.slider] + [w.label for w in at.radio]
    labels += [w.label for w in at.select_slider] + [w.label for w in at.number_input]
    flags = subprocess.run(
        [sys.executable, "-m", "core", "train", "--help"], capture_output=True, text=True
    ).stdout
    reg = AppTest.from_file("pages/regression.py", default_timeout=300)
    if "{KIND}" in VARIANTS:  # a 1-20-1 network, 100 full-batch steps on Blundell's curve
        small = {{"reg_methods": ["{KIND}"], "reg_width": 20, "reg_epochs": 100}}
        for key, value in (small | {{"reg_n_predict": 20}}).items():
            reg.session_state[key] = value
    reg.run()
    reg_labels = [w.label for w in reg.slider] + [w.label for w in reg.select_slider]
    reg_labels += [w.label for w in reg.number_input] + [w.label for w in reg.radio]
    numbers = reg.dataframe[0].value if reg.dataframe else None
    bandit_help = subprocess.run(
        [sys.executable, "-m", "core", "bandit", "--help"], capture_output=True, text=True
    ).stdout
    passes = bandit = None
    if "{KIND}" in METHODS:
        run = BanditRun(RunConfig(
            env="wheel", agents=("{KIND}", "greedy"), steps=30, seeds=2,
            model=ModelSettings(hidden=(8,)),
        ))
        run.advance()
        result = run.result(with_snapshot=False)
        bandit = {{
            "agent": result["agents"]["{KIND}"],
            "params": run.config.model.params["{KIND}"],
            "stored": run.config.model.to_dict(),
        }}
        model = build_model(ModelConfig(kind="{KIND}", hidden=(8,)), seed=0).eval()
        passes = model.sample_logits(__import__("torch").rand(2, 784), 3).shape[0]
    print(json.dumps({{
        "registry": list(METHODS),
        "page_options": list(picker.options),
        "page_labels": labels,
        "page_errors": [str(e) for e in at.exception],
        "cli": flags,
        "active": list(MODEL_KINDS),
        "passes": passes,
        "regression": list(VARIANTS),
        "reg_options": list(reg.multiselect(key="reg_methods").options),
        "reg_labels": reg_labels,
        "reg_rows": [] if numbers is None else list(numbers["method"]),
        "reg_rmse": [] if numbers is None else list(numbers["RMSE in range"]),
        "reg_errors": [str(e) for e in reg.exception],
        "agents": {{name: spec.title for name, spec in AGENTS.items()}},
        "bandit_help": "".join(bandit_help.split()),
        "bandit": bandit,
    }}))
    """
)


def look(cache: Path) -> dict:
    """What a fresh process of this checkout sees (fits cached in ``cache``)."""
    result = subprocess.run(
        [sys.executable, "-c", LOOK],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
        env={**__import__("os").environ, "PYTHONPATH": str(ROOT), "BNN_CACHE_DIR": str(cache)},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_a_dropped_in_method_appears_everywhere_and_leaves_with_its_folder(tmp_path):
    assert not FOLDER.exists()
    try:
        FOLDER.mkdir()
        (FOLDER / "__init__.py").write_text(PACKAGE)
        seen = look(tmp_path)
    finally:
        shutil.rmtree(FOLDER, ignore_errors=True)
    assert seen["page_errors"] == []
    assert KIND in seen["registry"] and seen["registry"][-1] == KIND  # no order: listed last
    assert TITLE in seen["page_options"]  # a choice of the Train page's method picker
    assert LABEL in seen["page_labels"]  # its setting is a control on the Train page
    assert KIND in seen["cli"] and "--noise" in seen["cli"]
    assert KIND in seen["active"]  # stochastic and trains its own posterior
    assert seen["passes"] == 3
    # the regression playground lists it before the HMC reference and fits it
    assert seen["reg_errors"] == []
    assert seen["regression"][-2:] == [KIND, "hmc"] and TITLE in seen["reg_options"]
    assert LABEL in seen["reg_labels"]  # its setting is a control there too
    assert seen["reg_rows"] == [TITLE] and 0 < seen["reg_rmse"][0] < 10
    assert seen["agents"][KIND] == AGENT  # a Thompson agent of the bandits
    assert KIND in seen["bandit_help"]  # offered by ``python -m core bandit --agents``
    agent = seen["bandit"]["agent"]
    assert agent["title"] == AGENT and len(agent["final"]) == 2  # it ran 30 wheel steps
    assert 0 < agent["mean"] < 30 * 50  # regret of a real run: no worse than always wrong
    assert seen["bandit"]["params"] == {"noise": 0.1}  # its own settings, at their defaults
    assert "params" not in seen["bandit"]["stored"]  # stored runs' settings are unchanged

    gone = look(tmp_path)
    assert KIND not in gone["registry"] and TITLE not in gone["page_options"]
    assert LABEL not in gone["page_labels"]
    assert KIND not in gone["cli"] and "--noise" not in gone["cli"]
    assert KIND not in gone["active"]
    assert gone["reg_errors"] == []
    assert KIND not in gone["regression"] and TITLE not in gone["reg_options"]
    assert LABEL not in gone["reg_labels"] and TITLE not in gone["reg_rows"]
    assert KIND not in gone["agents"] and KIND not in gone["bandit_help"]
    assert gone["bandit"] is None
