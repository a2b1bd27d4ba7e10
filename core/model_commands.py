"""CLI commands on registered models: ``list``, ``train``, ``evaluate``."""

from __future__ import annotations

import datetime
import json
import platform
import time

import torch

from core.checkpoints import REGISTRY, list_checkpoints, load_checkpoint, save_checkpoint
from core.device import default_device, device_name
from core.evaluate import evaluate_model
from core.models import build_model
from core.progress import text_progress
from core.train import train


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


def cmd_train(args) -> int:
    """Train a registered model; the checkpoint is saved atomically after every epoch, so an
    interrupted run keeps its last finished epoch, then re-evaluated at the end."""
    spec = REGISTRY[args.name]
    training = spec.training
    if args.epochs:
        training = type(training)(**{**training.to_dict(), "epochs": args.epochs})
    if args.threads:
        torch.set_num_threads(args.threads)
    device = default_device()
    model = build_model(spec.model)
    history, start = [], time.perf_counter()

    def on_epoch(s) -> None:
        history.append(s)
        print(
            f"\nepoch {s.epoch}: nll {s.nll:.4f} kl {s.kl:.0f} train err {s.train_error:.2%} "
            f"test err {s.test_error:.2%} ({s.seconds:.1f}s)"
        )
        metrics = {"test_error": s.test_error, "nll": s.test_nll}
        elapsed = time.perf_counter() - start
        meta = _metadata(spec, training, history, elapsed, device, metrics, training.eval_samples)
        save_checkpoint(spec.name, model, meta)

    test = _mnist("test")
    result = train(
        model,
        training,
        _mnist("train"),
        test,
        device=device,
        progress=text_progress(f"train {spec.name}"),
        on_epoch=on_epoch,
    )
    metrics = evaluate_model(model, *test, samples=args.eval_samples)
    meta = _metadata(spec, training, history, result.seconds, device, metrics, args.eval_samples)
    path = save_checkpoint(spec.name, model, meta)
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
    p.add_argument("--epochs", type=int, default=0, help="override the registered epoch count")
    p.add_argument("--eval-samples", type=int, default=100)
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0: torch default)")
    p.set_defaults(func=cmd_train)
    p = subparsers.add_parser("evaluate", help="MNIST test metrics of a checkpoint")
    p.add_argument("--checkpoint", required=True, choices=sorted(REGISTRY))
    p.add_argument("--samples", type=int, default=100)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_evaluate)
