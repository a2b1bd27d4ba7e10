"""Shareable views (app/share.py): every page's settings round-trip through the URL, a bad link
value falls back with a note, hidden controls, presenter mode, the link control."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from app import share
from tests.support.checkpoint_util import small_checkpoint_dirs, use_checkpoints

ROOT = Path(__file__).resolve().parents[2]
MAIN = str(ROOT / "app" / "main.py")
MODELS = ("bbb_mixture", "mlp", "dropout_mlp")
SMALL = {  # session state that keeps each page's computation tiny
    "sidebar_samples": 4,
    "ood_subset": 30,
    "ood_samples": 10,
    "adv_size": 200,
    "cal_shift_inputs": 100,
    "cal_shift_samples": 5,
    "reg_width": 20,  # a 1-20-1 network, 100 steps
    "reg_epochs": 100,
    "reg_n_predict": 20,
}


def page(name: str) -> str:
    return str(ROOT / "pages" / f"{name}.py")


# --- pure parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.1, "0.1"),
        (1e-3, "0.001"),
        (3, "3"),
        (True, "1"),
        (False, "0"),
        ("user:my-net", "user:my-net"),
        (["bbb_gaussian", "user:x"], "bbb_gaussian,user:x"),
        ([1, 2, 4], "1,2,4"),
        ([], ""),
        (None, ""),
    ],
)
def test_encode(value, text):
    assert share.encode(value) == text


def test_encoded_options_parse_back_to_themselves():
    options = [0.003, 0.01, 1.0, 3, "a,b", "mlp", True]
    for option in options:
        assert share.parse_choice(share.encode(option), options) == option
    chosen, unknown = share.parse_choices(share.encode(["a,b", 0.01, "mlp"]), options)
    assert chosen == ["a,b", 0.01, "mlp"] and unknown == []


def test_parse_choice_rejects_unknown_options_naming_the_valid_ones():
    with pytest.raises(share.LinkValueError, match="not one of mnist, fashion_mnist"):
        share.parse_choice("xyz", ["mnist", "fashion_mnist"])
    with pytest.raises(share.LinkValueError, match="no options"):
        share.parse_choice("x", [])
    with pytest.raises(share.LinkValueError):
        share.parse_choice("0.010", [0.01])  # the exact repr only


def test_parse_choices_keeps_known_items_once_and_reports_the_rest():
    chosen, unknown = share.parse_choices("mlp,nope,mlp,bbb", ["bbb", "mlp"])
    assert chosen == ["mlp", "bbb"] and unknown == ["nope"]
    assert share.parse_choices("", ["bbb"]) == ([], [])


@pytest.mark.parametrize(
    ("raw", "integer", "low", "high", "expected"),
    [("5", True, 0, 10, 5), ("5.0", True, 0, 10, 5), ("0.25", False, 0.0, 0.3, 0.25)],
)
def test_parse_number_accepts_in_range(raw, integer, low, high, expected):
    number = share.parse_number(raw, integer, low, high)
    assert number == expected and isinstance(number, int) == integer


@pytest.mark.parametrize(
    ("raw", "integer", "message"),
    [
        ("abc", True, "not a number"),
        ("nan", False, "finite"),
        ("inf", False, "finite"),
        ("2.5", True, "whole"),
        ("11", True, "outside the range 0…10"),
        ("-1", True, "outside"),
    ],
)
def test_parse_number_rejects(raw, integer, message):
    with pytest.raises(share.LinkValueError, match=message):
        share.parse_number(raw, integer, 0, 10)


def test_parse_bool_and_text():
    assert share.parse_bool("1") is True and share.parse_bool("false") is False
    with pytest.raises(share.LinkValueError):
        share.parse_bool("maybe")
    assert share.parse_text("<b>x</b>") == "<b>x</b>"
    with pytest.raises(share.LinkValueError, match="longer than 3"):
        share.parse_text("abcd", max_chars=3)


def test_outside_streamlit_there_is_no_presenter_mode():
    assert share.presenter() is False
    assert share.hidden_keys() == set()


# --- pages ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_dirs(tmp_path_factory) -> tuple[Path, Path]:
    """784-16-10 untrained checkpoints under the default models' names, and a cache folder."""
    return small_checkpoint_dirs(tmp_path_factory, MODELS, "share")


@pytest.fixture
def small_models(small_dirs, monkeypatch) -> None:
    use_checkpoints(monkeypatch, small_dirs)


def run(script: str, params: dict[str, str], **state) -> AppTest:
    at = AppTest.from_file(script, default_timeout=600)
    for key, value in {**SMALL, **state}.items():
        at.session_state[key] = value
    for key, value in params.items():
        at.query_params[key] = value
    at.run()
    assert not at.exception, at.exception
    return at


def notes(at: AppTest) -> str:
    assert any(share.NOTE_HEADING in w.value for w in at.warning)
    return " ".join(t.value for t in at.text)


# page, widget kind, key, a valid URL value and what it means, a value to set in the widget,
# an invalid URL value
ROUND_TRIPS = [
    ("ood", "number_input", "ood_seed", "7", 7, 11, "-3"),
    ("ood", "radio", "ood_task", "fashion_mnist", "fashion_mnist", "mnist", "cifar"),
    ("adversarial", "slider", "adv_eps", "0.2", 0.2, 0.15, "0.9"),
    ("adversarial", "radio", "adv_mode", "Transfer from the MLP", "Transfer from the MLP",
     "White-box", "grey-box"),
    ("calibration", "selectbox", "cal_score", "max_prob", "max_prob", "variation_ratio", "x"),
    ("calibration", "toggle", "cal_tempered", "1", True, False, "maybe"),
    ("draw", "slider", "draw_stroke", "25", 25, 30, "99"),
    ("pruning", "slider", "pruning_percent", "50", 50, 60, "150"),
    ("pruning", "checkbox", "pruning_log_density", "1", True, False, "2"),
    ("regression", "radio", "reg_layout", "Overlaid", "Overlaid", "Side by side", "3D"),
    ("train", "number_input", "train_epochs", "5", 5, 7, "1000"),
    ("train", "text_input", "train_name", "lecture-net", "lecture-net", "other", "x" * 500),
    ("timing", "multiselect", "timing_samples", "1,3", [1, 3], [2, 4], "x,y"),
    ("bandits", "number_input", "bandit_steps", "100", 100, 150, "7"),
    ("bandits", "radio", "bandit_env", "wheel", "wheel", "mushroom", "casino"),
]  # fmt: skip
IDS = [f"{p}-{k}" for p, _, k, *_ in ROUND_TRIPS]


def widget(at: AppTest, kind: str, key: str):
    return getattr(at, kind)(key=key)


@pytest.mark.parametrize(
    ("name", "kind", "key", "raw", "value", "changed", "bad"), ROUND_TRIPS, ids=IDS
)
def test_each_page_setting_round_trips_through_the_url(
    small_models, name, kind, key, raw, value, changed, bad
):
    at = run(page(name), {key: raw})
    assert widget(at, kind, key).value == value  # the link sets the widget
    assert at.query_params[key] == raw  # and stays in the address bar
    widget(at, kind, key).set_value(changed)
    at.run()
    assert not at.exception, at.exception
    assert widget(at, kind, key).value == changed  # the widget wins over the old URL value
    assert at.query_params.get(key) in (share.encode(changed), None)  # None: the default
    if at.query_params.get(key) is None:
        assert changed == default_of(name, kind, key)


def default_of(name: str, kind: str, key: str):
    return widget(run(page(name), {}), kind, key).value


def drawn_afresh(at: AppTest, kind: str, key: str):
    """What the browser shows when it draws the widget anew and the visitor never touched it:
    the default the server sends (the value it sets reaches the browser only in that run)."""
    return (
        list(widget(at, kind, key).proto.default)
        if kind in LISTED
        else widget(at, kind, key).proto.default
    )


LISTED = ("slider", "select_slider", "multiselect")  # their defaults are repeated fields


@pytest.mark.parametrize(
    ("name", "kind", "key", "raw", "value", "changed", "bad"), ROUND_TRIPS, ids=IDS
)
def test_a_link_value_is_what_the_browser_draws_afresh(
    small_models, name, kind, key, raw, value, changed, bad
):
    """A polling fragment can make the browser draw the page's widgets anew; a widget the
    visitor never touched then shows, and sends back with the next press, its default. With
    the page's own default there, a student's 1-epoch link started a 3-epoch job."""
    linked = run(page(name), {key: raw})
    plain = run(page(name), {})
    assert drawn_afresh(linked, kind, key) != drawn_afresh(plain, kind, key)
    first = drawn_afresh(linked, kind, key)
    linked.run()  # the next run (the press's) keeps it
    assert not linked.exception, linked.exception
    assert drawn_afresh(linked, kind, key) == first
    assert widget(linked, kind, key).value == value


def test_the_train_links_epochs_and_images_are_the_browsers_defaults(small_models):
    at = run(page("train"), {"train_epochs": "1", "train_subset": "1000", "train_name": "x"})
    epochs, images = at.number_input(key="train_epochs"), at.select_slider(key="train_subset")
    assert epochs.proto.default == 1
    assert [images.proto.options[int(i)] for i in images.proto.default] == ["1,000"]
    assert at.text_input(key="train_name").proto.default == "x"


@pytest.mark.parametrize(
    ("name", "kind", "key", "raw", "value", "changed", "bad"), ROUND_TRIPS, ids=IDS
)
def test_an_invalid_link_value_keeps_the_default_with_a_note(
    small_models, name, kind, key, raw, value, changed, bad
):
    default = default_of(name, kind, key)
    at = run(page(name), {key: bad})
    assert widget(at, kind, key).value == default
    assert f"Ignored {key}={bad} from the link" in notes(at)
    assert key not in at.query_params  # the bad value leaves the address bar
    at.run()  # the note is shown once, not on every rerun
    assert not at.exception, at.exception
    assert not any(share.NOTE_HEADING in w.value for w in at.warning)


def test_sidebar_models_and_samples_round_trip_in_the_app(small_models):
    at = run(MAIN, {"sidebar_models": "mlp,dropout_mlp", "sidebar_samples": "20"})
    assert at.sidebar.multiselect(key="sidebar_models").value == ["mlp", "dropout_mlp"]
    assert at.sidebar.number_input(key="sidebar_samples").value == 20
    at.sidebar.multiselect(key="sidebar_models").set_value(["bbb_mixture"])
    at.sidebar.number_input(key="sidebar_samples").set_value(30)
    at.run()
    assert at.query_params["sidebar_models"] == "bbb_mixture"
    assert at.query_params["sidebar_samples"] == "30"
    at.switch_page("../pages/pruning.py").run()  # a page with its own model choice
    assert not at.exception, at.exception
    assert not at.sidebar.multiselect and not at.sidebar.number_input  # nothing it ignores
    assert at.query_params["sidebar_models"] == "bbb_mixture"  # the link keeps them
    at.switch_page("../pages/ood.py").run()  # and the next page that compares models has them
    assert not at.exception, at.exception
    assert at.sidebar.multiselect(key="sidebar_models").value == ["bbb_mixture"]
    assert at.sidebar.number_input(key="sidebar_samples").value == 30


def test_unknown_models_in_a_link_are_left_out_with_a_note(small_models):
    at = run(MAIN, {"sidebar_models": "mlp,user:nobody", "sidebar_samples": "0"})
    assert at.sidebar.multiselect(key="sidebar_models").value == ["mlp"]
    assert at.sidebar.number_input(key="sidebar_samples").value == 4  # the session's value
    text = notes(at)
    assert "user:nobody" in text and "sidebar_samples=0" in text


def test_a_page_switch_drops_the_last_pages_settings(small_models):
    at = run(MAIN, {})
    at.switch_page("../pages/pruning.py").run()
    at.slider(key="pruning_percent").set_value(60).run()
    assert at.query_params["pruning_percent"] == "60"
    at.switch_page("../pages/train.py").run()
    assert not at.exception, at.exception
    assert "pruning_percent" not in at.query_params


def test_a_hidden_control_is_not_drawn_but_its_link_value_is_used(small_models):
    at = run(page("adversarial"), {"adv_eps": "0.2", "hide": "adv_eps,adv_mode"})
    assert "adv_eps" not in [s.key for s in at.slider]
    assert "adv_mode" not in [r.key for r in at.radio]
    assert any("ε = 0.20" in s.value for s in at.subheader)
    at = run(page("adversarial"), {"adv_eps": "9", "hide": "adv_eps"})  # bad: the default
    assert any("ε = 0.10" in s.value for s in at.subheader)
    assert "Ignored adv_eps=9" in notes(at)


def figure_fonts(at: AppTest) -> list:
    import json

    return [json.loads(c.proto.spec)["layout"].get("font", {}) for c in at.get("plotly_chart")]


def test_presenter_mode_enlarges_figures_and_text_and_survives_page_switches(small_models):
    at = run(MAIN, {"present": "1"})
    assert any(share.PRESENTER_CSS in h.proto.body for h in at.get("html"))
    at.switch_page("../pages/pruning.py").run()
    assert not at.exception, at.exception
    assert at.query_params["present"] == "1"  # kept across page switches
    fonts = figure_fonts(at)
    assert fonts and all(f.get("size") == share.PRESENTER_FONT for f in fonts)
    plain = run(page("pruning"), {})
    assert all(f.get("size") != share.PRESENTER_FONT for f in figure_fonts(plain))
    assert not plain.get("html")


def test_presenter_mode_shows_tables_static_with_their_formats(small_models):
    """A grid is drawn on a canvas at a fixed size: projected, the tables are static."""
    grid = run(page("regression"), {})
    static = run(page("regression"), {"present": "1"})
    assert len(grid.dataframe) == 1 and not grid.table
    assert len(static.table) == 1 and not static.dataframe
    shown = static.table[0].proto.arrow_data.styler.display_values
    frame = grid.dataframe[0].value
    assert list(frame.columns[:2]) == ["method", "RMSE in range"]
    first = (
        f"{frame['RMSE in range'].iloc[0]:.3f}"  # the grid's column format, in the static table too
    )
    assert first.encode() in shown


def test_link_control_shows_the_view_url(small_models):
    at = run(MAIN, {"sidebar_samples": "20"})
    at.switch_page("../pages/pruning.py").run()
    at.slider(key="pruning_percent").set_value(60).run()
    links = [c.value for c in at.sidebar.code]
    assert links and "pruning_percent=60" in links[-1] and "sidebar_samples=20" in links[-1]


def test_hidden_sidebar_controls_still_choose_the_models_and_samples(small_models):
    at = run(MAIN, {"sidebar_models": "mlp", "sidebar_samples": "12", "hide": "sidebar_models"})
    assert "sidebar_models" not in [m.key for m in at.sidebar.multiselect]
    assert at.session_state["sidebar_models"] == ["mlp"]  # what ui.selected_names() reads
    assert at.sidebar.number_input(key="sidebar_samples").value == 12
