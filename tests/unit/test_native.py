"""The compiled CPU kernels of issue 19 (core/engine/native): noise and the one-pass sample/KL.

The noise is checked against the standard normal (moments, Kolmogorov-Smirnov, independence of
neighbours and of Box-Muller partners), for reproducibility under ``torch.manual_seed`` and for
bit-identity across thread counts. :class:`NativeSampleKL` is checked against the float64
autograd reference on the same noise. Without a C compiler the callers fall back to PyTorch
(checked with ``BNN_NATIVE=0`` and a failing compiler); in CI the kernels must be built.
"""

from __future__ import annotations

import math
import os

import pytest
import torch
import torch.nn.functional as F

from core.engine import native
from core.engine.fused import FusedSampler, SigmaKL, _Constants, _Layout
from core.engine.native import NativeSampleKL, NativeSigmaKL, build
from core.engine.priors import GaussianPrior, ScaleMixturePrior
from core.methods import ModelConfig, build_model

needs_kernels = pytest.mark.skipif(
    native.kernels() is None, reason=build.unavailable_reason() or "no kernels"
)


def test_kernels_are_built_in_ci():
    if os.environ.get("CI") != "true":
        pytest.skip("only CI must have a C compiler")
    assert native.kernels() is not None, build.unavailable_reason()


def _with_threads(n: int, fn):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        return fn()
    finally:
        torch.set_num_threads(before)


def _ndtr(x: torch.Tensor) -> torch.Tensor:
    return 0.5 * torch.erfc(-x / math.sqrt(2.0))


@needs_kernels
def test_noise_is_standard_normal():
    torch.manual_seed(0)
    n = 1_000_001
    x = native.standard_normal(n, torch.empty(0)).double()
    assert x.shape == (n,) and torch.isfinite(x).all()
    se = 1 / math.sqrt(n)
    assert abs(x.mean()) < 5 * se
    assert abs(x.var() - 1) < 5 * math.sqrt(2) * se
    assert abs((x**3).mean()) < 5 * math.sqrt(15) * se
    assert abs((x**4).mean() - 3) < 5 * math.sqrt(96) * se
    ordered = x.sort().values
    cdf = _ndtr(ordered)
    ranks = torch.arange(1, n + 1, dtype=torch.float64) / n
    ks = torch.maximum((ranks - cdf).abs(), (cdf - (ranks - 1 / n)).abs()).max()
    assert ks < 1.95 * se  # the 0.1 % critical value of the Kolmogorov-Smirnov statistic


@needs_kernels
def test_noise_values_are_uncorrelated():
    torch.manual_seed(1)
    n = 400_000
    x = native.standard_normal(n, torch.empty(0)).double()
    y = native.standard_normal(n, torch.empty(0)).double()
    half = n // 2
    bound = 5 / math.sqrt(half)
    pairs = {
        "neighbours": (x[:-1], x[1:]),
        "Box-Muller partners": (x[:half], x[half:]),
        "partners' squares": (x[:half] ** 2, x[half:] ** 2),
        "two draws": (x, y),
    }
    for name, (a, b) in pairs.items():
        r = torch.corrcoef(torch.stack([a, b]))[0, 1]
        assert abs(r) < bound, (name, r)


@needs_kernels
def test_noise_follows_the_seed_and_not_the_thread_count():
    like = torch.empty(0)

    def draw(seed: int, threads: int) -> torch.Tensor:
        torch.manual_seed(seed)
        return _with_threads(threads, lambda: native.standard_normal(100_003, like))

    a = draw(7, 1)
    assert torch.equal(a, draw(7, 2))
    assert torch.equal(a, draw(7, 1))
    assert not torch.equal(a, draw(8, 1))


@needs_kernels
@pytest.mark.parametrize("n", [0, 1, 2, 3, 31, 32, 33, 65])
def test_noise_of_small_and_odd_sizes(n):
    x = native.standard_normal((n,), torch.empty(0))
    assert x.shape == (n,) and torch.isfinite(x).all()
    if n >= 31:
        assert x.unique().numel() == n


def test_noise_falls_back_to_torch_for_other_dtypes():
    torch.manual_seed(2)
    x = native.standard_normal((3, 4), torch.empty(0, dtype=torch.float64))
    torch.manual_seed(2)
    assert x.dtype == torch.float64 and torch.equal(x, torch.empty(3, 4).double().normal_())


MIXTURE = ScaleMixturePrior(0.5, 1.0, math.exp(-6))
PRIORS = [GaussianPrior(1.0), GaussianPrior(0.2), ScaleMixturePrior(), MIXTURE]


def _pieces(seed: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    """μ and ρ pieces of a 3-layer network with odd sizes (float64)."""
    gen = torch.Generator().manual_seed(seed)
    shapes = [(37, 29), (37,), (13, 37), (13,), (3, 13), (3,)]
    mus = [0.1 * torch.randn(s, generator=gen, dtype=torch.float64) for s in shapes]
    rhos = [torch.randn(s, generator=gen, dtype=torch.float64) - 4 for s in shapes]
    return mus, rhos


def _reference(mus, rhos, eps_pieces, prior):
    """BayesLinear's autograd formulas: w = μ + softplus(ρ)·ε, the prior's kl."""
    ws, kl = [], 0.0
    for mu, rho, e in zip(mus, rhos, eps_pieces, strict=True):
        sigma = F.softplus(rho)
        w = mu + sigma * e
        ws.append(w)
        kl = kl + (prior.kl(mu, sigma) if prior.analytic_kl else prior.kl(mu, sigma, w))
    return ws, kl


@needs_kernels
@pytest.mark.parametrize("prior", PRIORS, ids=str)
def test_native_sample_kl_equals_the_float64_reference(prior):
    mus, rhos = _pieces(0)
    layout = _Layout(mus)
    eps = torch.randn(layout.numel, dtype=torch.float64)
    grads_w = [torch.randn_like(m) for m in mus]
    grads_w[3] = None  # a piece whose draw does not reach the loss
    beta = 0.37
    params64 = [p.clone().requires_grad_(True) for p in mus + rhos]
    ws_ref, kl_ref = _reference(params64[:6], params64[6:], layout.views(eps), prior)
    params32 = [p.detach().float().requires_grad_(True) for p in mus + rhos]
    *ws, kl = NativeSampleKL.apply(
        eps.float(), _Constants.of(prior), _Layout(params32[:6]), *params32
    )
    for w, w_ref in zip(ws, ws_ref, strict=True):
        assert torch.allclose(w.double(), w_ref, rtol=1e-6, atol=1e-7)
    assert math.isclose(kl.item(), kl_ref.item(), rel_tol=2e-6)

    def loss(ws, kl):
        return sum((w * g).sum() for w, g in zip(ws, grads_w, strict=True) if g is not None) + (
            beta * kl
        )

    got = torch.autograd.grad(loss(ws, kl), params32)
    want = torch.autograd.grad(loss(ws_ref, kl_ref), params64)
    for a, b in zip(got, want, strict=True):
        # float32 rounding: the PyTorch float32 path is off by up to 3e-6 here too
        assert (a.double() - b).abs().max() <= 1e-5 * b.abs().max()


@needs_kernels
def test_native_sample_kl_without_kl_gradient_and_under_no_grad():
    mus, rhos = _pieces(1)
    params = [p.float().requires_grad_(True) for p in mus + rhos]
    layout = _Layout(params[:6])
    constants = _Constants.of(GaussianPrior(1.0))
    eps = torch.randn(layout.numel)
    *ws, _ = NativeSampleKL.apply(eps, constants, layout, *params)
    grads = torch.autograd.grad(sum(w.sum() for w in ws), params)
    for g_mu, g_rho, e, rho in zip(
        grads[:6], grads[6:], layout.views(eps), params[6:], strict=True
    ):
        assert torch.allclose(g_mu, torch.ones_like(g_mu))
        assert torch.allclose(g_rho, e * torch.sigmoid(rho), rtol=1e-5, atol=1e-7)
    with torch.no_grad():
        for _ in range(20):
            NativeSampleKL.apply(None, constants, layout, *params)
    assert len(layout._free) <= 3  # no-grad draws give their buffers straight back


@needs_kernels
def test_a_second_backward_through_a_native_draw_raises():
    mus, rhos = _pieces(2)
    params = [p.float().requires_grad_(True) for p in mus + rhos]
    *ws, kl = NativeSampleKL.apply(None, _Constants.of(MIXTURE), _Layout(params[:6]), *params)
    loss = ws[0].sum() + kl
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError, match="one backward pass"):
        loss.backward()


@needs_kernels
def test_fused_sampler_uses_the_kernels_for_float32_only():
    torch.manual_seed(0)
    model = build_model(ModelConfig(hidden=(16,), params={"init_sigma": 0.1}))
    sampler = FusedSampler(model.layers)
    (w1, _), kl1 = sampler.sample()[0][0], sampler.sample()[1]
    assert kl1.grad_fn.name() == "NativeSampleKLBackward"
    assert not torch.equal(w1, sampler.sample()[0][0][0])  # fresh noise per draw
    sampler64 = FusedSampler(model.double().layers)
    assert sampler64.sample()[1].grad_fn.name() == "SampleKLBackward"


@needs_kernels
@pytest.mark.parametrize("prior", PRIORS, ids=str)
def test_native_sigma_kl_equals_the_pytorch_node_in_float64(prior):
    """σ² and the complexity costs of S = 3 LRT passes, and every gradient (one piece unused)."""
    mus, rhos = _pieces(3)
    constants = _Constants.of(prior)
    n, samples = _Layout(mus).numel, 3
    eps = None if constants.gaussian else torch.randn(samples, n, dtype=torch.float64)
    grads_var = [torch.randn_like(m) for m in mus]
    grads_var[2] = None
    beta = torch.tensor([0.3, 0.5, 0.7], dtype=torch.float64)

    def run(node, dtype):
        params = [p.to(dtype).requires_grad_(True) for p in mus + rhos]
        noise = None if eps is None else eps.to(dtype)
        *variances, kl = node.apply(noise, constants, _Layout(params[:6]), *params)
        pairs = zip(variances, grads_var, strict=True)
        loss = sum((v * g.to(dtype)).sum() for v, g in pairs if g is not None)
        loss = loss + (kl * beta.to(dtype)[: kl.numel()]).sum()
        return variances, kl, torch.autograd.grad(loss, params)

    want_var, want_kl, want_grads = run(SigmaKL, torch.float64)
    got_var, got_kl, got_grads = run(NativeSigmaKL, torch.float32)
    assert got_kl.shape == want_kl.shape == (() if constants.gaussian else (samples,))
    assert torch.allclose(got_kl.double(), want_kl, rtol=2e-6)
    for a, b in zip(got_var, want_var, strict=True):
        assert torch.allclose(a.double(), b, rtol=1e-6, atol=1e-12)
    for a, b in zip(got_grads, want_grads, strict=True):
        # float32 rounding of sums over the passes (PyTorch's float32 node: up to 6e-6)
        assert (a.double() - b).abs().max() <= 2e-5 * b.abs().max()


@needs_kernels
def test_lrt_passes_use_the_native_node_and_give_buffers_back():
    torch.manual_seed(0)
    model = build_model(ModelConfig(hidden=(16,), params={"prior": "mixture"}))
    x = torch.rand(5, 784)
    logits, kl = model.lrt_forward_with_kl(x, n_samples=4)
    assert logits.shape == (4, 5, 10) and kl.shape == (4,)
    node = kl.grad_fn.next_functions[0][0]  # kl is the node's (S,) output, expanded
    assert node.name() == "NativeSigmaKLBackward"
    loss = logits.sum() + kl.sum()
    loss.backward(retain_graph=True)
    with pytest.raises(RuntimeError):  # never a silent second pass over reused buffers
        loss.backward()
    layout = model._fused.layout
    with torch.no_grad():
        for _ in range(10):
            model.lrt_forward_with_kl(x, n_samples=2)
    assert len(layout._free) <= 4


@pytest.fixture
def rebuild(tmp_path, monkeypatch):
    """An empty kernel cache and a forgotten library; restored afterwards."""
    monkeypatch.setenv("BNN_CACHE_DIR", str(tmp_path))
    build.reset()
    yield monkeypatch
    monkeypatch.undo()
    build.reset()


def test_disabled_kernels_fall_back_to_pytorch(rebuild):
    rebuild.setenv("BNN_NATIVE", "0")
    assert native.kernels() is None
    assert native.status() == "off (disabled by BNN_NATIVE=0)"
    torch.manual_seed(0)
    model = build_model(ModelConfig(hidden=(16,)))
    x, y = torch.rand(4, 784), torch.randint(0, 10, (4,))
    logits, kl = model.fused_forward_with_kl(x)
    assert kl.grad_fn.name() == "SampleKLBackward"
    F.cross_entropy(logits, y).add(kl).backward()
    assert all(p.grad is not None for p in model.parameters())


@pytest.mark.parametrize(
    ("compiler", "reason"), [("/bin/false", "failed"), ("no-such-cc-here", "no C compiler")]
)
def test_a_missing_or_failing_compiler_gives_one_line(rebuild, compiler, reason):
    rebuild.setenv("CC", compiler)
    assert native.kernels() is None
    message = build.unavailable_reason()
    assert reason in message and "\n" not in message
    assert not list((build.cache_dir() / "native").glob("*.so"))


@needs_kernels
def test_the_library_is_built_once_and_reused(rebuild):
    assert native.kernels() is not None
    built = list((build.cache_dir() / "native").glob("sample_kl-*.so"))
    assert len(built) == 1
    stamp = built[0].stat().st_mtime_ns
    build.reset()
    assert native.kernels() is not None
    assert built[0].stat().st_mtime_ns == stamp
