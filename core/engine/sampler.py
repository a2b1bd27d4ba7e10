"""The one Monte-Carlo sampler: ``n_samples`` stochastic forward passes → softmax probabilities.

:func:`predictive_samples` returns ``(n_samples, B, C)`` softmax probabilities, vectorised over the
samples with ``torch.func.vmap(randomness="different")`` (no Python loop over samples):

* **BBB** (:class:`~core.methods.BayesMLP`): local reparameterisation by default. For a single
  input the LRT pre-activations have exactly the distribution induced by drawing weights, so
  each input's predictive (and every per-input summary: class histogram, softmax spread,
  entropy, mutual information) is exact; it is much cheaper because the first layer's mean and
  variance are computed once for all samples. It is *not* valid when one sampled network must be
  shared across inputs (joint predictions, e.g. "the accuracy of network s"): LRT draws
  independent noise per input. Pass ``lrt=False`` for weight sampling then.
* **MC dropout**: independent dropout masks per sample (vmapped too).
* **MLP**: deterministic; the one pass is repeated ``n_samples`` times (``expand``, no copy).
* **Deep ensemble**: pass ``s`` is member ``s mod M`` (all members computed at once).
* **Last-layer Laplace**: each pass draws the last layer's weights from the posterior.

Each kind draws its passes with its ``sample_logits`` (the default, vmapped one of
:class:`~core.engine.interface.MonteCarloModule`, or its own); this module adds device placement
and chunking.

Inputs are processed in chunks of about :data:`CHUNK_ROWS` (samples × inputs) rows, which bounds
memory (a ``(rows, 400)`` float32 activation is 13 MB on the CPU) and keeps a CPU's working set
in cache: on one CPU thread, 100 samples of 1,000 inputs took about 4× longer in chunks of
1,024 inputs than of 80 (the BBB 784-400-400-10 network, LRT).
"""

from __future__ import annotations

import torch

from core.engine.interface import LabModel

DEFAULT_SAMPLES = 100
"""Monte-Carlo passes of a prediction when nobody chose (the sidebar's default)."""
CHUNK_ROWS = {"cpu": 8192, "cuda": 262144}


@torch.no_grad()
def predictive_samples(
    model: LabModel,
    x: torch.Tensor,
    n_samples: int,
    *,
    lrt: bool | None = True,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Softmax probabilities of ``n_samples`` stochastic passes.

    ``x`` is moved to the model's device and processed in chunks to bound memory.

    Args:
        model: The network; BBB passes use local reparameterisation by default.
        x: Images ``(B, 1, 28, 28)`` in [0, 1].
        n_samples: Number of Monte-Carlo passes.
        lrt: BBB only: True for local reparameterisation, False for weight sampling, None for
            the model's configured default.
        chunk_size: Inputs per chunk; default about :data:`CHUNK_ROWS` ``/ n_samples``.

    Returns:
        Probabilities ``(n_samples, B, C)`` on the model's device.

    Raises:
        ValueError: If ``n_samples < 1``.
    """
    return predictive_logits(model, x, n_samples, lrt=lrt, chunk_size=chunk_size).softmax(-1)


def predictive_logits(
    model: LabModel,
    x: torch.Tensor,
    n_samples: int,
    *,
    lrt: bool | None = True,
    chunk_size: int | None = None,
) -> torch.Tensor:
    """Logits of ``n_samples`` stochastic passes; differentiable w.r.t. ``x`` (attacks).

    Args:
        model: The network; BBB passes use local reparameterisation by default.
        x: Images ``(B, 1, 28, 28)`` in [0, 1]; moved to the model's device.
        n_samples: Number of Monte-Carlo passes.
        lrt: BBB only: True for local reparameterisation, False for weight sampling, None for
            the model's configured default.
        chunk_size: Inputs per chunk; default about :data:`CHUNK_ROWS` ``/ n_samples``.

    Returns:
        Logits ``(n_samples, B, C)`` on the model's device (for a deterministic model, one pass
        expanded without a copy).

    Raises:
        ValueError: If ``n_samples < 1``.
    """
    if n_samples < 1:
        raise ValueError("n_samples must be ≥ 1")
    device = next(model.parameters()).device
    x = x.to(device)
    if not model.stochastic:
        return model(x).unsqueeze(0).expand(n_samples, -1, -1)
    rows = CHUNK_ROWS.get(device.type, CHUNK_ROWS["cpu"])
    chunk_size = chunk_size or max(1, rows // n_samples)
    chunks = [model.sample_logits(xb, n_samples, lrt=lrt) for xb in x.split(chunk_size)]
    return torch.cat(chunks, dim=1)
