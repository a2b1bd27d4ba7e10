"""Pure-PyTorch engine of the Bayesian neural network lab (never imports streamlit).

Packages, from the bottom up:

* :mod:`core.engine`: layers, priors, the model kinds, the Monte-Carlo sampler, the ELBO
  estimators, the samplers (SGLD, SWAG) and the training loop;
* :mod:`core.methods`: the inference methods, one module each (model, training procedure,
  settings), their registry and the one factory;
* :mod:`core.evaluation`: uncertainty summaries, metrics, attacks, pruning — pure functions of
  models and tensors, no disk;
* :mod:`core.storage`: paths, atomic writes, checkpoints and the one disk cache;
* :mod:`core.studies`: what combines them and is cached (dataset evaluations, OOD tables,
  robustness and pruning curves, speed benchmarks);
* :mod:`core.data`: the dataset catalogue and loader;
* :mod:`core.cli`: ``python -m core <command>``, one module per command group.

The names below are the public API.
"""

from core.catalogue import REGISTRY, list_checkpoints
from core.data import DatasetUnavailable, list_datasets, load_dataset
from core.engine.interface import LabModel, ModelConfig
from core.engine.objective import minibatch_objective
from core.engine.sampler import predictive_logits, predictive_samples
from core.evaluation.metrics import evaluate_model
from core.evaluation.uncertainty import SCORES, PredictiveSummary, summarize
from core.methods import METHODS, build_model
from core.progress import Job, ProgressFn, run_all
from core.storage.checkpoints import CheckpointError, load_checkpoint, save_checkpoint
from core.studies.evaluations import evaluate_dataset
from core.training import TrainConfig, train

__version__ = "0.2.0"

__all__ = [
    "METHODS",
    "REGISTRY",
    "SCORES",
    "CheckpointError",
    "DatasetUnavailable",
    "Job",
    "LabModel",
    "ModelConfig",
    "PredictiveSummary",
    "ProgressFn",
    "TrainConfig",
    "build_model",
    "evaluate_dataset",
    "evaluate_model",
    "list_checkpoints",
    "list_datasets",
    "load_checkpoint",
    "load_dataset",
    "minibatch_objective",
    "predictive_logits",
    "predictive_samples",
    "run_all",
    "save_checkpoint",
    "summarize",
    "train",
]
