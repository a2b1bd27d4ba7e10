"""Peers' multi-sample gradient check (issue 19 item 4): the reference and ours always; the
peer libraries only where installed (requirements-peers.txt, never needed by the app or CI)."""

from __future__ import annotations

import pytest

from core.studies import peers

AVAILABLE = peers.available_peers()


@pytest.mark.parametrize("n_samples", [1, 4])
def test_our_multi_sample_gradients_equal_the_functional_reference(n_samples):
    check = peers.gradient_check("ours", n_samples)
    assert check["rho_rel_error"] < 1e-5 and check["mu_rel_error"] < 1e-5


def test_the_reference_detects_wrong_noise_in_sigma_gradients():
    """A buffer overwritten before backward (the peers' pattern) is caught by the reference."""
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    x, y = torch.rand(16, 20), torch.randint(0, 3, (16,))
    mu = torch.zeros(3, 20, requires_grad=True)
    rho = torch.full((3, 20), -2.0, requires_grad=True)
    b = (torch.zeros(3), torch.full((3,), -30.0))
    buffer, used, total = torch.empty(3, 20), [], 0.0
    for _ in range(3):
        buffer.data.normal_()  # the peers' in-place redraw, invisible to autograd
        used.append((buffer.clone(), torch.zeros(3)))
        w = mu + F.softplus(rho) * buffer
        total = total + F.cross_entropy(F.linear(x, w, b[0]), y, reduction="sum")
    (wrong,) = torch.autograd.grad(total / 3, [rho])
    reference = peers._functional_nll(x, y, [(mu, rho, *b)], [[u] for u in used])
    (right,) = torch.autograd.grad(reference, [rho])
    assert peers._relative_error(wrong, right) > 0.1


@pytest.mark.parametrize("library", list(peers.PEERS))
def test_peer_sigma_gradients_are_wrong_with_several_samples(library):
    if AVAILABLE[library]:
        pytest.skip(
            f"{library} not importable ({AVAILABLE[library]}); install requirements-peers.txt "
            "(e.g. pip install --target DIR --no-deps) and set PYTHONPATH=DIR"
        )
    one = peers.gradient_check(library, 1)
    assert one["rho_rel_error"] < 1e-5 and one["mu_rel_error"] < 1e-5  # right with S = 1
    several = peers.gradient_check(library, 4)
    assert several["mu_rel_error"] < 1e-5  # μ-gradients do not involve the noise
    assert several["rho_rel_error"] > 0.1  # σ-gradients use the last sample's noise
