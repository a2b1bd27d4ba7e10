"""``python -m core list | train | promote | evaluate``: the registered models.

Training writes to the user-model folder (:func:`core.storage.paths.user_model_dir`), never to
the shipped ``checkpoints/``: an interrupted run cannot destroy a documented model. ``promote``
replaces a shipped checkpoint with the user-trained one, after it finished and loads.
"""

from __future__ import annotations

import datetime
import json
import time
from dataclasses import replace

import torch

from core.data import load_dataset
from core.engine.device import default_device, device_name, library_versions
from core.engine.interface import ModelKind
from core.engine.models import POST_HOC_FITS, build_model
from core.engine.train import EpochStats, train
from core.evaluation.metrics import evaluate_model
from core.progress import text_progress
from core.storage.checkpoints import (
    REGISTRY,
    CheckpointError,
    CheckpointSpec,
    checkpoint_path,
    list_checkpoints,
    load_checkpoint,
    promote,
    save_checkpoint,
)
from core.storage.paths import user_model_dir


def cmd_list(args) -> int:
    """Run ``python -m core list``: print each registered checkpoint and whether it loads.

    User-trained models found in the user-model folder are listed after them.

    Args:
        args: The parsed command line (none are used).

    Returns:
        The exit code: 0.
    """
    for info in list_checkpoints():
        meta = info.metadata
        if not info.available:
            status = f"BROKEN: {info.reason}" if info.path.is_file() else info.reason
        else:
            status = f"test error {meta['test_error']:.2%}" if "test_error" in meta else "ok"
        print(f"{info.spec.name:14s} {info.spec.title:34s} {status}")
    trained = sorted(user_model_dir().glob("*.pt"))
    if trained:
        print(f"user-trained models in {user_model_dir()}: {', '.join(p.stem for p in trained)}")
    return 0


def _metadata(spec, training, history, seconds, device, metrics, n_eval_samples) -> dict:
    return {
        "title": spec.title,
        "training": training.to_dict(),
        "epochs": len(history),
        "test_error": metrics["test_error"],
        "nll": metrics["nll"],
        "n_eval_samples": n_eval_samples,
        "train_seconds": seconds,
        "history": [s.__dict__ for s in history],
        "device": device_name(device),
        "versions": library_versions(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _resume_point(name: str) -> tuple[torch.nn.Module, list[EpochStats], float]:
    """The user-trained model ``name``, its epoch history and training seconds so far."""
    model, meta = load_checkpoint(checkpoint_path(name, user_model_dir()))
    model.requires_grad_(True)
    history = [EpochStats(**d) for d in meta.get("history", [])]
    return model.train(), history, float(meta.get("train_seconds", 0.0))


def _fresh_model(spec: CheckpointSpec) -> torch.nn.Module:
    """A new model of ``spec``, in training mode with gradients on.

    Randomly initialised, or starting from the trained weights of ``spec.base`` (every
    parameter must come from it; buffers may be new).

    Raises:
        CheckpointError: If ``spec.base`` does not load or its weights do not fit ``spec``.
    """
    model = build_model(spec.model)
    if spec.base:
        base, _ = load_checkpoint(spec.base)
        result = model.load_state_dict(base.state_dict(), strict=False)
        buffers = {name for name, _ in model.named_buffers()}
        if result.unexpected_keys or set(result.missing_keys) - buffers:
            raise CheckpointError(
                f"{spec.base}: its weights do not fit {spec.name} "
                f"(missing {result.missing_keys}, unexpected {result.unexpected_keys})"
            )
    return model.requires_grad_(True).train()


def cmd_train(args) -> int:
    """Run ``python -m core train``: train a registered model into the user-model folder.

    The checkpoint is saved atomically after every epoch, so an interrupted run keeps its last
    finished epoch; ``--resume`` continues from it (the learning-rate schedule picks up where
    it stopped; Adam's moments restart).

    Args:
        args: The parsed command line (``name``, ``epochs``, ``resume``, ``eval_samples``,
            ``train_samples``, ``train_subset``, ``threads``).

    Returns:
        The exit code: 0.
    """
    spec = REGISTRY[args.name]
    registered = spec.training
    if args.threads:
        torch.set_num_threads(args.threads)
    device = default_device()
    folder = user_model_dir()
    if args.resume:
        model, history, seconds_before = _resume_point(spec.name)
    else:
        model, history, seconds_before = _fresh_model(spec), [], 0.0
    done = len(history)
    epochs = max(args.epochs or registered.epochs - done, 0)
    post_hoc = POST_HOC_FITS.get(ModelKind(spec.model.kind))
    if epochs < 1 and post_hoc is None:
        print(f"{spec.name}: already trained for {done} epochs; pass --epochs to train more")
        return 0
    training = replace(
        registered,
        epochs=epochs,
        lr=registered.lr * registered.lr_decay**done,
        seed=registered.seed + done,
        **({"n_samples": args.train_samples} if args.train_samples else {}),
    )
    n_train = args.train_subset or None
    start = time.perf_counter()

    fitted: dict = {}

    def metadata(metrics: dict, n_eval_samples: int) -> dict:
        seconds = seconds_before + time.perf_counter() - start
        meta = _metadata(spec, training, history, seconds, device, metrics, n_eval_samples)
        return meta | ({"base": spec.base} if spec.base else {}) | fitted

    def on_epoch(s: EpochStats) -> None:
        s.epoch += done
        history.append(s)
        print(
            f"\nepoch {s.epoch}: nll {s.nll:.4f} kl {s.kl:.0f} train err {s.train_error:.2%} "
            f"test err {s.test_error:.2%} ({s.seconds:.1f}s)"
        )
        metrics = {"test_error": s.test_error, "nll": s.test_nll}
        save_checkpoint(spec.name, model, metadata(metrics, training.n_eval_samples), folder)

    test = load_dataset("mnist", "test")
    train_data = load_dataset("mnist", "train", n_inputs=n_train)
    if epochs > 0:
        progress = text_progress(f"train {spec.name}")
        train(
            model, training, train_data, test, device=device, progress=progress, on_epoch=on_epoch
        )
    if post_hoc is not None:
        model.to(device)
        fitted["posterior"] = post_hoc(model, *(t.to(device) for t in train_data))
        print(f"{spec.name}: post-hoc fit {fitted['posterior']}")
    model.eval()
    metrics = evaluate_model(model, *test, n_samples=args.eval_samples)
    path = save_checkpoint(spec.name, model, metadata(metrics, args.eval_samples), folder)
    print(f"saved {path}: test error {metrics['test_error']:.2%}, NLL {metrics['nll']:.4f}")
    print(f"to ship it in place of checkpoints/{spec.name}.pt: python -m core promote {spec.name}")
    return 0


def cmd_promote(args) -> int:
    """Run ``python -m core promote``: replace a shipped checkpoint with the user-trained one.

    Args:
        args: The parsed command line (``name``).

    Returns:
        The exit code: 0.
    """
    target = promote(args.name)
    print(f"replaced {target} with the user-trained {args.name}")
    return 0


def cmd_evaluate(args) -> int:
    """Run ``python -m core evaluate``: print the MNIST test metrics of a checkpoint.

    Args:
        args: The parsed command line (``checkpoint``, ``samples``, ``json``).

    Returns:
        The exit code: 0.
    """
    model, _ = load_checkpoint(args.checkpoint, default_device())
    metrics = evaluate_model(model, *load_dataset("mnist", "test"), n_samples=args.samples)
    metrics["checkpoint"] = args.checkpoint
    if args.json:
        print(json.dumps(metrics))
    else:
        print(
            f"{args.checkpoint}: test error {metrics['test_error']:.2%}, NLL {metrics['nll']:.4f}"
            f", ECE {metrics['ece']:.4f} ({args.samples} samples)"
        )
    return 0


def register(subparsers) -> None:
    """Add the ``list``, ``train``, ``promote`` and ``evaluate`` sub-commands.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("list", help="list registered checkpoints and check they load")
    p.set_defaults(func=cmd_list)
    p = subparsers.add_parser(
        "train", help="train a registered model into the user-model folder (data/models)"
    )
    p.add_argument("name", choices=sorted(REGISTRY))
    p.add_argument("--epochs", type=int, default=0, help="epochs to run (default: registered)")
    p.add_argument("--resume", action="store_true", help="continue the user-trained checkpoint")
    p.add_argument("--eval-samples", type=int, default=100)
    p.add_argument("--train-samples", type=int, default=0, help="S per step (default: registered)")
    p.add_argument("--train-subset", type=int, default=0, help="training images (0: all 60,000)")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    p.set_defaults(func=cmd_train)
    p = subparsers.add_parser(
        "promote", help="replace a shipped checkpoint with the user-trained one"
    )
    p.add_argument("name", choices=sorted(REGISTRY))
    p.set_defaults(func=cmd_promote)
    p = subparsers.add_parser("evaluate", help="MNIST test metrics of a checkpoint")
    p.add_argument("--checkpoint", required=True, help="registry name or .pt path")
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)
