"""What a training-speed result says: fitted lines, speed-ups and the issues' targets.

Each function reads the ``timings`` rows (``impl, samples, epoch_seconds, ...``) and the
``mlp`` floor of a result of :func:`core.studies.training_speed.run_benchmark` (or a stored
one): per implementation the least-squares line ``time = a + b·S``
(:mod:`core.evaluation.linfit`), speed-ups over the sequential implementation, and the targets
of issues 3 and 19.
"""

from __future__ import annotations

from core.evaluation.linfit import fit_line


def speed_goals(result: dict) -> dict[str, dict]:
    """Rate a result against issue 19's targets, where measured.

    Best BBB implementation at S = 1 ≤ 2.5× the plain-MLP epoch (stretch 2×), and vmap+LRT at
    S = 10 ≥ 3.5× faster than sequential at S = 10.

    Args:
        result: A result with ``timings`` and ``mlp``.

    Returns:
        Goal name → ``{"value", "target", "met"}`` (plus ``"impl"`` for the S = 1 goal).
    """
    epoch = {(r["impl"], r["samples"]): r["epoch_seconds"] for r in result["timings"]}
    out = {}
    s1 = {impl: t for (impl, s), t in epoch.items() if s == 1}
    if s1 and result.get("mlp"):
        impl = min(s1, key=s1.get)
        value = s1[impl] / result["mlp"]["epoch_seconds"]
        out["best_S1_over_mlp"] = {"value": value, "target": 2.5, "met": value <= 2.5}
        out["best_S1_over_mlp"]["impl"] = impl
    if ("vmap_lrt", 10) in epoch and ("sequential", 10) in epoch:
        value = epoch[("sequential", 10)] / epoch[("vmap_lrt", 10)]
        out["vmap_lrt_S10_speedup_3_5"] = {"value": value, "target": 3.5, "met": value >= 3.5}
    if result.get("device_type") == "cuda":
        out |= cuda_goals(result)
    return out


def cuda_goals(result: dict) -> dict[str, dict]:
    """Rate a CUDA result against the GPU targets, in seconds per MNIST epoch.

    Plain MLP ≤ 0.15 s; the best BBB estimator at S = 1 ≤ 0.30 s; vmap+LRT at S = 10 ≤ 0.45 s
    with the Gaussian prior (0.9 s with the mixture); sequential at S = 10 ≥ 5× vmap+LRT's.

    Args:
        result: A CUDA result with ``timings``, ``mlp`` and ``config``.

    Returns:
        Goal name → ``{"value", "target", "met"}`` (plus ``"impl"`` for the S = 1 goal).
    """
    epoch = {(r["impl"], r["samples"]): r["epoch_seconds"] for r in result["timings"]}
    out = {}

    def at_most(name: str, value: float, target: float) -> None:
        out[name] = {"value": value, "target": target, "met": value <= target}

    if result.get("mlp"):
        at_most("cuda_mlp_epoch_s", result["mlp"]["epoch_seconds"], 0.15)
    s1 = {impl: t for (impl, s), t in epoch.items() if s == 1}
    if s1:
        impl = min(s1, key=s1.get)
        at_most("cuda_best_S1_epoch_s", s1[impl], 0.30)
        out["cuda_best_S1_epoch_s"]["impl"] = impl
    if ("vmap_lrt", 10) in epoch:
        mixture = result["config"].get("prior") == "mixture"
        at_most("cuda_vmap_lrt_S10_epoch_s", epoch[("vmap_lrt", 10)], 0.9 if mixture else 0.45)
        if ("sequential", 10) in epoch:
            value = epoch[("sequential", 10)] / epoch[("vmap_lrt", 10)]
            out["cuda_sequential_over_lrt_S10"] = {"value": value, "target": 5.0, "met": value >= 5}
    return out


def fits(timings: list[dict]) -> dict[str, dict | None]:
    """Fit, per implementation, the least-squares line of epoch seconds against S.

    Args:
        timings: The ``timings`` rows of a result.

    Returns:
        Implementation → ``{"intercept", "slope", "r2"}`` (seconds, seconds per sample), or
        None where fewer than two S were timed.
    """
    out = {}
    for impl in dict.fromkeys(r["impl"] for r in timings):
        rows = [r for r in timings if r["impl"] == impl]
        if len({r["samples"] for r in rows}) < 2:
            out[impl] = None
            continue
        line = fit_line([r["samples"] for r in rows], [r["epoch_seconds"] for r in rows])
        out[impl] = line.to_dict()
    return out


def speedups(timings: list[dict]) -> list[dict]:
    """Compare each implementation's epoch time with the sequential one's at the same S.

    Args:
        timings: The ``timings`` rows of a result.

    Returns:
        Rows ``impl, samples, speedup``: sequential epoch time ÷ this implementation's (×),
        for the S where the sequential implementation was timed.
    """
    base = {r["samples"]: r["epoch_seconds"] for r in timings if r["impl"] == "sequential"}
    return [
        {
            "impl": r["impl"],
            "samples": r["samples"],
            "speedup": base[r["samples"]] / r["epoch_seconds"],
        }
        for r in timings
        if r["samples"] in base
    ]


def slope_speedups(fit_dict: dict[str, dict | None]) -> dict[str, float]:
    """Compare each implementation's cost per extra sample with the sequential one's.

    Args:
        fit_dict: The ``fits`` of a result.

    Returns:
        Implementation → sequential slope ÷ its slope (×), where both are known.
    """
    seq = (fit_dict.get("sequential") or {}).get("slope")
    return {impl: seq / f["slope"] for impl, f in fit_dict.items() if seq and f and f.get("slope")}


def goals(result: dict) -> dict[str, dict]:
    """Rate a result against the issue's targets, where measured.

    The targets: vmap+LRT at S = 10 ≥ 2× faster than sequential at S = 10 (``value`` =
    speedup), and BBB-LRT at S = 1 ≤ 3× the plain MLP epoch (``value`` = ratio of epoch times).

    Args:
        result: A result with ``timings`` and ``mlp``.

    Returns:
        Goal name → ``{"value", "target", "met"}``.
    """
    epoch = {(r["impl"], r["samples"]): r["epoch_seconds"] for r in result["timings"]}
    out = {}
    if ("vmap_lrt", 10) in epoch and ("sequential", 10) in epoch:
        value = epoch[("sequential", 10)] / epoch[("vmap_lrt", 10)]
        out["vmap_lrt_S10_speedup"] = {"value": value, "target": 2.0, "met": value >= 2.0}
    if ("vmap_lrt", 1) in epoch and result.get("mlp"):
        value = epoch[("vmap_lrt", 1)] / result["mlp"]["epoch_seconds"]
        out["lrt_S1_over_mlp"] = {"value": value, "target": 3.0, "met": value <= 3.0}
    return out
