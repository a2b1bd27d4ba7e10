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


# --- the ten classes' colours ---------------------------------------------------------------

DEUTERANOPIA = np.array(
    [
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ]
)
PROTANOPIA = np.array(
    [
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ]
)
"""Machado, Oliveira and Fernandes (2009): full dichromacy, on linear RGB."""
SRGB_TO_XYZ = np.array(
    [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
)
WHITE = np.array([0.95047, 1.0, 1.08883])


def linear(hex_colour: str) -> np.ndarray:
    c = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


def cielab(rgb_linear: np.ndarray) -> np.ndarray:
    t = SRGB_TO_XYZ @ np.clip(rgb_linear, 0, 1) / WHITE
    f = np.where(t > (6 / 29) ** 3, np.cbrt(t), t / (3 * (6 / 29) ** 2) + 4 / 29)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


NORMAL = np.eye(3)


def closest_pair(colours, seen=NORMAL) -> float:
    """The smallest colour difference (CIE76 ΔE) between two of ``colours`` as ``seen``."""
    lab = [cielab(seen @ linear(c)) for c in colours]
    return min(
        float(np.linalg.norm(lab[i] - lab[j]))
        for i in range(len(lab))
        for j in range(i + 1, len(lab))
    )


def test_the_ten_classes_have_distinct_colours_also_for_colour_blind_eyes():
    assert len(CLASS_COLORS) == 10
    assert closest_pair(CLASS_COLORS) >= 20  # ΔE ≈ 2.3 is barely visible; 20 is obvious
    assert closest_pair(CLASS_COLORS, DEUTERANOPIA) >= 12  # the old palette's: 0.9
    assert closest_pair(CLASS_COLORS, PROTANOPIA) >= 12
    lightness = [cielab(linear(c))[0] for c in CLASS_COLORS]
    assert max(lightness) <= 80  # none fades into the white page (a pale yellow: 89)


def test_the_sweep_legend_shows_each_class_large_and_opaque():
    from app.figures import LEGEND_MARKER

    fig = sweep([5, 7, 3])
    shown = [t for t in fig.data if t.showlegend is not False and t.name.startswith("p(")]
    assert [t.name for t in shown] == ["p(5) per network", "p(7) per network", "p(3) per network"]
    for trace in shown:
        assert trace.marker.size >= LEGEND_MARKER >= 12 and trace.marker.opacity in (None, 1)
        assert trace.marker.color == class_color(int(trace.name[2]))


def test_presenter_mode_enlarges_the_ticks_of_an_axis_left_at_its_defaults():
    import plotly.graph_objects as go

    fig = go.Figure([go.Bar(x=["a", "b"], y=[1, 2])], layout("t", 300, {}, {}))
    big = presenter_layout(fig)
    assert big.layout.xaxis.tickfont.size == big.layout.yaxis.tickfont.size == share.PRESENTER_FONT


def test_the_train_page_draws_the_nll_on_its_own_axis():
    from app.figures.train import loss_figure

    epochs = {
        "epoch": [1, 2],
        "elbo_loss": [300.0, 30.0],
        "nll": [0.71, 0.19],
        "test_nll": [0.5, 0.2],
    }
    steps = {"x": [0.5, 1.5], "elbo_loss": [400.0, 60.0], "nll": [1.0, 0.3]}
    fig = loss_figure(epochs, steps, 2)
    axis = {t.name: t.yaxis or "y" for t in fig.data}
    assert axis["train NLL"] == axis["test NLL"] != axis["objective (−ELBO)"]


def test_a_reliability_bin_of_one_input_shows_and_its_counts_have_few_ticks():
    from app.figures.calibration import count_ticks, reliability_figure

    edges = np.linspace(0, 1, 16)
    count = np.zeros(15, dtype=int)
    count[[4, 9, 14]] = [1, 30, 60_000]
    fig = reliability_figure(edges, np.linspace(0, 1, 15), np.linspace(0, 1, 15), count, "t")
    counts = fig.layout.yaxis2
    assert counts.type == "log" and counts.range[0] < 0  # a bar of 1 rises from below 10⁰
    assert len(counts.tickvals) <= 3 and counts.tickvals[0] == 1
    assert count_ticks(60_000) == [1, 100, 10_000]
    assert count_ticks(5) == [1, 5] and count_ticks(1) == [1]


def test_an_attack_draws_each_class_in_its_colour():
    from app.figures.adversarial import trajectory_figure

    fig = trajectory_figure(np.full((3, 10), 0.1), target=4)
    assert [t.line.color for t in fig.data] == list(CLASS_COLORS)


def test_every_table_of_the_pages_goes_through_show_table():
    """Presenter mode enlarges a static table only: a grid drawn by a page itself would stay
    at the grid's fixed small size on the projector."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    sources = [*root.glob("pages/*.py"), *root.glob("app/*.py")]
    direct = re.compile(r"\.(table|dataframe|data_editor)\(")
    assert len(sources) >= 12
    assert [str(p.relative_to(root)) for p in sources if direct.search(p.read_text())] == []


def test_sampled_functions_are_one_float32_trace_of_pieces_separated_by_gaps():
    from app.figures.regression import spaghetti

    x = np.linspace(-1.0, 1.0, 5)
    functions = np.arange(15, dtype=np.float64).reshape(3, 5)
    trace = spaghetti(x, functions, "#336699", "sampled functions")
    xs, ys = np.asarray(trace.x), np.asarray(trace.y)
    assert xs.dtype == ys.dtype == np.float32  # half the bytes a browser decodes
    pieces = ys.reshape(3, 6)
    assert np.isnan(pieces[:, -1]).all() and np.isnan(xs.reshape(3, 6)[:, -1]).all()
    assert np.array_equal(pieces[:, :-1], functions.astype(np.float32))
    assert np.allclose(xs.reshape(3, 6)[:, :-1], x)
    empty = spaghetti(x, functions[:0], "#336699", "none")
    assert len(empty.x) == len(empty.y) == 0


def test_an_enlarged_image_turns_each_pixel_into_a_square_of_its_value():
    from app.figures.pixels import enlarge

    image = np.array([[0.0, 0.25], [0.5, 1.0]])
    big = enlarge(image, 3)
    assert big.shape == (6, 6) and big.dtype == np.float32
    for (i, j), value in np.ndenumerate(image):
        assert np.all(big[3 * i : 3 * i + 3, 3 * j : 3 * j + 3] == value)
    stack = enlarge(np.array([[[0, 255]], [[255, 0]]], dtype=np.uint8), 2)  # (2, 1, 2): a batch
    assert stack.shape == (2, 2, 4) and stack.max() == 1.0
    assert np.array_equal(stack[0], [[0, 0, 1, 1], [0, 0, 1, 1]])
