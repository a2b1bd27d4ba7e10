"""One visual language across figures: a colour per digit class, charts that do not trap a
swipe, and presenter mode's large dark type."""

from __future__ import annotations

import numpy as np

from app import share
from app.figures import CLASS_COLORS, INK, class_color, layout, presenter_layout
from app.figures.predictive import predictive_figure
from app.figures.sweep import sweep_figure


def sweep(classes: list[int]):
    rng = np.random.default_rng(0)
    probs = rng.dirichlet(np.ones(10), size=(5, 4))
    angles = np.linspace(0, 180, 5)
    return sweep_figure(angles, probs, np.zeros(5), np.zeros(5), classes, "a model")


def test_a_class_keeps_its_colour_whichever_classes_a_figure_shows():
    first, second = sweep([5, 7, 3]), sweep([4, 5])
    colour = {t.name: t.marker.color for fig in (first, second) for t in fig.data if t.marker}
    assert colour["p(5) per network"] == class_color(5) == CLASS_COLORS[5]
    assert colour["p(4) per network"] != colour["p(5) per network"]
    for fig in (first, second):
        names = [t.name for t in fig.data if t.name.startswith("p(")]
        assert all(colour[n] == class_color(int(n[2])) for n in names)
    assert len(set(CLASS_COLORS)) == 10


def test_the_draw_figure_colours_each_class_and_the_top_class_spread_alike():
    mean = np.full(10, 0.1)
    fig = predictive_figure(mean, np.zeros(10), np.arange(10), np.full(8, 0.9), cls=3)
    bars, votes, spread = fig.data
    assert list(bars.marker.color) == list(votes.marker.color) == list(CLASS_COLORS)
    assert spread.marker.color == class_color(3)


def test_charts_do_not_zoom_on_a_swipe_and_presenter_mode_is_large_and_dark():
    assert layout("t", 300, {}, {})["dragmode"] is False
    assert (
        predictive_figure(np.full(10, 0.1), np.zeros(10), np.ones(10), np.ones(3), 0).layout[
            "dragmode"
        ]
        is False
    )
    big = presenter_layout(sweep([1]))
    assert big.layout.font.size >= 16 and big.layout.title.font.size >= 22
    assert big.layout.font.color == INK
    draw = predictive_figure(np.full(10, 0.1), np.zeros(10), np.ones(10), np.ones(3), 0)
    big = presenter_layout(draw)
    axes = [big.layout[k] for k in big.layout if k.startswith(("xaxis", "yaxis"))]
    assert len(axes) == 6
    for font in (
        [a.tickfont for a in axes] + [a.title.font for a in axes] + [big.layout.legend.font]
    ):
        assert font.size >= 16 and font.color == INK  # Streamlit's theme would draw them grey
    assert [a.font.size for a in big.layout.annotations] == [share.PRESENTER_TITLE_FONT] * 3
    assert big.layout.height > draw.layout.height and draw.layout.xaxis.tickfont.size is None
    assert share.PRESENTER_FONT >= 16 and share.PRESENTER_TITLE_FONT >= 22


def test_saved_timing_runs_are_labelled_by_device_date_and_difference_never_file_name():
    from app.figures.timing import run_labels

    h100 = {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-26T02:03:19+00:00"}
    runs = {
        "cuda-nvidia-h100-80gb-hbm3-2026-11-26.json": h100,
        "cuda-nvidia-h100-80gb-hbm3-mixture-2026-11-26.json": h100
        | {"config": {"prior": "mixture"}},
        "cuda-nvidia-h100-80gb-hbm3-2026-11-26-2.json": h100,
        "reference.json": {"device": "NVIDIA A100", "reference": True, "date": None},
    }
    assert list(run_labels(runs).values()) == [
        "NVIDIA H100 · 26 Nov 2026",
        "NVIDIA H100 · scale-mixture prior · 26 Nov 2026",
        "NVIDIA H100 · 26 Nov 2026 (2)",
        "Published: NVIDIA A100",
    ]


def test_runs_of_one_line_are_named_by_what_differs_and_others_by_their_line():
    from app.figures.train import run_names, setting_text

    lines = ["BBB on MNIST, 3 epochs", "BBB on MNIST, 3 epochs", "MLP on MNIST, 3 epochs"]
    runs = [
        {"beta": 1.0, "prior": "gaussian", "seed": 0},
        {"beta": 0.1, "prior": "mixture", "seed": 0},
        {"beta": 1.0, "prior": None, "seed": 1},
    ]
    labels = {"beta": "KL weight β", "prior": "Prior"}
    names = run_names(lines, runs, lambda n, v: setting_text(n, v, labels))
    assert names == [
        "BBB on MNIST, 3 epochs · KL weight β = 1, Prior = gaussian",
        "BBB on MNIST, 3 epochs · KL weight β = 0.1, Prior = mixture",
        "MLP on MNIST, 3 epochs",
    ]


def test_a_setting_reads_as_words_and_numbers_for_people():
    from app.figures.train import setting_text

    assert setting_text("n_train", None, {}) == "training images = all"
    assert setting_text("n_train", 10_000, {}) == "training images = 10,000"
    assert setting_text("lrt", True, {"lrt": "Local reparameterisation"}) == (
        "Local reparameterisation = on"
    )
    assert setting_text("hidden", [400, 400], {}) == "hidden layers = 400-400"
    assert setting_text("init_sigma", 0.001, {}) == "init sigma = 0.001"
