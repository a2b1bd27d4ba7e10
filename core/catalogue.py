"""The catalogue of shipped models: what each registered name means and how it is trained.

:data:`REGISTRY` maps a name (the file stem of ``checkpoints/NAME.pt``) to its
:class:`~core.storage.checkpoints.CheckpointSpec`: title, description, architecture, training
settings, base model and task. :func:`list_checkpoints` lists them with whether their files
load, and :func:`promote` replaces a shipped file with a user-trained one. The file format
itself (saving, loading, metadata, the user folder) is :mod:`core.storage.checkpoints`.

It also holds the regression playground's table (:data:`REGRESSION_VARIANTS`,
:data:`REGRESSION_KINDS`): data that names methods lives here or in their packages.
"""

from __future__ import annotations

from pathlib import Path

from core.atomic import remove_stale_temporaries
from core.methods import ModelConfig
from core.methods.base import MIXTURE_SIGMA2
from core.paths import CHECKPOINT_DIR, user_model_dir
from core.storage.checkpoints import (
    CheckpointError,
    CheckpointInfo,
    CheckpointSpec,
    checkpoint_path,
    checkpoint_problem,
    copy_atomically,
    load_checkpoint,
    read_metadata,
)
from core.storage.metadata import partial_note
from core.training import TrainConfig

MIXTURE_PRIOR = {"prior": "mixture", "pi": 0.5, "sigma1": 1.0, "sigma2": 0.0024787521766663585}
"""Blundell et al.'s scale mixture ½·N(0, 1) + ½·N(0, e⁻⁶), as a method's prior parameters."""
SGMCMC_PARAMS = {"members": 8, "prior": "gaussian", "prior_sigma": 0.3}
"""The shipped SG-MCMC models' sample count and prior N(0, 0.3²)."""
BASELINE_KIND = "mlp"
"""The baseline network, a point estimate: what the studies set a Bayesian network beside
(the timing study's and the peer benchmark's floor)."""
BAYESIAN_KIND = "bbb"
"""The Bayesian network whose S-sample ELBO estimators the timing study and the peer benchmark
time (its ``impl`` parameter)."""
TRAIN_SUBSET = 55_000
"""Training images of the shipped models trained here: the first 55,000 of the seeded order, so
that the last 5,000 (:data:`core.studies.calibration.validation.VALIDATION_SIZE`) stay unseen
for the temperature fit. Their epochs are the 60,000-image recipe's × 60/55: the same number of
steps."""

REGISTRY: dict[str, CheckpointSpec] = {
    spec.name: spec
    for spec in [
        CheckpointSpec(
            "bbb_gaussian",
            "BBB (Gaussian prior)",
            "Bayes by Backprop, prior N(0, 1), KL weight β = 0.1, weight sampling.",
            ModelConfig(kind="bbb", params={"beta": 0.1, "impl": "vmap"}),
            TrainConfig(epochs=33, lr_decay=0.95),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "bbb_mixture",
            "BBB (scale-mixture prior)",
            "Bayes by Backprop, prior ½·N(0, 1) + ½·N(0, e^-12), KL weight β = 0.1.",
            ModelConfig(kind="bbb", params=MIXTURE_PRIOR | {"beta": 0.1, "impl": "fused"}),
            TrainConfig(epochs=655, lr_decay=0.995),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "bbb_lrt",
            "BBB (local reparameterisation)",
            "Bayes by Backprop, prior N(0, 1), KL weight β = 0.1, local reparameterisation.",
            ModelConfig(kind="bbb", params={"beta": 0.1, "impl": "vmap_lrt"}),
            TrainConfig(epochs=33, lr_decay=0.95),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "mlp",
            "MLP",
            "Plain 784-400-400-10 ReLU network, point estimate.",
            ModelConfig(kind="mlp"),
            TrainConfig(epochs=16, lr_decay=0.9),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "dropout_mlp",
            "MC dropout MLP",
            "784-400-400-10 ReLU network, dropout 0.5 kept on at prediction (MC dropout).",
            ModelConfig(kind="dropout", params={"dropout": 0.5}),
            TrainConfig(epochs=33, lr_decay=0.93),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "dropout_alpha",
            "MC dropout, α = 0.5",
            "784-400-400-10 ReLU network, dropout 0.5, trained with the α-divergence energy "
            "(α = 0.5, K = 10 dropout samples per input; Li & Gal 2017).",
            ModelConfig(kind="dropout", params={"dropout": 0.5, "n_samples": 10, "alpha": 0.5}),
            TrainConfig(epochs=33, lr_decay=0.93),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "ensemble",
            "Deep ensemble (5 MLPs)",
            "Five 784-400-400-10 ReLU networks from independent random starts, trained in one "
            "vectorised loop with adversarial training (FGSM, ε = 0.01); the predictive "
            "averages their softmax (Lakshminarayanan et al. 2017).",
            ModelConfig(kind="ensemble", params={"members": 5, "adversarial_eps": 0.01}),
            TrainConfig(epochs=22, lr_decay=0.9),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "laplace",
            "Laplace (last layer, KFAC)",
            "The MLP with a Gaussian posterior on its last layer: Kronecker-factored Laplace "
            "approximation, prior precision by marginal likelihood (Daxberger et al. 2021).",
            ModelConfig(kind="laplace"),
            TrainConfig(epochs=0),
            base="mlp",
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "sgld",
            "SGLD, cold T = 0.001 (samples barely differ)",
            "784-400-400-10 ReLU network trained by stochastic-gradient Langevin dynamics "
            "(prior N(0, 0.3²), step as SGD's learning rate 0.5 decayed ×0.95 per epoch; "
            "Welling & Teh 2011) at a cold temperature T = 0.001: the posterior tempered a "
            "thousandfold, so its 8 networks, kept over the last half of 65 epochs, barely "
            "differ and act as one network. SGLD (T = 1) is the same recipe at the posterior.",
            ModelConfig(kind="sgld", params=SGMCMC_PARAMS | {"temperature": 0.001, "burn_in": 0.5}),
            TrainConfig(epochs=65, lr=0.5, lr_decay=0.95),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "sgld_t1",
            "SGLD, T = 1 (8 posterior samples)",
            "784-400-400-10 ReLU network sampled by stochastic-gradient Langevin dynamics at "
            "T = 1, the Bayesian posterior itself (prior N(0, 0.3²), step as SGD's learning "
            "rate 0.5 decayed ×0.95 per epoch); 8 samples kept over the last half of 65 epochs "
            "(Welling & Teh 2011).",
            ModelConfig(kind="sgld", params=SGMCMC_PARAMS | {"temperature": 1.0, "burn_in": 0.5}),
            TrainConfig(epochs=65, lr=0.5, lr_decay=0.95),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "sgmcmc_cyclic",
            "Cyclical SG-MCMC (4 cycles)",
            "784-400-400-10 ReLU network sampled by cyclical SGLD: 4 cosine step-size cycles "
            "of 16¼ epochs (warm restarts, step as SGD's learning rate 0.5), 80 % exploration, "
            "2 samples at the end of each cycle (prior N(0, 0.3²), T = 0.01; Zhang et al. 2020).",
            ModelConfig(
                kind="sgmcmc_cyclic",
                params=SGMCMC_PARAMS | {"temperature": 0.01, "cycles": 4, "exploration": 0.8},
            ),
            TrainConfig(epochs=65, lr=0.5),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "swag",
            "SWAG (rank 6)",
            "784-400-400-10 ReLU network trained by SGD with momentum 0.9 (learning rate 0.1); "
            "a Gaussian (diagonal plus rank 6) fitted to 12 of its iterates in the second half "
            "of training (Maddox et al. 2019).",
            ModelConfig(kind="swag", params={"rank": 6, "burn_in": 0.5}),
            TrainConfig(epochs=22, lr=0.1, weight_decay=0.01),
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "fashion_mlp",
            "MLP (Fashion-MNIST)",
            "Plain 784-400-400-10 ReLU network trained on Fashion-MNIST, point estimate.",
            ModelConfig(kind="mlp"),
            TrainConfig(epochs=16, lr_decay=0.85),
            dataset="fashion_mnist",
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "fashion_dropout",
            "MC dropout MLP (Fashion-MNIST)",
            "784-400-400-10 ReLU network trained on Fashion-MNIST, dropout 0.5 kept on at "
            "prediction (MC dropout).",
            ModelConfig(kind="dropout", params={"dropout": 0.5}),
            TrainConfig(epochs=33, lr_decay=0.93),
            dataset="fashion_mnist",
            train_subset=TRAIN_SUBSET,
        ),
        CheckpointSpec(
            "fashion_bbb_mixture",
            "BBB, scale mixture (Fashion-MNIST)",
            "Bayes by Backprop trained on Fashion-MNIST, prior ½·N(0, 1) + ½·N(0, e^-12), "
            "KL weight β = 0.1.",
            ModelConfig(kind="bbb", params=MIXTURE_PRIOR | {"beta": 0.1, "impl": "vmap"}),
            TrainConfig(epochs=22, lr_decay=0.92),
            dataset="fashion_mnist",
            train_subset=TRAIN_SUBSET,
        ),
    ]
}


# --- the regression playground's methods (core.regression.variants reads these) ------------

REGRESSION_KINDS: dict[str, dict] = {
    "bbb": {
        "defaults": {"beta": 1.0, "init_sigma": 1e-2, "n_samples": 4},
        "fixed": {"impl": "vmap", "kl_schedule": "uniform"},
    },
    "dropout": {"defaults": {"dropout": 0.1}},
    "ensemble": {"members_are_passes": True},
    "sgld": {
        "defaults": {"members": 50},
        "fixed": {"lr": 2e-3, "burn_in": 0.5, "precondition": True},
    },
    "sgmcmc_cyclic": {
        "defaults": {"members": 50},
        "fixed": {"lr": 8e-3, "exploration": 0.5, "precondition": True},
    },
    "swag": {"defaults": {"rank": 10}, "fixed": {"lr": 1e-2, "burn_in": 0.5, "precondition": True}},
}
"""What the regression playground sets for a method of each kind on a 1-100-1 network, where
it differs from the method's own (a method without an entry is fitted with its own settings):

* ``defaults``: its offered settings' starting values (e.g. BBB's initial σ 10⁻², S = 4, the
  full ELBO β = 1);
* ``fixed``: values the playground sets and does not offer, parameters of the method or fields
  of :class:`~core.training.TrainConfig` (the samplers' and SWAG's step: pSGLD at 2·10⁻³,
  cyclical SG-MCMC starting its cycles at 4× that, SWAG's Adam iterates at 10⁻²; BBB's
  weight sampling, and its KL schedule, which one full batch makes moot);
* ``members_are_passes``: its networks are its ``members``, each with its own learned noise
  level and one pass at prediction (a deep ensemble's maximum-likelihood members)."""

REGRESSION_VARIANTS: dict[str, dict] = {
    "bbb": {
        "kind": "bbb",
        "title": "BBB, Gaussian prior",
        "notice": "Mean-field VI: the band widens away from the data, but is often too narrow "
        "between clusters and too wide on the data when β = 1 (the KL pulls the weights to the "
        "prior).",
        "first": True,
    },
    "bbb_mixture": {
        "kind": "bbb",
        "title": "BBB, scale-mixture prior",
        "notice": "Blundell's spike-and-slab-like prior lets many weights sit at zero with tiny "
        "σ: compare its band with the Gaussian prior's.",
        "fixed": {"prior": "mixture", "pi": 0.5, "sigma2": MIXTURE_SIGMA2},
    },
    "bbb_lrt": {
        "kind": "bbb",
        "title": "BBB + local reparameterisation",
        "notice": "The same posterior as BBB with a Gaussian prior, trained with lower-variance "
        "gradients: the picture should match BBB's, in similar time.",
        "fixed": {"impl": "vmap_lrt"},
    },
    "dropout": {
        "kind": "dropout",
        "title": "MC dropout",
        "notice": "Dropout's band grows roughly linearly away from the data but does not widen "
        "between the clusters; its width is set by p, not by the data.",
        "first": True,
    },
    "ensemble": {
        "kind": "ensemble",
        "title": "Deep ensemble",
        "notice": "M independently initialised networks agree on the data and disagree away "
        "from it: often the closest to HMC in shape, with only M distinct curves.",
        "first": True,
    },
    "mlp": {
        "kind": "mlp",
        "title": "Plain MLP",
        "notice": "One network, no epistemic uncertainty: the band is the noise only and does "
        "not widen anywhere, however far from the data.",
    },
    "sgld": {
        "kind": "sgld",
        "title": "SGLD (Langevin samples)",
        "notice": "Gradient steps plus noise, on the whole data set: with a small enough step "
        "the kept networks are posterior samples of the same network and prior as HMC's, so its "
        "band should approach HMC's; with too few steps it stays too narrow.",
    },
    "sgmcmc_cyclic": {
        "kind": "sgmcmc_cyclic",
        "title": "Cyclical SG-MCMC",
        "notice": "The step size restarts large in every cycle, so the chain can leave one mode "
        "for another before sampling at small steps: compare its band with SGLD's and HMC's.",
    },
    "swag": {
        "kind": "swag",
        "title": "SWAG",
        "notice": "A Gaussian fitted to the weights SGD visits in the second half of training: "
        "the band reflects how far SGD wanders, not the posterior itself.",
    },
    "hmc": {
        "kind": "mlp",
        "title": "HMC (NUTS) reference",
        "notice": "Samples from the exact posterior of the same network and prior (up to "
        "Monte-Carlo error): the picture the approximations try to match.",
        "nuts": True,
        "first": True,
    },
}
"""The regression playground's methods in display order: a method's kind with some of its
parameters ``fixed`` (the mixture prior, local reparameterisation), its title and what to look
for in its picture (``notice``), whether the page shows it ``first`` (their fits of every
preset's default data ship with the lab) and whether it is sampled by ``nuts`` instead of
trained (the HMC reference, a plain MLP's exact posterior). A method that can fit a regression
and has no entry here is listed under its own kind, before the NUTS reference."""
# --- the contextual bandits (core.bandits) --------------------------------------------------

BANDIT_PARAMS: dict[str, dict] = {
    "bbb": {"init_sigma": 0.02, "impl": "vmap_lrt", "beta": 1.0},
    "dropout": {"dropout": 0.2},
    "sgld": {"members": 5, "lr": 0.01},
}
"""A bandit's reward networks' parameters where they differ from their methods' defaults, by
kind: the method's parameters and :class:`~core.training.TrainConfig` fields (SGLD's step is
its own learning rate). BBB starts narrow (σ = 0.02), trains with local reparameterisation
on the full ELBO (β = 1); MC dropout drops 20 % of the units."""

BANDIT_FLAT_NAMES: dict[str, tuple[str, str | None, dict | None]] = {
    "prior": ("prior", None, None),
    "prior_sigma": ("prior_sigma", None, None),
    "prior_pi": ("pi", None, None),
    "prior_sigma1": ("sigma1", None, None),
    "prior_sigma2": ("sigma2", None, None),
    "init_sigma": ("init_sigma", None, None),
    "kl_beta": ("beta", None, None),
    "kl_schedule": ("kl_schedule", None, {"constant": "uniform", "geometric": "blundell"}),
    "lrt": ("impl", None, {True: "vmap_lrt", False: "vmap"}),
    "dropout": ("dropout", None, None),
    "members": ("members", None, None),
    "sgld_lr": ("lr", "sgld", None),
}
"""The bandit's flat names of reward-network parameters (``--set prior_sigma1=0.37``, the
stored runs' settings and file names): name → (the parameter, the one kind it belongs to or
None for every method that has it, the flat values' parameter values or None for the same)."""

BANDIT_DEFAULT_AGENTS: dict[str, tuple[str, ...]] = {
    "mushroom": ("bbb", "dropout", "ensemble", "greedy", "eps1", "eps5", "random"),
    "wheel": ("bbb", "dropout", "ensemble", "greedy", "eps1", "eps5", "random", "lints"),
}
"""The agents a bandit run has unless told otherwise, by environment."""

BANDIT_COLOR_ORDER = (
    "bbb",
    "dropout",
    "ensemble",
    "greedy",
    "eps1",
    "eps5",
    "random",
    "lints",
    "sgld",
)
"""Agents in the order of their colours in every bandit figure (others follow)."""

BANDIT_FEATURED = "bbb"
"""The agent whose regret the Bandits page explains (Blundell et al.'s BBB Thompson)."""


def default_models(available: list[str]) -> list[str]:
    """Pick the models the pages compare by default (the sidebar's first choice).

    Args:
        available: Registry names of the checkpoints that load.

    Returns:
        A BBB network (scale-mixture prior, else Gaussian), the MLP and MC dropout, those of
        them that are available.
    """
    bbb = next((n for n in ("bbb_mixture", "bbb_gaussian") if n in available), None)
    return [n for n in (bbb, "mlp", "dropout_mlp") if n is not None and n in available]


def first_shipped(kind: str, dataset: str = "mnist") -> str | None:
    """The checkpoint a study takes for a method: its first registered one on ``dataset``.

    Args:
        kind: A method's kind.
        dataset: The task (``"mnist"`` or ``"fashion_mnist"``).

    Returns:
        Its registry name (e.g. ``"bbb_gaussian"`` for ``"bbb"``), or None when none is
        registered.
    """
    return next(
        (s.name for s in REGISTRY.values() if s.model.kind == kind and s.dataset == dataset),
        None,
    )


def list_checkpoints(
    directory: Path | None = None, dataset: str | None = None
) -> list[CheckpointInfo]:
    """Every registered checkpoint, with whether its weights file is present and loads.

    Each file is loaded once per version to check it; stale temporary files in the folder are
    removed.

    Args:
        directory: The folder; None for the shipped ``checkpoints/`` folder.
        dataset: Only the specs trained on this dataset (e.g. ``"mnist"``); None for all.

    Returns:
        One entry per registered name, in registry order.
    """
    infos = []
    folder = directory or CHECKPOINT_DIR
    remove_stale_temporaries(folder)
    for spec in REGISTRY.values():
        if dataset is not None and spec.dataset != dataset:
            continue
        path = checkpoint_path(spec.name, directory)
        problem = checkpoint_problem(path)
        metadata = {} if problem else read_metadata(path)
        infos.append(CheckpointInfo(spec, path, not problem, problem, metadata))
    return infos


def promote(name: str, source_dir: Path | None = None) -> Path:
    """Replace the shipped ``checkpoints/NAME.pt`` (and ``.json``) with the user-trained one.

    The user-trained checkpoint is loaded first to check it, and a partial one
    (:func:`partial_note`) is refused. Each file is copied atomically, so the previous shipped
    file stays in place until the new one is complete.

    Args:
        name: A registered checkpoint name.
        source_dir: Folder of the user-trained checkpoint; None for
            :func:`~core.paths.user_model_dir`.

    Returns:
        The shipped ``.pt`` path.

    Raises:
        CheckpointError: If ``name`` is not registered, or the user-trained checkpoint does
            not load or did not finish training.
    """
    if name not in REGISTRY:
        raise CheckpointError(f"{name}: not a registered checkpoint ({', '.join(REGISTRY)})")
    source = checkpoint_path(name, source_dir or user_model_dir())
    _, meta = load_checkpoint(source)  # raises a one-line CheckpointError if it does not load
    partial = partial_note(meta)
    if partial:
        raise CheckpointError(
            f"{source}: not promoted, its training did not finish ({partial}); "
            f"finish it with `python -m core train {name} --resume`"
        )
    target = checkpoint_path(name)
    copy_atomically(source, target)
    if source.with_suffix(".json").is_file():
        copy_atomically(source.with_suffix(".json"), target.with_suffix(".json"))
    return target
