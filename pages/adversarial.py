"""Adversarial examples: FGSM at a chosen ε on a few digits, accuracy and uncertainty against ε
for each model (naive or EOT gradients, white-box or transferred from the MLP), and a targeted
iterative attack with the trajectory of class probabilities.

Each model is attacked on its own task's test set (MNIST, or Fashion-MNIST); when the chosen
models span both tasks, a radio button picks one."""

import numpy as np
import streamlit as st

from app import share, ui
from app.figures import show_figure, show_table
from app.figures.adversarial import curve_figure, tile, trajectory_figure
from core.data import class_examples
from core.engine.sampler import predictive_samples
from core.evaluation.attacks import perturb
from core.storage.checkpoints import TASK_DATASETS, CheckpointError, checkpoint_dataset, task_title
from core.studies.robustness import (
    EPS_GRID,
    CurveSettings,
    RobustnessCurve,
    TrajectorySettings,
    cached_curve,
    class_grid_direction,
    curve_jobs,
    is_cached,
    targeted_trajectory,
)

SOURCES = {"mnist": "mlp", "fashion_mnist": "fashion_mlp"}  # transfer attacks' crafter per task
MAX_EPS = 0.3
DEFAULT_K = 20
GRIDS = {
    "report seed: 0, 0.05, …, 0.2": EPS_GRID,
    "fine: 0 to 0.3 by 0.025": tuple(round(0.025 * i, 3) for i in range(13)),
}
SUBSET_SIZES = (200, 500, 1000, 2000, 5000, 10000)
CURVE_SAMPLES = (10, 20, 50, 100)
CURVES_MESSAGE = "Attacking the test subset (once, then cached on disk)"
CURVE_PANELS = (  # (column, chart key, curve fields → legend labels, title, y axis), in order
    (0, "adv_accuracy", {"accuracy": ""}, "Accuracy on FGSM examples", "accuracy"),
    (0, "adv_entropy", {"entropy": ""}, "Mean predictive entropy", "nats"),
    (
        1,
        "adv_auroc",
        {"auroc_entropy": "entropy", "auroc_mutual_information": "mutual information"},
        "AUROC of telling adversarial from clean inputs",
        "AUROC",
    ),
    (1, "adv_mi", {"mutual_information": ""}, "Mean mutual information", "nats"),
)


def gradient_passes(crafter: str, k: int) -> int:
    """Passes per gradient of checkpoint ``crafter``: k when it is stochastic, else 1 (a
    deterministic model's gradient does not depend on k, so its results are shared)."""
    return k if ui.load_model(crafter).stochastic else 1


def curve_settings(models: dict, k: int, source: str | None, **kw) -> dict[str, CurveSettings]:
    """Per model: its settings, with the gradient passes of the model crafting the attack."""
    return {
        name: CurveSettings(n_attack_samples=gradient_passes(source or name, k), **kw)
        for name in models
    }


def at_eps(curve: RobustnessCurve, field: str, eps: float) -> tuple[float, float]:
    """(grid ε nearest to ``eps``, the curve's ``field`` there)."""
    i = int(np.argmin(np.abs(np.asarray(curve.eps) - eps)))
    return curve.eps[i], getattr(curve, field)[i]


def caption(curves: dict, other: dict | None, eps: float, k: int, transfer: bool, size: int):
    """The measured accuracies at the slider's ε, the other gradient mode's where cached, and
    the caveats."""
    grid_eps = at_eps(next(iter(curves.values())), "accuracy", eps)[0]
    grad = f"EOT, k = {k}" if k > 1 else "naive, k = 1"
    how = (
        "transferred from the MLP, whose gradient has no noise"
        if transfer
        else "white-box, " + grad
    )
    parts = [
        f"Accuracy at ε = {grid_eps:g} ({how}, {size} test images): "
        + ", ".join(
            f"{ui.model_title(m)} {at_eps(c, 'accuracy', eps)[1]:.1%}" for m, c in curves.items()
        )
        + "."
    ]
    if other:
        label = "naive (k = 1)" if k > 1 else "EOT"
        parts.append(
            f"With {label} gradients: "
            + ", ".join(
                f"{ui.model_title(m)} {at_eps(c, 'accuracy', eps)[1]:.1%}" for m, c in other.items()
            )
            + "."
        )
    parts.append(
        "Caveats: robustness that vanishes when the gradient averages k > 1 passes is gradient "
        "noise (an obfuscated gradient), not robustness: compare the naive and EOT curves. "
        "FGSM is one step, so these accuracies are upper bounds on robust accuracy (iterative "
        "attacks do better). "
        f"{size:,} test images give a standard error of up to ±{50 / size**0.5:.1f} points. "
        "AUROC is 0.5 at ε = 0 by construction, and a deterministic MLP has zero mutual "
        "information everywhere."
    )
    return " ".join(parts)


st.title("Adversarial examples")
st.markdown(
    "The **fast gradient sign method** (Goodfellow et al. 2015) moves every pixel by ±ε in the "
    "direction that raises the loss: x′ = clip(x + ε·sign(∇ₓ loss), 0, 1). For a stochastic "
    "model the loss is the negative log of its Monte-Carlo predictive mean: a **naive** attack "
    "differentiates one random pass (k = 1); **EOT** (expectation over transformation) "
    "averages k passes, the honest attack on a Bayesian model. A **transfer** attack crafts "
    "the examples on the plain MLP and shows them to every model."
)
models = dict(ui.selected_models())
n_samples = ui.sample_count()
if not models:
    st.warning("Choose at least one trained model in the sidebar.")
    st.stop()
tasks = [t for t in TASK_DATASETS if any(checkpoint_dataset(m) == t for m in models)]
task = tasks[0]
if len(tasks) > 1:
    task = share.radio(
        "Task (each model is attacked on its own test set)",
        tasks,
        format_func=task_title,
        horizontal=True,
        key="adv_task",
    )
    st.text(  # may hold user-trained model names
        "Left out (another task): "
        + ", ".join(ui.model_title(m) for m in models if checkpoint_dataset(m) != task)
    )
    models = {m: model for m, model in models.items() if checkpoint_dataset(m) == task}
SOURCE = SOURCES.get(task, "mlp")
test_images, test_labels = ui.require_test_set(task)

eps_col, mode_col, grad_col = st.columns([2, 1, 1])
eps = share.slider("ε", 0.0, MAX_EPS, 0.1, 0.01, key="adv_eps", format="%.2f", container=eps_col)
transfer = share.radio(
    "Attack", ("White-box", "Transfer from the MLP"), key="adv_mode", container=mode_col
) != ("White-box")
eot = share.radio(
    "Gradient", ("Naive (k = 1)", "EOT (k passes)"), key="adv_grad", container=grad_col
) != ("Naive (k = 1)")
k = int(share.number_input("k", 2, 200, DEFAULT_K, key="adv_k", container=grad_col)) if eot else 1
source = SOURCE if transfer else None
if transfer:
    try:
        ui.load_model(SOURCE)
    except CheckpointError as exc:
        st.error(f"Transfer attacks need the {task_title(task)} MLP checkpoint: {exc}")
        st.stop()

# --- examples ------------------------------------------------------------------------------
st.subheader(f"Perturbed digits at ε = {eps:.2f}")
x, y = class_examples(task)
pictures, predictions = st.columns([3, 2])
clean = "Clean test digits" if task == "mnist" else f"Clean {task_title(task)} test images"
pictures.image(tile([x[:, 0].numpy()]), caption=clean, clamp=True)
table, shown = {}, set()
for name, model in models.items():
    crafter = source or name
    direction = class_grid_direction(crafter, gradient_passes(crafter, k))
    adv = perturb(x, direction, eps)
    prob, pred = predictive_samples(model, adv, n_samples).mean(0).cpu().max(-1)
    table[ui.model_title(name)] = [
        f"{p} ({q:.0%})" + ("" if p == t else " ✗")
        for p, q, t in zip(pred.tolist(), prob.tolist(), y.tolist(), strict=True)
    ]
    if crafter not in shown:
        shown.add(crafter)
        who = "Crafted on the MLP, shown to every model" if transfer else ui.model_title(name)
        pictures.image(
            tile([0.5 + 0.5 * direction[:, 0].numpy(), adv[:, 0].numpy()]),
            caption=f"{who}: sign of the gradient (white +ε, black −ε), adversarial digits",
            clamp=True,
        )
predictions.markdown(f"**Predicted class (mean probability)**, ✗ = wrong, {n_samples} passes")
with predictions:
    show_table({"true class": [str(t) for t in y.tolist()], **table})

# --- curves --------------------------------------------------------------------------------
st.subheader("Accuracy and uncertainty against ε")
size_col, samples_col, grid_col = st.columns(3)
size = int(
    share.selectbox("Test images", SUBSET_SIZES, index=2, key="adv_size", container=size_col)
)
curve_samples = share.selectbox(
    "Passes per prediction",
    CURVE_SAMPLES,
    index=1,
    key="adv_curve_samples",
    help="Monte-Carlo passes of each model's predictive on the attacked test subset.",
    container=samples_col,
)
grid = GRIDS[share.selectbox("ε grid", list(GRIDS), key="adv_grid", container=grid_col)]
common = {"eps": grid, "n_inputs": size, "n_eval_samples": int(curve_samples)}
settings = curve_settings(models, k, source, **common)
ui.run_jobs(curve_jobs(settings, source, title=ui.model_title), CURVES_MESSAGE)
curves = {m: cached_curve(m, settings[m], source) for m in models}
other_k = 1 if k > 1 else DEFAULT_K
other_settings = curve_settings(models, other_k, source, **common)
other = None
if any(other_settings[m] != settings[m] for m in models) and all(
    is_cached(m, other_settings[m], source) for m in models
):
    other = {m: cached_curve(m, other_settings[m], source) for m in models}

columns = st.columns(2)
by_title = {ui.model_title(m): curve for m, curve in curves.items()}
for side, key, fields, title, axis in CURVE_PANELS:
    with columns[side]:
        show_figure(curve_figure(by_title, fields, title, axis, eps), key)
st.caption(caption(curves, other, eps, k, transfer, size))

# --- targeted attack -----------------------------------------------------------------------
st.subheader("Targeted iterative FGSM")
st.markdown(
    "x ← clip(x − α·sign(∇ₓ −log p̄(target | x)), 0, 1), repeated, and kept within ε of the "
    "clean digit (Kurakin et al. 2017). It uses the gradient mode chosen above (white-box)."
)
model_col, digit_col, target_col = st.columns(3)
target_name = share.selectbox(
    "Model",
    list(models),
    format_func=ui.model_title,
    key="adv_target_model",
    container=model_col,
)
index = int(
    share.number_input(
        "Test image #", 0, len(test_labels) - 1, 0, key="adv_idx", container=digit_col
    )
)
target = int(
    share.selectbox("Target class", range(10), index=3, key="adv_target", container=target_col)
)
step_col, steps_col, budget_col = st.columns(3)
step = share.slider(
    "Step α", 0.002, 0.05, 0.01, 0.002, key="adv_step", format="%.3f", container=step_col
)
steps = share.slider("Iterations", 1, 100, 30, key="adv_steps", container=steps_col)
budget = share.slider("Budget ε", 0.01, MAX_EPS, 0.2, 0.01, key="adv_budget", container=budget_col)
attack = TrajectorySettings(
    index, target, step, steps, budget, gradient_passes(target_name, k), n_samples
)
with st.spinner("Running the targeted attack…"):
    trajectory = targeted_trajectory(target_name, attack)
adv_image, probs = trajectory.adversarial.numpy(), trajectory.probs.numpy()
clean_image = test_images[index, 0].numpy()
pictures, plot = st.columns([1, 2])
with pictures:
    st.image(
        tile(
            [
                clean_image[None],
                (0.5 + (adv_image - clean_image) / (2 * budget))[None],
                adv_image[None],
            ]
        ),
        clamp=True,
    )
    st.caption(
        f"Clean (label {int(test_labels[index])}), perturbation (scaled to ±ε), adversarial."
    )
    st.metric(
        f"p(target {target}) after {steps} iterations",
        f"{probs[-1][target]:.1%}",
        f"{100 * (probs[-1][target] - probs[0][target]):+.1f} points",
    )
    st.markdown(f"Predicted class: {int(probs[0].argmax())} → **{int(probs[-1].argmax())}**")
with plot:
    show_figure(trajectory_figure(probs, target), "adv_trajectory")
