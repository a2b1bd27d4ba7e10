"""Regression playground: train small Bayesian networks on 1-D data in seconds and watch the
predictive band widen away from the data, next to an exact-posterior reference by HMC."""

from functools import partial

import numpy as np
import pandas as pd
import streamlit as st

from app import share
from app.figures import show_figure, show_table
from app.figures.regression import (
    FIT_KEY,
    canvas_background,
    fit_figure,
    loss_figure,
    method_color,
    overlay_figure,
    std_figure,
)
from app.settings_widgets import setting_widget
from core.methods import method as method_of
from core.progress import compute_slot
from core.regression.data import (
    PRESETS,
    USER_PLOT_RANGE,
    USER_Y_RANGE,
    make_data,
    points_from_drawing,
    user_data,
)
from core.regression.likelihood import NOISE_MODELS
from core.regression.settings import FitSettings
from core.regression.study import compared_numbers, fit_method, load_fit
from core.regression.variants import DEFAULT_METHODS, VARIANTS, default_params, offered

USER = "user"
SOURCES = [*PRESETS, USER]
LAYOUTS = ("Side by side", "Overlaid")
CANVAS_KEY = "reg_canvas"
CANVAS_WIDTH, CANVAS_HEIGHT = 600, 300
TRAINING_SLOTS = 2  # fits running at once in this server, over all sessions
WIDTHS = (20, 50, 100, 200)
NOISE_TITLES = {
    "fixed": "fixed σ",
    "learned": "learned σ (homoscedastic)",
    "heteroscedastic": "heteroscedastic (network outputs log σ²)",
}


def drawn_data():
    """The student's points from the canvas; stops the page (with a prompt or the reason)
    until there are enough."""
    from streamlit_drawable_canvas import st_canvas

    mode = share.radio(
        "Draw",
        ("point", "freedraw"),
        format_func={"point": "points (click)", "freedraw": "a freehand curve"}.get,
        horizontal=True,
        key="reg_draw_mode",
    )
    result = st_canvas(
        stroke_width=3,
        stroke_color="#1f77b4",
        fill_color="#1f77b4",
        background_image=canvas_background(
            CANVAS_WIDTH, CANVAS_HEIGHT, USER_PLOT_RANGE, USER_Y_RANGE
        ),
        height=CANVAS_HEIGHT,
        width=CANVAS_WIDTH,
        drawing_mode=mode,
        point_display_radius=4,
        key=CANVAS_KEY,
    )
    x, y = points_from_drawing(result.json_data, CANVAS_WIDTH, CANVAS_HEIGHT)
    st.caption(
        f"The canvas spans x ∈ {list(USER_PLOT_RANGE)}, y ∈ {list(USER_Y_RANGE)}. "
        f"{len(x)} points so far. Undo or clear with the toolbar."
    )
    if len(x) < 2:
        st.info("Click at least two points (or draw a curve) on the canvas to train on them.")
        st.stop()
    try:
        return user_data(x, y)
    except ValueError as exc:
        st.error("These points cannot be used.")
        st.text(str(exc))
        st.stop()


def preset_data(name: str):
    """A preset with its own sliders (each preset keeps its own values)."""
    preset = PRESETS[name]
    cols = st.columns(3)
    n_inputs = share.slider(
        "Training points",
        10,
        500,
        preset.default_n_inputs,
        step=10,
        key=f"reg_points_{name}",
        container=cols[0],
    )
    top = 5 * preset.default_noise
    noise = share.slider(
        "Noise level",
        0.0,
        top,
        preset.default_noise,
        step=top / 50,
        format="%.3f",
        key=f"reg_noise_{name}",
        help="Standard deviation of ε (for the heteroscedastic preset, its largest value).",
        container=cols[1],
    )
    seed = share.number_input("Data seed", 0, 100_000, 0, key="reg_seed", container=cols[2])
    st.caption(preset.description)
    return make_data(name, int(n_inputs), float(noise), int(seed))


def method_params(kinds: list[str]) -> dict[str, dict]:
    """Each method's offered settings as controls keyed ``reg_KIND_NAME``, a row per method;
    returns kind → values."""
    params = {}
    for kind in kinds:
        settings = offered(kind)
        if not settings:
            continue
        st.markdown(f"**{method_of(kind).title}**")
        columns = st.columns(4)
        defaults, values = default_params(kind), {}
        for i, setting in enumerate(settings):
            values[setting.name] = setting_widget(
                setting, f"reg_{kind}_{setting.name}", columns[i % 4], defaults[setting.name]
            )
        params[kind] = values
    return params


def hyperparameters(methods: list[str]) -> FitSettings:
    """The shared hyperparameter widgets, then those of the chosen methods; a bad combination
    is reported and stops the page."""
    chosen = [VARIANTS[m] for m in methods]
    with st.expander("Hyperparameters (every change retrains what is not cached)"):
        c = st.columns(4)
        noise_model = share.selectbox(
            "Noise model",
            NOISE_MODELS,
            index=1,
            format_func=NOISE_TITLES.get,
            key="reg_noise_model",
            container=c[0],
        )
        fixed = share.number_input(
            "Fixed σ (0: the data's own)",
            0.0,
            5.0,
            0.0,
            step=0.01,
            format="%.3f",
            key="reg_fixed_noise",
            disabled=noise_model != "fixed",
            container=c[1],
        )
        width = share.selectbox(
            "Hidden units", WIDTHS, index=WIDTHS.index(100), key="reg_width", container=c[2]
        )
        layers = share.selectbox("Hidden layers", (1, 2), key="reg_layers", container=c[3])
        c = st.columns(4)
        epochs = share.slider(
            "Epochs (full-batch steps)", 100, 5000, 2000, 100, key="reg_epochs", container=c[0]
        )
        lr = share.select_slider(
            "Learning rate", (3e-3, 1e-2, 3e-2), 1e-2, key="reg_lr", container=c[1]
        )
        prior_scale = share.select_slider(
            "Prior σp (every method's, HMC's too)",
            (0.3, 0.5, 1.0, 2.0, 3.0),
            1.0,
            key="reg_prior_sigma",
            container=c[2],
        )
        fit_seed = share.number_input(
            "Training seed", 0, 100_000, 0, key="reg_fit_seed", container=c[3]
        )
        c = st.columns(4)
        n_predict = share.slider(
            "Prediction passes", 10, 300, 100, 10, key="reg_n_predict", container=c[0]
        )
        nuts = {}
        if any(v.nuts for v in chosen):
            nuts["hmc_samples"] = share.slider(
                "HMC samples", 50, 1000, 300, 50, key="reg_hmc_samples", container=c[1]
            )
            nuts["hmc_warmup"] = share.slider(
                "HMC warm-up", 50, 1000, 300, 50, key="reg_hmc_warmup", container=c[2]
            )
            nuts["hmc_tree_depth"] = share.slider(
                "NUTS max tree depth", 3, 10, 7, key="reg_hmc_depth", container=c[3]
            )
        params = method_params(list(dict.fromkeys(v.kind for v in chosen if not v.nuts)))
    try:
        return FitSettings(
            hidden=(int(width),) * int(layers),
            noise_model=noise_model,
            fixed_noise=float(fixed) if fixed > 0 else None,
            epochs=int(epochs),
            lr=float(lr),
            prior_scale=float(prior_scale),
            n_predict=int(n_predict),
            seed=int(fit_seed),
            params=params,
            **{k: int(v) for k, v in nuts.items()},
        )
    except ValueError as exc:
        st.error("These hyperparameters cannot be used.")
        st.text(str(exc))
        st.stop()


def run_fit(data, method: str, settings: FitSettings, refresh: bool = False):
    """Fit one method now under a progress bar, with a live loss curve for gradient methods;
    waits for a free training slot first. Returns the fit."""
    title = VARIANTS[method].title
    waiting = partial(st.spinner, "Waiting for other sessions' training to finish…")
    with compute_slot("regression fits", TRAINING_SLOTS, waiting=waiting):
        bar = st.progress(0.0, f"{title}…")
        chart = st.empty()

        def show_loss(losses: list[float]) -> None:
            chart.line_chart(pd.DataFrame({"loss per point (nats)": losses}), height=160)

        try:
            fit = fit_method(
                data,
                method,
                settings,
                progress=lambda fraction, text: bar.progress(fraction, f"{title}: {text}"),
                on_loss=show_loss,
                refresh=refresh,
            )
        except (ValueError, RuntimeError) as exc:  # e.g. a diverging run with a large rate
            fit = None
            st.error(f"{title} could not be fitted with these settings.")
            st.text(str(exc))
        bar.empty()
        chart.empty()
    return fit


def hmc_controls(data, name: str, settings: FitSettings, fit):
    """Show where the HMC reference ``name``'s ``fit`` (None: not computed) comes from, and
    run it on request. Returns the fit to show, or None."""
    left, right = st.columns([3, 1], vertical_alignment="center")
    about = left.empty()  # filled after a re-run, so that it describes the fit shown
    label = "Run HMC now" if fit is None else "Re-run HMC live"
    if right.button(label, key="reg_hmc_run", icon=":material/play_arrow:"):
        fit = run_fit(data, name, settings, refresh=fit is not None)
    if fit is None:
        about.info(
            "The HMC reference for these data and settings is not computed yet: NUTS takes "
            "about a minute here (once; then it is cached on disk)."
        )
    else:
        info = fit.info
        where = {"shipped": "shipped with the lab", "cache": "from the disk cache"}
        about.caption(
            f"HMC reference ({where.get(fit.source, 'just computed')}): "
            f"{info['n_samples']} NUTS samples after warm-up, computed in "
            f"{fit.train_seconds:.0f} s; step size {info['step_size']:.2g}, "
            f"{info['divergences']} divergent transitions."
        )
    return fit


def as_arrays(predictive) -> dict[str, np.ndarray]:
    """The cached predictive's tensors as numpy arrays for the figures."""
    return {k: v.numpy() for k, v in predictive.to_dict().items()}


COLUMNS = {
    "rmse_in": "RMSE in range",
    "nll_in": "NLL in range",
    "std_in": "std in",
    "std_out": "std out",
    "std_ratio": "out / in",
    "coverage90_in": "90 % coverage",
    "std_vs_hmc": "std vs HMC",
    "train_seconds": "train s",
    "learned_noise": "learned σ",
}


def metrics_table(fits: dict, held_out: bool) -> pd.DataFrame:
    """One row per method: the numbers of :func:`core.regression.study.compared_numbers`."""
    rows = {
        VARIANTS[method].title: {title: numbers[key] for key, title in COLUMNS.items()}
        for method, numbers in compared_numbers(fits).items()
    }
    table = pd.DataFrame.from_dict(rows, orient="index").rename_axis("method")
    if not held_out:
        table = table.rename(columns=lambda c: c.replace("in range", "(train points)"))
    return table


st.title("Regression playground")
st.markdown(
    "Train Bayesian neural networks on one-dimensional data in seconds and watch what each "
    "approximation does with its uncertainty: the band should be narrow where there is data "
    "and widen away from it. The dark band is ±2 standard deviations of the *epistemic* "
    "uncertainty (the sampled networks disagree), the light band adds the *aleatoric* noise; "
    "thin lines are sampled functions. **HMC** samples the exact posterior of the same network "
    "and prior: the reference the others approximate."
)

source = share.selectbox(
    "Data",
    SOURCES,
    format_func=lambda s: "Draw your own points" if s == USER else PRESETS[s].title,
    key="reg_data",
)
data = drawn_data() if source == USER else preset_data(source)

top = st.columns([3, 1], vertical_alignment="bottom")
methods = share.multiselect(
    "Methods",
    list(VARIANTS),
    default=DEFAULT_METHODS,
    format_func=lambda m: VARIANTS[m].title,
    key="reg_methods",
    container=top[0],
)
layout = share.radio("Show", LAYOUTS, horizontal=True, key="reg_layout", container=top[1])
settings = hyperparameters(methods)
if not methods:
    st.warning("Pick at least one method.")
    st.stop()

fits = {m: load_fit(data, m, settings) for m in methods}
for name in methods:
    if not VARIANTS[name].nuts and fits[name] is None:
        fits[name] = run_fit(data, name, settings)
for name in methods:
    if VARIANTS[name].nuts:  # sampled on request: about a minute
        fits[name] = hmc_controls(data, name, settings, fits[name])
fits = {m: fit for m, fit in fits.items() if fit is not None}
if not fits:
    st.stop()

colors = {m: method_color(list(VARIANTS).index(m)) for m in fits}  # fixed per method
x_train, y_train = data.x_train.numpy(), data.y_train.numpy()
intervals = [tuple(i) for i in data.intervals]
any_fit = next(iter(fits.values()))
plot_truth = data.truth(any_fit.plot.x)
wide_truth = data.truth(any_fit.wide.x)
plot_truth = None if plot_truth is None else plot_truth.numpy()
wide_truth = None if wide_truth is None else wide_truth.numpy()

if layout == LAYOUTS[0]:
    st.caption(FIT_KEY)
    items = list(fits.items())
    for row in range(0, len(items), 2):
        for column, (method, fit) in zip(st.columns(2), items[row : row + 2], strict=False):
            with column:
                title = VARIANTS[method].title
                show_figure(
                    fit_figure(
                        as_arrays(fit.plot),
                        x_train,
                        y_train,
                        plot_truth,
                        intervals,
                        title,
                        colors[method],
                    ),
                    f"reg_fit_{method}",
                )
                show_figure(
                    fit_figure(
                        as_arrays(fit.wide),
                        x_train,
                        y_train,
                        wide_truth,
                        intervals,
                        f"{title}: zoomed out",
                        colors[method],
                        spread=3.0,
                        height=240,
                    ),
                    f"reg_wide_{method}",
                )
                st.caption(VARIANTS[method].notice)
else:
    titled = {VARIANTS[m].title: as_arrays(f.plot) for m, f in fits.items()}
    show_figure(
        overlay_figure(
            titled,
            x_train,
            y_train,
            plot_truth,
            intervals,
            data.title,
            colors=list(colors.values()),
        ),
        "reg_overlay",
    )
    wide = {VARIANTS[m].title: as_arrays(f.wide) for m, f in fits.items()}
    show_figure(
        overlay_figure(
            wide,
            x_train,
            y_train,
            wide_truth,
            intervals,
            "Zoomed out",
            spread=3.0,
            height=360,
            colors=list(colors.values()),
        ),
        "reg_overlay_wide",
    )
    for method in fits:
        st.caption(f"**{VARIANTS[method].title}**: {VARIANTS[method].notice}")

st.subheader("Numbers")
table = metrics_table(fits, data.held_out)
show_table(
    table.reset_index(),
    formats={c: "%.1f" if c == "train s" else "%.3f" for c in table.columns},
)
st.caption(
    (
        "Held-out points drawn like the training data. "
        if data.held_out
        else "Your points have no held-out set: RMSE, NLL and coverage are on the training points. "
    )
    + "std in / out: mean predictive std over the plot's x range inside / outside the training "
    "data (a ratio well above 1 means the band widens away from the data). 90 % coverage: "
    "share of points inside mean ± 1.645 std (0.90 is calibrated). std vs HMC: how far the "
    "band is from HMC's, the mean gap between their stds over the plot (0 = the same band; "
    "shown when HMC is picked). Times are this server's, cached with the fit."
)

left, right = st.columns(2)
with left:
    noise_truth = data.noise_std(any_fit.wide.x)
    std_fits = {VARIANTS[m].title: as_arrays(f.wide) for m, f in fits.items()}
    show_figure(
        std_figure(
            std_fits,
            intervals,
            "Uncertainty along x: epistemic (solid), aleatoric (dotted)",
            None if noise_truth is None else (any_fit.wide.x.numpy(), noise_truth.numpy()),
            colors=list(colors.values()),
        ),
        "reg_std",
    )
with right:
    trained = [m for m, f in fits.items() if f.losses]
    if trained:
        histories = {VARIANTS[m].title: fits[m].losses for m in trained}
        show_figure(loss_figure(histories, colors=[colors[m] for m in trained]), "reg_loss")
