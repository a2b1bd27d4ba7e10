"""CLI commands on registered models: ``list``, ``train``, ``evaluate``."""

from __future__ import annotations

import datetime
import json
import platform
import time
from dataclasses import replace

import torch

from core.checkpoints import REGISTRY, list_checkpoints, load_checkpoint, save_checkpoint
from core.device import default_device, device_name
from core.evaluate import evaluate_model
from core.models import build_model
from core.progress import text_progress
from core.train import EpochStats, train


def library_versions() -> dict:
    """Versions recorded with results, so runs from different machines can be compared."""
    import numpy
    import torchvision

    return {
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torchvision": torchvision.__version__,
        "numpy": numpy.__version__,
    }


def _mnist(split: str):
    from core.data import load_dataset

    return load_dataset("mnist", split)


def cmd_list(args) -> int:
    for info in list_checkpoints():
        meta = info.metadata
        status = f"test error {meta['test_error']:.2%}" if "test_error" in meta else info.reason
        print(f"{info.spec.name:14s} {info.spec.title:34s} {status}")
    return 0


def _metadata(spec, training, history, seconds, device, metrics, eval_samples) -> dict:
    return {
        "title": spec.title,
        "training": training.to_dict(),
        "epochs": len(history),
        "test_error": metrics["test_error"],
        "nll": metrics["nll"],
        "eval_samples": eval_samples,
        "train_seconds": seconds,
        "history": [s.__dict__ for s in history],
        "device": device_name(device),
        "versions": library_versions(),
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }


def _resume_point(spec) -> tuple[torch.nn.Module, list[EpochStats], float]:
    """The saved model of ``spec``, its epoch history and training seconds so far."""
    model, meta = load_checkpoint(spec.name)
    for p in model.parameters():
        p.requires_grad_(True)
    history = [EpochStats(**d) for d in meta.get("history", [])]
    return model.train(), history, float(meta.get("train_seconds", 0.0))


def cmd_train(args) -> int:
    """Train a registered model. The checkpoint is saved atomically after every epoch, so an
    interrupted run keeps its last finished epoch; ``--resume`` continues from it (the
    learning-rate schedule picks up where it stopped; Adam's moments restart)."""
    spec = REGISTRY[args.name]
    registered = spec.training
    if args.threads:
        torch.set_num_threads(args.threads)
    device = default_device()
    if args.resume:
        model, history, seconds_before = _resume_point(spec)
    else:
        model, history, seconds_before = build_model(spec.model), [], 0.0
    done = len(history)
    epochs = args.epochs or registered.epochs - done
    if epochs < 1:
        print(f"{spec.name}: already trained for {done} epochs; pass --epochs to train more")
        return 0
    training = replace(
        registered,
        epochs=epochs,
        lr=registered.lr * registered.lr_decay**done,
        seed=registered.seed + done,
    )
    start = time.perf_counter()

    def metadata(metrics: dict, eval_samples: int) -> dict:
        seconds = seconds_before + time.perf_counter() - start
        return _metadata(spec, registered, history, seconds, device, metrics, eval_samples)

    def on_epoch(s: EpochStats) -> None:
        s.epoch += done
        history.append(s)
        print(
            f"\nepoch {s.epoch}: nll {s.nll:.4f} kl {s.kl:.0f} train err {s.train_error:.2%} "
            f"test err {s.test_error:.2%} ({s.seconds:.1f}s)"
        )
        metrics = {"test_error": s.test_error, "nll": s.test_nll}
        save_checkpoint(spec.name, model, metadata(metrics, training.eval_samples))

    test = _mnist("test")
    progress = text_progress(f"train {spec.name}")
    train(
        model, training, _mnist("train"), test, device=device, progress=progress, on_epoch=on_epoch
    )
    metrics = evaluate_model(model, *test, samples=args.eval_samples)
    path = save_checkpoint(spec.name, model, metadata(metrics, args.eval_samples))
    print(f"saved {path}: test error {metrics['test_error']:.2%}, NLL {metrics['nll']:.4f}")
    return 0


def cmd_evaluate(args) -> int:
    model, _ = load_checkpoint(args.checkpoint, default_device())
    metrics = evaluate_model(model, *_mnist("test"), samples=args.samples)
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
    p = subparsers.add_parser("list", help="list registered checkpoints")
    p.set_defaults(func=cmd_list)
    p = subparsers.add_parser("train", help="train a registered model and save its checkpoint")
    p.add_argument("name", choices=sorted(REGISTRY))
    p.add_argument("--epochs", type=int, default=0, help="epochs to run (default: registered)")
    p.add_argument("--resume", action="store_true", help="continue from the saved checkpoint")
    p.add_argument("--eval-samples", type=int, default=100)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    p.set_defaults(func=cmd_train)
    p = subparsers.add_parser("evaluate", help="MNIST test metrics of a checkpoint")
    p.add_argument("--checkpoint", required=True, choices=sorted(REGISTRY))
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)
