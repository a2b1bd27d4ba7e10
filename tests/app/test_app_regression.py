"""Headless tests of the regression playground page, with small networks and short training
(the page's own defaults are measured by the CLI and the benchmarks, not here)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from core.regression import study
from core.regression.data import make_data
from core.regression.settings import FitSettings
from core.regression.variants import VARIANTS
from harness.browser import (
    REPO_ROOT,
    choose,
    chromium_page,
    require_chromium,
    serve_app,
    wait_for_script,
    wait_for_setting,
    wait_for_text,
)

PAGE = "../../pages/regression.py"
SMALL = {  # session state: a 1-20-1 network, 100 steps, short HMC
    "reg_width": 20,
    "reg_epochs": 100,
    "reg_n_predict": 20,
    "reg_hmc_samples": 50,
    "reg_hmc_warmup": 50,
    "reg_hmc_depth": 3,
}
SMALL_SETTINGS = FitSettings(
    hidden=(20,), epochs=100, n_predict=20, hmc_samples=50, hmc_warmup=50, hmc_tree_depth=3
)
DEFAULT_SHOWN = ["bbb", "dropout", "ensemble"]  # the default methods but HMC (not run yet)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """An empty fit cache and no shipped HMC references."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(study, "REFERENCE_DIR", tmp_path / "shipped")
    return tmp_path / "cache" / study.STUDY


def run_page(**state) -> AppTest:
    at = AppTest.from_file(PAGE, default_timeout=300)
    for key, value in {**SMALL, **state}.items():
        at.session_state[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def cached_files(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir()) if cache.is_dir() else []


def charts(at: AppTest) -> int:
    return len(at.get("plotly_chart"))


def table(at: AppTest):
    """The Numbers table, by method."""
    return at.dataframe[0].value.set_index("method")


def table_rows(at: AppTest) -> list[str]:
    return list(table(at).index)


def test_default_page_trains_each_method_and_offers_to_run_hmc(cache):
    at = run_page()
    assert at.title[0].value == "Regression playground"
    assert at.multiselect(key="reg_methods").value == ["bbb", "dropout", "ensemble", "hmc"]
    assert "not computed yet" in at.info[0].value
    assert at.button(key="reg_hmc_run").label == "Run HMC now"
    assert table_rows(at) == [VARIANTS[m].title for m in DEFAULT_SHOWN]
    assert charts(at) == 2 * len(DEFAULT_SHOWN) + 2  # fit + zoomed out each, std, loss
    assert len(cached_files(cache)) == len(DEFAULT_SHOWN)
    captions = " ".join(c.value for c in at.caption)
    assert all(VARIANTS[m].notice in captions for m in DEFAULT_SHOWN)
    numbers = table(at)
    assert (numbers["out / in"] > 0).all() and numbers["90 % coverage"].between(0, 1).all()


def test_hmc_runs_on_request_then_opens_from_the_cache(cache):
    at = run_page()
    at.button(key="reg_hmc_run").click().run()
    assert not at.exception, at.exception
    assert table_rows(at)[-1] == VARIANTS["hmc"].title
    assert charts(at) == 2 * 4 + 2
    at = run_page()  # a new session: everything from the disk cache
    assert not at.info
    assert "from the disk cache" in " ".join(c.value for c in at.caption)
    assert at.button(key="reg_hmc_run").label == "Re-run HMC live"
    files = cached_files(cache)
    at.button(key="reg_hmc_run").click().run()  # recompute live, same entry
    assert not at.exception, at.exception
    assert cached_files(cache) == files
    captions = " ".join(c.value for c in at.caption)  # about the fit shown, not the one before
    assert "HMC reference (just computed)" in captions and "from the disk cache" not in captions


def test_a_shipped_reference_opens_without_computing(cache):
    data = make_data("blundell")
    study.fit_method(data, "hmc", SMALL_SETTINGS)
    study.ship_fit(data, "hmc", SMALL_SETTINGS)
    for file in cache.iterdir():
        file.unlink()
    at = run_page(reg_methods=["hmc"])
    assert "shipped with the lab" in " ".join(c.value for c in at.caption)
    assert table_rows(at) == [VARIANTS["hmc"].title]
    assert cached_files(cache) == []


def test_switching_methods_and_layout_redraws_from_the_cache(cache):
    at = run_page(reg_methods=["mlp", "ensemble"])
    assert table_rows(at) == [VARIANTS["mlp"].title, VARIANTS["ensemble"].title]
    files = cached_files(cache)
    at.radio(key="reg_layout").set_value("Overlaid").run()
    assert not at.exception, at.exception
    assert charts(at) == 2 + 2  # overlaid, zoomed out, std, loss
    assert cached_files(cache) == files
    at.multiselect(key="reg_methods").set_value(["ensemble"]).run()
    assert table_rows(at) == [VARIANTS["ensemble"].title] and cached_files(cache) == files


def test_a_hyperparameter_change_retrains_only_the_methods_it_concerns(cache):
    at = run_page()
    files = cached_files(cache)
    before = table(at).loc[VARIANTS["dropout"].title, "std out"]
    at.select_slider(key="reg_dropout_dropout").set_value(0.3).run()
    assert not at.exception, at.exception
    after = cached_files(cache)
    assert len(after) == len(files) + 1
    assert [f for f in after if f not in files][0].startswith("blundell-dropout-")
    assert table(at).loc[VARIANTS["dropout"].title, "std out"] != before


def test_each_chosen_method_s_own_settings_are_controls_from_its_method(cache):
    """The controls of a method come from its settings (keys ``reg_KIND_NAME``), for the
    chosen methods only, starting at the playground's defaults; a variant's fixed parameters
    (BBB's implementation, the mixture prior) are no controls."""
    at = run_page(reg_methods=["bbb_mixture", "sgld"])
    controls = [*at.slider, *at.select_slider, *at.number_input, *at.radio, *at.toggle]
    keys = {w.key for w in controls}
    assert {"reg_bbb_beta", "reg_bbb_init_sigma", "reg_bbb_n_samples"} <= keys
    assert {"reg_sgld_temperature", "reg_sgld_members"} <= keys
    assert not {"reg_bbb_impl", "reg_bbb_prior", "reg_sgld_burn_in", "reg_dropout_dropout"} & keys
    assert at.select_slider(key="reg_bbb_init_sigma").value == 1e-2  # the playground's default
    assert table_rows(at) == [VARIANTS[m].title for m in ("bbb_mixture", "sgld")]
    before = cached_files(cache)
    at.select_slider(key="reg_bbb_beta").set_value(0.1).run()
    assert not at.exception, at.exception
    new = [f for f in cached_files(cache) if f not in before]
    assert len(new) == 1 and new[0].startswith("blundell-bbb_mixture-")


@pytest.mark.parametrize("preset", ["gap", "heteroscedastic"])
def test_other_presets_render_with_their_own_sliders(cache, preset):
    at = run_page(reg_methods=["mlp"], reg_noise_model="heteroscedastic")
    at.selectbox(key="reg_data").set_value(preset).run()
    assert not at.exception, at.exception
    assert at.slider(key=f"reg_noise_{preset}").value == make_data(preset).key["noise"]
    assert any(preset in f for f in cached_files(cache))


def canvas_state(objects: list[dict]) -> dict:
    """What the canvas component sends: the Fabric.js drawing."""
    return {"drawing": {"raw": {"objects": objects}, "data": None}, "backgroundFit": None}


def test_drawn_points_become_the_training_set(cache):
    at = run_page(reg_data="user", reg_methods=["mlp", "ensemble"])
    assert "at least two points" in at.info[0].value
    assert not at.dataframe
    points = [
        {
            "type": "Circle",
            "left": 60 * i,
            "top": 150 - 20 * i,
            "radius": 4,
            "originX": "center",
            "originY": "center",
        }
        for i in range(1, 8)
    ]
    at.session_state["reg_canvas"] = canvas_state(points)
    at.run()
    assert not at.exception, at.exception
    assert "7 points so far" in " ".join(c.value for c in at.caption)
    assert table_rows(at) == [VARIANTS["mlp"].title, VARIANTS["ensemble"].title]
    assert "RMSE (train points)" in at.dataframe[0].value.columns
    assert any(f.startswith("user-") for f in cached_files(cache))


def test_points_on_one_vertical_line_are_refused_with_a_message(cache):
    at = run_page(reg_data="user")
    same_x = [{"type": "Circle", "left": 300, "top": t, "radius": 4} for t in (50, 100, 200)]
    at.session_state["reg_canvas"] = canvas_state(same_x)
    at.run()
    assert not at.exception, at.exception
    assert at.error[0].value == "These points cannot be used."
    assert "different x positions" in at.text[0].value
    assert cached_files(cache) == []


@pytest.mark.browser
@pytest.mark.slow
@require_chromium()
def test_a_curve_drawn_in_a_real_browser_gets_a_fitted_band(tmp_path):
    """Chromium: pick "Draw your own points", draw a freehand curve on the canvas, and see
    the method's figure with its filled band and the numbers on the drawn points (MC dropout
    alone, from the link: the drawn points are trained on live, and one method is enough)."""
    env = {"PYTHONPATH": str(REPO_ROOT), "BNN_CACHE_DIR": str(tmp_path / "cache")}
    shown = ["dropout"]
    with serve_app("pages/regression.py", env=env) as url, chromium_page() as page:
        page.goto(f"{url}?reg_methods={','.join(shown)}")
        page.wait_for_selector("text=Regression playground")
        wait_for_script(page, 600_000)  # the preset's fit ships with the lab
        choose(page, page.locator("[data-testid='stSelectbox']").first, "Draw your own points")
        page.wait_for_selector("canvas.upper-canvas")
        wait_for_script(page)
        page.get_by_text("a freehand curve").click()
        # Drawing before the click's rerun gave the canvas its freehand mode would draw points.
        wait_for_setting(page, "reg_draw_mode", "freedraw")
        box = page.locator("canvas.upper-canvas").bounding_box()
        page.mouse.move(box["x"] + 0.1 * box["width"], box["y"] + 0.7 * box["height"])
        page.mouse.down()
        for k in range(1, 41):  # a rising wave from x = 0.1 to x = 0.6
            fx = 0.1 + 0.5 * k / 40
            fy = 0.7 - 0.4 * k / 40 + 0.1 * math.sin(12 * fx)
            page.mouse.move(box["x"] + fx * box["width"], box["y"] + fy * box["height"], steps=3)
        page.mouse.up()
        wait_for_text(page, "Numbers")
        wait_for_script(page)
        text = page.inner_text("[data-testid='stMain']")
        assert "points so far" in text
        for method in shown:
            assert VARIANTS[method].title in text
        assert "Your points have no held-out set" in text  # numbers on the drawn points
        fills = page.locator("[data-testid='stPlotlyChart'] .js-fill").count()
        assert fills >= 2 * len(shown)  # two bands per method figure at least
