"""The Calibration page's cold-posterior panel: SGLD against its temperature."""

from __future__ import annotations

import numpy as np
import streamlit as st

from app import share, ui
from app.figures import show_figure
from app.figures.calibration import (
    temperature_figure,
)
from core.storage.checkpoints import checkpoint_path
from core.studies.cold_posterior import (
    METRICS,
    SPREAD_FLOOR,
    shipped_at,
    stored_cold_posterior,
)


def cold_posterior_section() -> None:
    """Draw SGLD's test error, NLL, ECE and sample spread against its temperature.

    From the stored study (:func:`~core.studies.cold_posterior.stored_cold_posterior`); a
    slider picks the temperature described. Says so when the shipped SGLD models are missing.
    """
    st.header("Cold posteriors: SGLD's temperature")
    st.markdown(
        "SGLD adds just enough noise to its gradient steps that the networks it visits are "
        "samples of the posterior: the networks that fit the training digits, each as often "
        "as it is probable. The temperature T scales that noise. At T = 1 the samples come "
        "from the posterior itself; below 1 from a *tempered* posterior, sharpened until, as "
        "T → 0, every sample is the single most probable network. Wenzel et al. (2020) found "
        "that deep networks often predict better when cooled like this — the *cold posterior "
        "effect*. Accuracy can rise, but the samples stop differing, and the spread between "
        "them (their mutual information), the uncertainty a Bayesian network is for, "
        "disappears. A cold sampler is then one network wearing the name of a posterior."
    )
    models = list(shipped_at().values())
    if not all(checkpoint_path(name).is_file() for name in models):
        st.info("The temperature study needs the shipped SGLD models, which are missing here.")
        return
    study = ui.kept(stored_cold_posterior, models=models)
    if study is None:
        st.info("The temperature study has not been measured for these SGLD models yet.")
        return
    options = [p.temperature for p in study.points]
    chosen = share.select_slider(
        "Temperature T",
        options=options,
        value=max(options),
        format_func=lambda t: f"{t:g}",
        key="cal_temperature",
        help="T = 1 samples the posterior; to the right, colder.",
    )
    point = study.at(chosen)
    for column, (metric, (title, _)) in zip(st.columns(len(METRICS)), METRICS.items(), strict=True):
        column.metric(title, point.formatted(metric))
    if not point.samples_differ:
        st.warning(
            f"At T = {chosen:g} the samples barely differ: their mutual information on rotated "
            f"digits, {point.mutual_information:.4f} nats, is below {SPREAD_FLOOR} nats. They "
            "act as one network, so what they show is not a posterior's uncertainty."
        )
    else:
        st.success(
            f"At T = {chosen:g} the samples differ: their mutual information on rotated digits, "
            f"{point.mutual_information:.4f} nats, is above {SPREAD_FLOOR} nats."
        )
    metrics = list(METRICS.items())
    for row in range(0, len(metrics), 2):
        for column, (metric, (title, _)) in zip(st.columns(2), metrics[row : row + 2], strict=True):
            with column:
                fig = temperature_figure(
                    np.asarray(options),
                    np.asarray([getattr(p, metric) for p in study.points]),
                    f"{title} against T",
                    title,
                    chosen,
                    SPREAD_FLOOR if metric == "mutual_information" else None,
                    "floor",
                )
                show_figure(fig, f"cal_cold_{metric}")
    spread = study.settings["spread"]
    origins = "; ".join(
        f"T = {p.temperature:g}: "
        + (f"the shipped {ui.model_title(p.checkpoint)}" if p.checkpoint else "trained for this")
        + f", {p.epochs} epochs"
        for p in study.points
    )
    st.caption(
        "The same SGLD recipe at each temperature: prior N(0, 0.3²), step as SGD's learning "
        "rate 0.5 decayed ×0.95 per epoch, 8 networks kept over the second half of training, "
        f"the same seed ({origins}). Error, NLL and ECE: the predictive mean of "
        f"{study.settings['n_samples']} passes (each kept network once) on the 10,000 test "
        "digits. "
        f"Spread: the mean mutual information on {spread['n_inputs']:,} test digits rotated by "
        f"every angle from 0 to 180°, {spread['n_samples']} passes each (the shift section's "
        "Mean MI, averaged over the angles). Dashed: the floor below which a sampler's "
        "networks are too alike to be called posterior samples."
    )
    if len({p.epochs for p in study.points}) > 1:
        st.warning(
            "Not every temperature was trained for as long ("
            + ", ".join(f"T = {p.temperature:g}: {p.epochs} epochs" for p in study.points)
            + "). A shorter run ends at a larger step, whose noisier samples differ more and "
            "err more: read the temperatures trained for fewer epochs as a rough guide only."
        )
