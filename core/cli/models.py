"""``python -m core list | train | promote``: registered and user-trained models.

Training writes to the user-model folder (:func:`core.paths.user_model_dir`), never to
the shipped ``checkpoints/``: an interrupted run cannot destroy a documented model. A registered
model is saved after every epoch marked partial, and complete only after its last epoch;
``list`` shows a partial model as such. ``promote`` replaces a shipped checkpoint with the
user-trained one, only after it finished and loads.

``train`` takes a registered name (``python -m core train fashion_mlp``) or an ad-hoc
configuration, the same choices as the app's Train page::

    python -m core train --kind bbb --prior mixture --dataset fashion_mnist --epochs 5 --name my_bbb

An ad-hoc model is saved once, when it finishes (:func:`core.jobs.training.run_training`), as
``data/models/NAME.pt``; pages and commands address it as ``user:NAME``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

import torch

from core.catalogue import REGISTRY, list_checkpoints, promote
from core.cli.values import EPOCHS, IMAGES, SAMPLES, THREADS, real, whole
from core.data import load_dataset
from core.engine.device import default_device
from core.evaluation.metrics import evaluate_model
from core.jobs.training import make_request, run_training, spec_request, training_metadata
from core.methods import METHODS, build_model, method
from core.methods.base import Setting
from core.paths import user_model_dir
from core.progress import text_progress
from core.storage.checkpoints import (
    TASK_DATASETS,
    CheckpointError,
    CheckpointSpec,
    checkpoint_path,
    load_checkpoint,
    save_checkpoint,
    task_title,
    user_key,
)
from core.storage.metadata import partial_note
from core.storage.user_models import list_user_checkpoints
from core.studies.evaluations import (
    test_metrics,
)
from core.training import EpochStats, cuda_graphs_enabled, train


def cmd_list(args) -> int:
    """Run ``python -m core list``: print each registered checkpoint and whether it loads.

    A shipped model's test error is the one ``python -m core evaluate`` prints (100 passes
    seeded with 0, read from its shipped evaluation). User-trained models found in the
    user-model folder are listed after them, by the name pages and commands know them by
    (``user:NAME``), with their task and the test error measured when training ended. A model
    whose training did not finish is marked ``partial: D of N epochs``.

    Args:
        args: The parsed command line (none are used).

    Returns:
        The exit code: 0.
    """
    for info in list_checkpoints():
        status = _status(info)
        if info.available:  # the seeded evaluation `core evaluate` prints, not training's own
            status = f"test error {test_metrics(info.spec.name)['test_error']:.2%}"
        print(f"{info.spec.name:20s} {info.spec.title:36s} {status}")
    user = list_user_checkpoints()
    if user:
        print(f"\nuser-trained models in {user_model_dir()}:")
    for info in user:
        task = task_title(info.spec.dataset)
        print(f"{info.spec.name:26s} {info.spec.model.kind:9s} {task:14s} {_status(info)}")
    return 0


def _status(info) -> str:
    """Test error of an available checkpoint, marked when partial, or why it is unavailable."""
    if not info.available:
        return f"BROKEN: {info.reason}" if info.path.is_file() else info.reason
    meta = info.metadata
    notes = [partial_note(meta)]
    notes.append(f"test error {meta['test_error']:.2%}" if "test_error" in meta else "ok")
    return ", ".join(note for note in notes if note)


def _resume_point(name: str) -> tuple[torch.nn.Module, list[EpochStats], float, int | None]:
    """The user-trained model ``name``, its history, seconds so far and epochs asked (or None)."""
    model, meta = load_checkpoint(checkpoint_path(name, user_model_dir()))
    model.requires_grad_(True)
    history = [EpochStats(**d) for d in meta.get("history", [])]
    planned = meta.get("epochs_planned")
    seconds = float(meta.get("train_seconds", 0.0))
    return model.train(), history, seconds, planned if isinstance(planned, int) else None


def _fresh_model(spec: CheckpointSpec) -> torch.nn.Module:
    """A new model of ``spec``, in training mode with gradients on.

    Randomly initialised, or starting from the trained weights of ``spec.base`` (every
    parameter must come from it; buffers may be new).

    Raises:
        CheckpointError: If ``spec.base`` does not load or its weights do not fit ``spec``.
    """
    model = build_model(spec.model, seed=spec.training.seed)
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


def method_settings() -> dict[str, Setting]:
    """Every method's settings by name (a name shared by methods means the same thing)."""
    return {s.name: s for m in METHODS.values() for s in m.settings}


ADHOC_OPTIONS = ("kind", "dataset", "lr", "batch_size", *method_settings())
"""Options that describe an ad-hoc model (refused with a registered name)."""


def _adhoc_settings(args) -> dict:
    """The settings given on the command line (the others take their defaults)."""
    names = ("lr", "batch_size", "epochs", *method_settings())
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _setting_type(setting: Setting) -> Callable[[str], int | float]:
    """The argparse type of a numeric setting: within its range, or its options' range."""
    low = min(setting.options) if setting.low is None else setting.low
    high = max(setting.options) if setting.high is None else setting.high
    if setting.type is int:
        return whole(int(low), int(high))
    return real(low, high, low_open=False)


def _refuse_adhoc_options(args) -> None:
    """Raise ValueError if an ad-hoc option is given with a registered name."""
    given = [o for o in ADHOC_OPTIONS if getattr(args, o, None) is not None]
    if given:
        options = ", ".join("--" + o.replace("_", "-") for o in given)
        raise ValueError(f"{options}: only with --kind (a registered model is fixed)")


def _add_setting_flags(parser) -> None:
    """One ``--flag`` per method setting, e.g. ``--prior-sigma``, ``--burn-in``."""
    for name, setting in method_settings().items():
        defaults = {
            k: m.setting(name).default
            for k, m in METHODS.items()
            if name in {x.name for x in m.settings}
        }
        kinds = ", ".join(defaults)
        flag = "--" + name.replace("_", "-")
        shown = {k: v if isinstance(v, str) else setting.title(v) for k, v in defaults.items()}
        if len(set(shown.values())) == 1:
            default = shown[next(iter(shown))]
        else:
            default = ", ".join(f"{v} for {k}" for k, v in shown.items())
        text = f"ad-hoc {kinds}: {setting.label} (default {default})"
        if setting.type is bool:
            parser.add_argument(flag, action="store_const", const=True, help=text)
        elif setting.type is str:
            parser.add_argument(flag, choices=setting.options, help=text)
        else:
            parser.add_argument(flag, type=_setting_type(setting), help=text)


def cmd_train_request(args) -> int:
    """Train an ad-hoc configuration (``--kind``) or a registered spec under ``--name``.

    The model is saved once, atomically, when training finishes; Ctrl-C leaves nothing.

    Args:
        args: The parsed command line.

    Returns:
        The exit code: 0.

    Raises:
        ValueError: For a bad combination of options or an invalid setting.
    """
    if args.resume:
        raise ValueError(
            "--resume continues a registered model; it cannot be combined with --kind or --name"
        )
    if args.kind:
        if args.name:
            raise ValueError(f"give either a registered name ({args.name}) or --kind, not both")
        if not args.model_name:
            raise ValueError("--kind needs --name NAME, the name the new model is saved under")
        request = make_request(
            args.model_name,
            args.kind,
            dataset=args.dataset or "mnist",
            n_train=args.train_subset,
            n_eval_samples=args.eval_samples,
            **_adhoc_settings(args),
        )
    else:
        _refuse_adhoc_options(args)
        spec = REGISTRY[args.name]
        training = spec.training
        overrides = {"epochs": args.epochs} if args.epochs else {}
        request = replace(
            spec_request(
                spec,
                args.model_name,
                n_train=args.train_subset or spec.train_subset,
                n_eval_samples=args.eval_samples,
            ),
            training=replace(training, **overrides),
        )
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"training {request.name}: {request.describe()}")
    outcome = run_training(
        request,
        progress=text_progress(f"train {request.name}"),
        on_epoch=lambda s: print(
            f"\nepoch {s.epoch}: nll {s.nll:.4f} kl {s.kl:.0f} train err {s.train_error:.2%} "
            f"test err {s.test_error:.2%} ({s.seconds:.1f}s)"
        ),
    )
    metrics = outcome.metrics
    print(
        f"saved {outcome.path}: test error {metrics['test_error']:.2%}, NLL "
        f"{metrics['nll']:.4f} on {task_title(request.dataset)} "
        f"({request.n_eval_samples} passes); use it as {user_key(outcome.path.stem)}"
    )
    return 0


def cmd_train(args) -> int:
    """Run ``python -m core train``: train a model into the user-model folder.

    A registered name alone trains that spec, saving atomically after every epoch, so an
    interrupted run keeps its last finished epoch. Those saves are marked partial (``promote``
    refuses them); the save after the last epoch and the final evaluation marks the model
    complete. ``--resume`` continues a model up to the epochs its run asked for (the registered
    number when not recorded; the learning-rate schedule picks up where it stopped; Adam's
    moments restart). With ``--kind``
    (an ad-hoc configuration) or ``--name`` the run goes through :func:`cmd_train_request`.

    Args:
        args: The parsed command line (``name``, ``epochs``, ``resume``, ``eval_samples``,
            ``train_subset``, ``threads``, the ad-hoc options).

    Returns:
        The exit code: 0.

    Raises:
        ValueError: Without a name or ``--kind``, or for a bad combination of options.
    """
    if args.kind or args.model_name:
        return cmd_train_request(args)
    if not args.name:
        raise ValueError("give a registered name or --kind ... --name NAME (see --help)")
    _refuse_adhoc_options(args)
    spec = REGISTRY[args.name]
    registered = spec.training
    if args.threads:
        torch.set_num_threads(args.threads)
    device = default_device()
    folder = user_model_dir()
    planned = None
    if args.resume:
        model, history, seconds_before, planned = _resume_point(spec.name)
    else:
        model, history, seconds_before = _fresh_model(spec), [], 0.0
    done = len(history)
    epochs = max(args.epochs or (planned or registered.epochs) - done, 0)
    if epochs < 1 and registered.epochs > 0:
        print(f"{spec.name}: already trained for {done} epochs; pass --epochs to train more")
        return 0
    training = replace(
        registered,
        epochs=epochs,
        lr=registered.lr * registered.lr_decay**done,
        seed=registered.seed + done,
    )
    n_train = args.train_subset or spec.train_subset
    start = time.perf_counter()

    fitted: dict = {}
    graphed = cuda_graphs_enabled(device) and method(spec.model.kind).procedure.graphable

    def metadata(metrics: dict, n_eval_samples: int) -> dict:
        seconds = seconds_before + time.perf_counter() - start
        meta = training_metadata(
            title=spec.title,
            dataset=spec.dataset,
            training=training,
            history=history,
            seconds=seconds,
            device=device,
            metrics=metrics,
            n_eval_samples=n_eval_samples,
            cuda_graphs=graphed,
        )
        base = {"base": spec.base} if spec.base else {}
        held_out = {"train_subset": n_train}  # null: all training images (none held out)
        return meta | {"epochs_planned": done + epochs} | held_out | base | fitted

    def on_epoch(s: EpochStats) -> None:
        s.epoch += done
        history.append(s)
        print(
            f"\nepoch {s.epoch}: nll {s.nll:.4f} kl {s.kl:.0f} train err {s.train_error:.2%} "
            f"test err {s.test_error:.2%} ({s.seconds:.1f}s)"
        )
        metrics = {"test_error": s.test_error, "nll": s.test_nll}
        meta = metadata(metrics, training.n_eval_samples)
        save_checkpoint(spec.name, model, meta, folder, complete=False)

    test = load_dataset(spec.dataset, "test")
    train_data = load_dataset(spec.dataset, "train", n_inputs=n_train)
    result = train(
        model,
        training,
        train_data,
        test,
        device=device,
        progress=text_progress(f"train {spec.name}"),
        on_epoch=on_epoch,
        procedure=method(spec.model.kind).procedure,
    )
    fitted.update(result.info, cuda_graphs=result.cuda_graphs)
    if result.info:
        print(f"{spec.name}: {result.info}")
    model.to(device).eval()
    metrics = evaluate_model(model, *test, n_samples=args.eval_samples)
    path = save_checkpoint(spec.name, model, metadata(metrics, args.eval_samples), folder)
    print(f"saved {path}: test error {metrics['test_error']:.2%}, NLL {metrics['nll']:.4f}")
    print(f"to ship it in place of checkpoints/{spec.name}.pt: python -m core promote {spec.name}")
    return 0


def cmd_promote(args) -> int:
    """Run ``python -m core promote``: replace a shipped checkpoint with the user-trained one.

    A user-trained model that does not load or did not finish training is refused
    (:func:`core.catalogue.promote` raises; the shipped files stay as they were).

    Args:
        args: The parsed command line (``name``).

    Returns:
        The exit code: 0.
    """
    target = promote(args.name)
    print(f"replaced {target} with the user-trained {args.name}")
    return 0


def register(subparsers) -> None:
    """Add the ``list``, ``train`` and ``promote`` sub-commands.

    Args:
        subparsers: The ``add_subparsers()`` object of the ``python -m core`` parser.
    """
    p = subparsers.add_parser("list", help="list registered checkpoints and check they load")
    p.set_defaults(func=cmd_list)
    p = subparsers.add_parser(
        "train",
        help="train a registered model or an ad-hoc configuration into the user-model folder",
        description="Train a registered model (NAME) or an ad-hoc configuration (--kind ... "
        "--name NEW) into the user-model folder (data/models). Ad-hoc, the architecture, "
        "learning rate, its decay and the batch size not given come from the kind's registered "
        "model, and the method's own settings not given (prior, temperature, ...) take their "
        "defaults, shown with each option.",
    )
    p.add_argument("name", nargs="?", choices=sorted(REGISTRY), help="a registered model")
    p.add_argument("--name", dest="model_name", help="save as this user model (ad-hoc: required)")
    p.add_argument("--kind", choices=list(METHODS), help="ad-hoc: the method")
    p.add_argument("--dataset", choices=sorted(TASK_DATASETS), help="ad-hoc: task (mnist)")
    p.add_argument("--lr", type=real(0, 10), help="ad-hoc: learning rate")
    p.add_argument("--batch-size", type=IMAGES, help="ad-hoc: images per minibatch")
    _add_setting_flags(p)
    p.add_argument("--epochs", type=EPOCHS, help="epochs to run (default: registered)")
    p.add_argument("--resume", action="store_true", help="continue the user-trained checkpoint")
    p.add_argument("--eval-samples", type=SAMPLES, default=100)
    p.add_argument(
        "--train-subset",
        type=IMAGES,
        help="training images (default: the registered model's, e.g. 55,000; all with --kind)",
    )
    p.add_argument("--threads", type=THREADS, default=0, help="CPU threads (0: torch default)")
    p.set_defaults(func=cmd_train)
    p = subparsers.add_parser(
        "promote", help="replace a shipped checkpoint with the user-trained one"
    )
    p.add_argument("name", choices=sorted(REGISTRY))
    p.set_defaults(func=cmd_promote)
