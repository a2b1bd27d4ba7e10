"""Walkthrough: the Monte-Carlo predictive and the ELBO of Bayes by Backprop, step by step.

Run it with ``python examples/vmapped_predictive_and_elbo.py`` (the test suite runs it too).
Like the ``torch.func`` ensembling tutorial, every vectorised step is checked against the plain
loop it replaces with ``torch.allclose``. It needs no data and no checkpoint: a small untrained
network and random images show the mechanics.
"""

import torch
from torch.func import vmap

from core import ModelConfig, build_model, minibatch_objective, predictive_samples, summarize

torch.manual_seed(0)

# 1. A Bayes-by-Backprop network: every weight has a mean μ and a standard deviation σ.
model = build_model(ModelConfig(kind="bbb", hidden=(32,), params={"init_sigma": 0.1})).eval()
x = torch.rand(5, 1, 28, 28)  # five "images"
print("model:", model.config.sizes, "stochastic:", model.stochastic)

# 2. One stochastic pass draws one network; two passes differ.
first, second = model(x), model(x)
assert not torch.allclose(first, second)

# 3. n_samples passes at once. vmap over a dummy index with randomness="different" gives each
#    pass its own noise: the same thing as a Python loop, without the loop.
n_samples = 50
with torch.random.fork_rng():
    torch.manual_seed(1)
    looped = torch.stack(
        [model.forward_with_kl(x, lrt=False, with_kl=False)[0] for _ in range(n_samples)]
    )
draw = vmap(lambda _: model.forward_with_kl(x, lrt=False, with_kl=False)[0], randomness="different")
vmapped = draw(torch.arange(n_samples))
assert vmapped.shape == looped.shape == (n_samples, 5, 10)
# Different random streams, same distribution: the per-input means agree within MC error.
se = looped.std(0) / n_samples**0.5
assert ((vmapped.mean(0) - looped.mean(0)).abs() < 6 * se + 1e-3).all()

# 4. The lab's sampler does exactly this (with local reparameterisation by default, which is
#    exact for per-input predictions) and returns probabilities (n_samples, B, C).
probs = predictive_samples(model, x, n_samples)
assert probs.shape == (n_samples, 5, 10)
assert torch.allclose(probs.sum(-1), torch.ones(n_samples, 5))

# 5. Summaries of the spread: predictive entropy = expected entropy + mutual information.
summary = summarize(probs)
assert torch.allclose(
    summary.entropy, summary.expected_entropy + summary.mutual_information, atol=1e-5
)
print("mutual information per input (nats):", summary.mutual_information.numpy().round(4))

# 6. The minibatch ELBO: Σ NLL + weight·KL, averaged over S posterior samples. Fed the same
#    noise, the sequential loop and the vmapped estimator give the same numbers.
y = torch.randint(0, 10, (5,))
noise = model.draw_noise(n_samples=4, batch_size=5, lrt=False)
sequential = minibatch_objective(
    model, x, y, n_samples=4, weight=0.01, impl="sequential", noise=noise
)
vectorised = minibatch_objective(model, x, y, n_samples=4, weight=0.01, impl="vmap", noise=noise)
assert torch.allclose(sequential.loss, vectorised.loss, rtol=1e-5)
assert torch.allclose(sequential.kl, vectorised.kl, rtol=1e-5)
print(
    f"ELBO loss {vectorised.loss.item():.2f} = NLL {vectorised.nll.item():.2f} "
    f"+ 0.01 · KL {vectorised.kl.item():.0f}"
)

# 7. The KL of a Gaussian prior is in closed form: it does not depend on the drawn weights.
again = minibatch_objective(model, x, y, n_samples=4, weight=0.01, impl="vmap")
assert torch.allclose(again.kl, vectorised.kl)
print("all steps checked")
