"""Calibration, "I don't know" and dataset shift: when can a model's confidence be trusted?

Reliability diagrams with ECE, MCE, NLL and Brier score before and after temperature scaling
(fitted on held-out training images), accuracy against coverage when the most uncertain inputs
are rejected, and accuracy, calibration and uncertainty under rotation, noise, blur and low
contrast at a chosen severity."""

import numpy as np
import pandas as pd
import streamlit as st

from app import share, ui
from app.cold_posterior import cold_posterior_section
from app.figures import show_figure, show_table
from app.figures.calibration import (
    coverage_figure,
    reliability_figure,
    shift_figure,
)
from app.figures.pixels import enlarge
from core.data import DatasetUnavailable, dataset_info
from core.evaluation.calibration import coverage_curve
from core.evaluation.shift import SHIFTS
from core.evaluation.uncertainty import SCORES
from core.storage.checkpoints import CheckpointError, checkpoint_dataset
from core.studies.calibration.rejection import (
    EFFECT_WORDS,
    MISCALIBRATED_P,
    REJECTION_LIMIT,
    CalibrationResult,
    calibration_jobs,
    calibration_result,
    scaling_counts,
)
from core.studies.calibration.shift import (
    ShiftSettings,
    example_answers,
    shift_curve,
    shift_jobs,
    shifted_examples,
)
from core.studies.calibration.validation import VALIDATION_SIZE
from core.studies.evaluations import IN_DISTRIBUTION, evaluate_dataset

DEFAULT_SCORE = "predictive_entropy"
DEFAULT_SHIFT = "rotation"
SHIFT_SAMPLES = (5, 10, 20, 50, 100)
DEFAULT_SHIFT_SAMPLES = 20
DEFAULT_SHIFT_INPUTS = 2000
COLUMNS = 3  # reliability diagrams per row
PREPARING = "Scoring the test set and fitting temperatures (once per model, then cached on disk)"
SHIFTING = "Evaluating the shifted test sets (once per model and shift, then cached on disk)"
# A severity of each shift with its unit, e.g. "60°": the shift table's header.
SEVERITY_WORDS = {
    "rotation": "{:g}°",
    "noise": "noise σ = {:g}",
    "blur": "blur σ = {:g} px",
    "contrast": "{:.0%} of the contrast removed",
}
METRIC_COLUMNS = {
    "accuracy": "Accuracy",
    "ece": "ECE",
    "mce": "MCE",
    "nll": "NLL",
    "brier": "Brier",
}


def metrics_table(results: dict[str, CalibrationResult]) -> pd.DataFrame:
    """One row per model: the metrics and their tests against chance, before and after T."""
    rows = {}
    for name, r in results.items():
        row = {title: f"{r.metrics[key]:.4f}" for key, title in METRIC_COLUMNS.items()}
        row["Accuracy"] = f"{r.metrics['accuracy']:.2%}"
        row["ECE by chance (mean)"] = f"{r.metrics['ece_chance']:.4f}"
        row["ECE by chance (95 %)"] = f"{r.metrics['ece_floor']:.4f}"
        row["p of the ECE"] = p_value(r.metrics["ece_p_value"])
        row["T"] = f"{r.fit.temperature:.3f}" + (" (bound)" if r.fit.at_bound else "")
        for key in ("ece", "mce", "nll", "brier"):
            row[f"{METRIC_COLUMNS[key]} after T"] = f"{r.tempered[key]:.4f}"
        row["p of the ECE after T"] = p_value(r.tempered["ece_p_value"])
        row["Scaling's effect on the ECE"] = EFFECT_WORDS[r.scaling.effect]
        row["Validation NLL / test NLL"] = f"{r.validation_nll_ratio:.2f}"
        rows[ui.model_title(name)] = row
    return pd.DataFrame.from_dict(rows, orient="index").rename_axis("Model")


def p_value(p: float) -> str:
    """A p-value for people: ``"< 0.001"`` at the resampling's resolution, else 3 digits."""
    return "< 0.001" if p < 0.001 else f"{p:.3f}"


def seen_warning(results: dict[str, CalibrationResult]) -> str | None:
    """The warning for models whose validation images were in their training set, or None."""
    seen = {name: r for name, r in results.items() if r.validation_seen}
    if not seen:
        return None
    listed = "; ".join(
        f"{ui.model_title(name)} ({r.validation_evidence}; T = {r.fit.temperature:.3f})"
        for name, r in seen.items()
    )
    return (
        f"These models were trained on the validation images too: {listed}. A network fits its "
        "training images far better than new ones, so a temperature fitted there makes it more "
        "confident, not calibrated — compare their ECE after T. That is the lesson of "
        "temperature scaling: fit it on data the model never saw. For a held-out fit, train a "
        f"model on the other {60_000 - VALIDATION_SIZE:,} images (the Train page's “Training "
        f"images” slider at {60_000 - VALIDATION_SIZE:,})."
    )


def scaling_headline(results: dict[str, CalibrationResult]) -> str:
    """What temperature scaling did to these models' ECE, counted from the table."""
    held_out = {name: r for name, r in results.items() if not r.validation_seen}
    groups = scaling_counts({name: r.scaling.effect for name, r in held_out.items()})
    off = [n for n, r in held_out.items() if r.metrics["ece_p_value"] < MISCALIBRATED_P]

    def names(members: list[str]) -> str:
        return ", ".join(ui.model_title(n) for n in members) or "none"

    text = (
        f"**Before scaling, {len(off)} of these {len(held_out)} models are measurably "
        f"miscalibrated** (an ECE a perfectly calibrated model reaches by chance less than "
        f"{MISCALIBRATED_P:.0%} of the time): {names(off)}. **Temperature scaling measurably "
        f"lowers the ECE of {len(groups['helps'])}** ({names(groups['helps'])}), **raises it "
        f"for {len(groups['harms'])}** ({names(groups['harms'])}) and makes **no measurable "
        f"change for {len(groups['none'])}** ({names(groups['none'])})."
    )
    if groups["harms"] or groups["none"]:
        text += (
            "\n\nT is chosen to lower the NLL of the held-out images, not the ECE. The NLL is "
            "mostly the few wrong answers, which a higher T softens; the ECE counts every "
            "answer, and the same T moves right answers into lower-confidence bins, where they "
            "become under-confident. A model whose ECE is already at chance has nothing "
            "measurable left to fix."
        )
    return text


def best_score(r: CalibrationResult) -> str:
    """The score with the largest area under the accuracy–coverage curve (first on ties)."""
    return max(r.rejection, key=lambda k: r.rejection[k]["auc"])


def reliability_section(results: dict[str, CalibrationResult], n_samples: int) -> None:
    """Reliability diagrams, before or after temperature scaling, and the metrics table."""
    st.header("Reliability: is 90 % confidence right 90 % of the time?")
    scaled = share.toggle(
        "Apply temperature scaling",
        key="cal_tempered",
        help="Divide the log predictive probabilities by the temperature T fitted on "
        f"{VALIDATION_SIZE:,} held-out training images (never the test set).",
    )
    names = list(results)
    for start in range(0, len(names), COLUMNS):
        for column, name in zip(st.columns(COLUMNS), names[start : start + COLUMNS], strict=False):
            r = results[name]
            bins = r.reliability_tempered if scaled else r.reliability
            metrics = r.tempered if scaled else r.metrics
            suffix = f", T = {r.fit.temperature:.2f}" if scaled else ""
            title = f"{ui.model_title(name)}: ECE {metrics['ece']:.4f}{suffix}"
            with column:
                fig = reliability_figure(
                    bins.edges.numpy(),
                    bins.confidence.numpy(),
                    bins.accuracy.numpy(),
                    bins.count.numpy(),
                    title,
                )
                show_figure(fig, f"cal_reliability_{name}")
    show_table(metrics_table(results), grid=False)
    first = next(iter(results.values()))
    st.caption(
        f"All {first.num_inputs:,} {dataset_info(first.dataset).title} test images, {n_samples} "
        "passes "
        "per prediction (the sidebar's samples). Confidence = the predictive probability of the "
        "answer; 15 equal-width bins. ECE = bin-weighted mean |accuracy − confidence|, MCE = the "
        "largest gap of a non-empty bin (noisy: a bin may hold a handful of inputs), NLL in nats, "
        "Brier = Σ (p − one-hot)². Temperature scaling (Guo et al. 2017) replaces the predictive "
        "probabilities p by p^(1/T), renormalised: T > 1 softens over-confident answers, T < 1 "
        "sharpens; the answer itself and the accuracy never change. ECE by chance: a perfectly "
        "calibrated model with the same confidences still shows an ECE on these images, from "
        "the luck of which answers happen to be right — this mean on average, and above the "
        "95 % figure only 5 % of the time (4,000 redrawn sets of answers). p of the ECE = the "
        "share of those chance ECEs at least as large as the model's: below 0.05 it is "
        "measurably miscalibrated. Scaling's effect: whether the ECE's change under T is "
        "beyond the noise of which test images were drawn (a paired bootstrap, 95 %)."
    )
    st.info(scaling_headline(results))
    warning = seen_warning(results)
    if warning:
        st.warning(warning)


def rejection_section(results: dict[str, CalibrationResult], task: str, n_samples: int) -> str:
    """Accuracy–coverage curves for one score on the test set of ``task``, the AUC table;
    returns the chosen score."""
    st.header('"I don\'t know": reject the most uncertain inputs')
    score = share.selectbox(
        "Uncertainty score",
        list(SCORES),
        index=list(SCORES).index(DEFAULT_SCORE),
        format_func=lambda s: SCORES[s].title,
        key="cal_score",
    )
    curves, points = {}, {}
    for name, r in results.items():
        label = ui.model_title(name)
        found = ui.kept(
            evaluate_dataset, name, checkpoint_dataset(name), n_samples=n_samples, models=[name]
        )
        coverage, accuracy = coverage_curve(found.scores[score], found.correct)
        curves[label] = coverage.numpy(), accuracy.numpy()
        point = r.rejection[score]
        points[label] = (point["coverage"], point["accuracy"])
    # Projected, the table's large type needs the page's width: it goes under the figure.
    left, right = (st.container(), st.container()) if share.presenter() else st.columns([3, 2])
    with left:
        title = f"Accuracy against coverage, rejecting by {SCORES[score].title.lower()}"
        show_figure(coverage_figure(curves, points, title), "cal_coverage")
    with right:
        st.markdown("**Area under the accuracy–coverage curve** (higher = mistakes rejected first)")
        table = pd.DataFrame(
            {
                s.title: [results[name].rejection[key]["auc"] for name in results]
                for key, s in SCORES.items()
            },
            index=pd.Index([ui.model_title(name) for name in results], name="Model"),
        )
        show_table(table.map("{:.4f}".format), grid=False)
        best = [
            f"{ui.model_title(name)}: {SCORES[best_score(r)].title.lower()}"
            for name, r in results.items()
        ]
        st.caption("Best score per model: " + "; ".join(best) + ".")
    st.caption(
        "Sort the test inputs by the score and answer only the least uncertain fraction "
        "(the coverage): the curve is the accuracy on the answered ones. Diamonds: the "
        f'{REJECTION_LIMIT[1:]}th-percentile rule of the Draw page ("I don\'t know" above the '
        "score's 99th percentile on the test set) — "
        + ", ".join(
            f"{ui.model_title(name)} answers {r.rejection[score]['coverage']:.1%} with "
            f"{r.rejection[score]['accuracy']:.2%} accuracy"
            for name, r in results.items()
        )
        + ". Inputs with equal scores count alike, so a score that is the same for every input "
        "(the mutual information, variation ratio and softmax spread of the deterministic MLP) "
        "gives a flat line at the plain accuracy: it cannot reject anything."
    )
    return score


@st.fragment
def shift_section(
    models: list[str], task: str, results: dict[str, CalibrationResult], score: str
) -> None:
    """Curves against severity for one shift, the severity slider and samples; a slider move
    reruns only this fragment."""
    st.header("Dataset shift: does uncertainty rise when accuracy falls?")
    a, b, c = st.columns(3)
    shift = share.selectbox(
        "Shift",
        list(SHIFTS),
        index=list(SHIFTS).index(DEFAULT_SHIFT),
        format_func=lambda s: SHIFTS[s].title,
        key="cal_shift",
        container=a,
    )
    n_inputs = int(
        share.number_input(
            "Test images per severity",
            100,
            10_000,
            DEFAULT_SHIFT_INPUTS,
            step=500,
            key="cal_shift_inputs",
            help="A seeded random subset of the test set, shifted at each severity.",
            container=b,
        )
    )
    n_samples = share.selectbox(
        "Samples per input",
        SHIFT_SAMPLES,
        index=SHIFT_SAMPLES.index(DEFAULT_SHIFT_SAMPLES),
        key="cal_shift_samples",
        help="Monte-Carlo passes per shifted input (also for this part's temperature and "
        "rejection thresholds).",
        container=c,
    )
    info = SHIFTS[shift]
    settings = ShiftSettings(n_inputs=n_inputs, n_samples=n_samples)
    try:
        ui.run_jobs(shift_jobs(models, [shift], settings, title=ui.model_title), SHIFTING)
        found = {
            name: ui.kept(shift_curve, name, shift, settings, models=[name]) for name in models
        }
    except (DatasetUnavailable, CheckpointError) as exc:
        st.error("The shifted test sets could not be evaluated.")
        st.text(str(exc))
        return
    severity = share.select_slider(
        f"Severity: {info.severity}",
        options=list(info.severities),
        value=info.severities[len(info.severities) // 3],
        format_func=lambda v: f"{v:g}",
        key=f"cal_severity_{shift}",
    )
    st.caption(info.description)
    grid = np.asarray(info.severities)
    titles = {name: ui.model_title(name) for name in models}

    def series(field) -> dict[str, np.ndarray]:
        return {titles[n]: np.asarray([field(level) for level in found[n]]) for n in models}

    panels = (
        ("Accuracy", "accuracy", series(lambda v: v.accuracy), None),
        (
            "ECE (dashed: after temperature scaling)",
            "ECE",
            series(lambda v: v.ece),
            series(lambda v: v.ece_tempered),
        ),
        (
            "Mean predictive entropy",
            "nats",
            series(lambda v: v.mean_scores["predictive_entropy"]),
            None,
        ),
        (
            f'"I don\'t know" by {SCORES[score].title.lower()}',
            "fraction rejected",
            series(lambda v: v.rejected[score]),
            None,
        ),
    )
    for row in range(0, len(panels), 2):
        for column, (title, ytitle, values, dashed) in zip(
            st.columns(2), panels[row : row + 2], strict=True
        ):
            with column:
                fig = shift_figure(
                    grid, values, title, info.severity, ytitle, severity, dashed, "after T"
                )
                show_figure(fig, f"cal_shift_{ytitle}")
    at = {name: found[name][info.severities.index(severity)] for name in models}
    table = pd.DataFrame(
        {
            "Accuracy": [f"{at[n].accuracy:.1%}" for n in models],
            "ECE": [f"{at[n].ece:.3f}" for n in models],
            "ECE after T": [f"{at[n].ece_tempered:.3f}" for n in models],
            "NLL": [f"{at[n].nll:.3f}" for n in models],
            "Mean entropy (nats)": [
                f"{at[n].mean_scores['predictive_entropy']:.3f}" for n in models
            ],
            "Mean MI (nats)": [f"{at[n].mean_scores['mutual_information']:.3f}" for n in models],
            '"I don\'t know"': [f"{at[n].rejected[score]:.1%}" for n in models],
            "Accuracy when answering": [
                "–" if at[n].kept_accuracy[score] is None else f"{at[n].kept_accuracy[score]:.1%}"
                for n in models
            ],
        },
        index=pd.Index(
            [titles[n] for n in models], name=f"At {SEVERITY_WORDS[shift].format(severity)}"
        ),
    )
    show_table(table, grid=False)
    try:
        images = ui.kept(shifted_examples, task, shift, severity)
    except DatasetUnavailable as exc:
        st.error("The test set is unavailable.")
        st.text(str(exc))
        return
    st.image(
        enlarge(np.concatenate(list(images[:, 0].numpy()), axis=1)),
        caption=f"The first test image of each class, {info.title.lower()} at {severity:g}",
        clamp=True,
    )
    lines = []
    for name in models:
        answers = ui.kept(
            example_answers, name, shift, float(severity), ui.sample_count(), models=[name]
        )
        limit = results[name].rejection[score]["threshold"]
        marks = [
            "?" if answers.scores[score][k] > limit else f"{p}" + ("" if p == k else "✗")
            for k, p in enumerate(answers.predicted.tolist())
        ]
        lines.append(f"{titles[name]}: " + "  ".join(marks))
    st.text("\n".join(lines))
    st.caption(
        "Each model's answers for the images above, in class order (✗ wrong, ? \"I don't "
        'know" by the '
        f"{SCORES[score].title.lower()} rule of the section above, {ui.sample_count()} passes). "
        f"Curves: {n_inputs:,} test images per severity, {n_samples} passes each. \"I don't "
        f'know" = the {SCORES[score].title.lower()} is above its 99th percentile on the clean '
        "test set (the rule fixed before the shift). The "
        "temperature was fitted on unshifted validation images, as in practice: Ovadia et al. "
        "(2019) found that it does not carry over to shifted data, and that calibration under "
        "shift is where the methods differ."
    )


st.title('Calibration, "I don\'t know" and dataset shift')
st.markdown(
    "A model's confidence is only useful if it can be trusted: of the answers given with 90 % "
    "probability, about 90 % should be right. This page checks that on the MNIST test set, "
    "fixes it with temperature scaling, lets the models refuse the inputs they are least sure "
    'about ("I don\'t know"), and then moves the test set away from the training data — '
    "rotated, noisy, blurred, faded digits — to see whether the confidence falls with the "
    "accuracy."
)

models = [name for name, _ in ui.selected_models()]
if not models:
    st.warning("Choose at least one trained model in the sidebar.")
    st.stop()
tasks = {name: ui.kept(checkpoint_dataset, name, models=[name]) for name in models}
if len(set(tasks.values())) > 1:
    task = share.selectbox(
        "Task",
        sorted(set(tasks.values()), key=lambda d: (d != IN_DISTRIBUTION, d)),
        format_func=lambda d: dataset_info(d).title,
        key="cal_task",
        help="The chosen models were trained on different datasets; each is rated on its own "
        "task's test set.",
    )
    models = [name for name in models if tasks[name] == task]
else:
    task = tasks[models[0]]
n_samples = ui.sample_count()
try:
    ui.run_jobs(calibration_jobs(models, n_samples=n_samples, title=ui.model_title), PREPARING)
    results = {
        name: ui.kept(calibration_result, name, n_samples=n_samples, models=[name])
        for name in models
    }
except (DatasetUnavailable, CheckpointError) as exc:
    st.error("The test data or a checkpoint is unavailable.")
    st.text(str(exc))
    st.stop()

reliability_section(results, n_samples)
chosen_score = rejection_section(results, task, n_samples)
shift_section(models, task, results, chosen_score)
cold_posterior_section()
