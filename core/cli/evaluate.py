"""``python -m core evaluate | thresholds``: a checkpoint's metrics, the "I don't know" limits.

``evaluate`` rates a checkpoint on its own task's test set (or the held-out validation split);
``thresholds`` prints, or ships, the shipped models' rejection limits.
"""

from __future__ import annotations

import json

from core.catalogue import REGISTRY
from core.cli.values import SAMPLES, SEED
from core.engine.device import default_device
from core.engine.seeding import seeded
from core.evaluation.metrics import evaluate_model
from core.progress import text_progress
from core.storage.checkpoints import (
    checkpoint_dataset,
    is_shipped,
    load_checkpoint,
    task_title,
)
from core.storage.metadata import partial_note
from core.studies.calibration.validation import held_out_validation
from core.studies.evaluations import (
    SHIPPED_THRESHOLDS,
    rejection_thresholds,
    ship_thresholds,
    test_metrics,
)


def recipe(metadata: dict, dataset: str) -> dict:
    """How a model was trained, from its metadata: its training images and epochs.

    Args:
        metadata: The model's metadata (:func:`~core.storage.checkpoints.read_metadata`).
        dataset: The task dataset (for the text).

    Returns:
        ``train_images`` (int; None for the whole training set; absent when not recorded),
        ``epochs`` (finished), ``epochs_planned`` (those its run asked for, when recorded),
        ``partial`` (:func:`~core.storage.metadata.partial_note`, "" when finished) and
        ``text``, one line, e.g. ``"2,000 MNIST training images, 3 epochs"``.
    """
    training = metadata.get("training")
    planned = metadata.get("epochs_planned")
    if planned is None and isinstance(training, dict):
        planned = training.get("epochs")
    facts: dict = {"epochs": metadata.get("epochs"), "epochs_planned": planned}
    if "train_subset" in metadata:
        facts["train_images"] = metadata["train_subset"]
    images = facts.get("train_images", "")
    title = task_title(dataset)
    if images is None:
        shown = f"all {title} training images"
    elif isinstance(images, int):
        shown = f"{images:,} {title} training images"
    else:
        shown = f"{title} training images (how many was not recorded)"
    done = facts["epochs"]
    epochs = "epochs not recorded" if done is None else f"{done} epoch{'s' * (done != 1)}"
    facts["partial"] = partial_note(metadata)
    facts["text"] = f"{shown}, {epochs}" + (f" ({facts['partial']})" if facts["partial"] else "")
    return facts


def cmd_evaluate(args) -> int:
    """Run ``python -m core evaluate``: print a checkpoint's metrics on its own test set.

    A Fashion-MNIST model is evaluated on the Fashion-MNIST test set, a MNIST model on MNIST's.
    With ``--split validation`` it is rated on the 5,000 training images that a model trained
    with ``--train-subset 55000`` never saw instead: the split to tune settings on, leaving the
    test set for the final number. A model that is not a shipped one (``user:NAME`` or a
    ``.pt`` path elsewhere) is also given its :func:`recipe`, with a note that it is
    user-trained (in JSON: ``shipped`` false and ``recipe``). The Monte-Carlo passes are seeded
    (``--seed``, 0 by default, printed), so the same command always prints the same numbers;
    on the test set they are :func:`~core.studies.evaluations.test_metrics` (cached by the
    file's content: the Home table's and the documents' numbers), with the error's standard
    error over the test images.

    Args:
        args: The parsed command line (``checkpoint``, ``samples``, ``split``, ``seed``,
            ``json``).

    Returns:
        The exit code: 0.

    Raises:
        ValueError: If the validation split is asked for and the model was trained on it.
    """
    model, meta = load_checkpoint(args.checkpoint, default_device())
    dataset = checkpoint_dataset(args.checkpoint)
    shipped = is_shipped(args.checkpoint)
    if args.split == "validation":
        images, labels = held_out_validation(args.checkpoint)
        with seeded(args.seed):
            metrics = evaluate_model(model, images, labels, n_samples=args.samples)
    else:
        metrics = test_metrics(args.checkpoint, n_samples=args.samples, seed=args.seed)
    error = metrics[f"{args.split}_error"] = metrics.pop("test_error")
    metrics.update(
        checkpoint=args.checkpoint,
        dataset=dataset,
        split=args.split,
        shipped=shipped,
        seed=args.seed,
    )
    how = recipe(meta, dataset)
    if not shipped:
        metrics["recipe"] = {k: v for k, v in how.items() if k != "text"}
    if args.json:
        print(json.dumps(metrics))
        return 0
    spread = f" ± {metrics['test_error_se']:.2%}" if "test_error_se" in metrics else ""
    print(
        f"{args.checkpoint}: {task_title(dataset)} {args.split} error {error:.2%}{spread}, "
        f"NLL {metrics['nll']:.4f}, ECE {metrics['ece']:.4f} "
        f"({args.samples} samples, {metrics['num_examples']:,} images, seed {args.seed})"
    )
    if not shipped:
        print(f"recipe: {how['text']}")
        print(
            f"note: {args.checkpoint} is a user-trained model, not a shipped one: its numbers "
            "say how this recipe did, not what the lab's documented models reach"
        )
    return 0


def cmd_thresholds(args) -> int:
    """Run ``python -m core thresholds``: print each shipped model's "I don't know" limits.

    With ``--ship`` they are written to :data:`~core.studies.evaluations.SHIPPED_THRESHOLDS`
    (run it after promoting a checkpoint, so that the Draw page judges at once).

    Args:
        args: The parsed command line (``ship``).

    Returns:
        The exit code: 0.
    """
    names = sorted(REGISTRY)
    if args.ship:
        path = ship_thresholds(names, progress=text_progress("thresholds"))
        print(f"\nwrote {path}")
    for name in names:
        entropy = rejection_thresholds(name)["predictive_entropy"]
        print(f"{name:22s} entropy 90 %: {entropy['p90']:.4f} nats, 99 %: {entropy['p99']:.4f}")
    return 0


def register(subparsers) -> None:
    """Add the ``evaluate`` and ``thresholds`` sub-commands.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("evaluate", help="MNIST test metrics of a checkpoint")
    p.add_argument("--checkpoint", required=True, help="registry name or .pt path")
    p.add_argument("--samples", type=SAMPLES, default=100)
    p.add_argument("--seed", type=SEED, default=0, help="seed of the Monte-Carlo passes")
    p.add_argument(
        "--split",
        choices=("test", "validation"),
        default="test",
        help="test set, or the 5,000 training images that --train-subset 55000 leaves out",
    )
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)
    p = subparsers.add_parser(
        "thresholds", help="the shipped models' \"I don't know\" limits (their test sets)"
    )
    p.add_argument("--ship", action="store_true", help=f"write them to {SHIPPED_THRESHOLDS.name}")
    p.set_defaults(func=cmd_thresholds)
