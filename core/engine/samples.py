"""Networks whose predictive is a set of weights: the base of stored samples and SWAG's Gaussian.

Both are the :class:`~core.engine.mlp.MLP` of their configuration while they train (the
parameters are the sampler's current state, or SGD's iterate) and predict, in eval mode, from
what was collected:

* :class:`WeightSamples`: ``config.params["members"]`` weight samples of an SG-MCMC chain
  (:mod:`core.methods.sgld`), stored in float16 (about 3 significant digits; a 784-400-400-10
  network is 0.96 MB per sample). Pass ``s`` uses sample ``s mod S``, as a deep ensemble cycles
  through its members.
* :class:`~core.methods.swag.model.SWAGNetwork`: SWAG's N(θ̄, Σ) (:mod:`core.methods.swag`):
  after training the parameters hold θ̄; buffers hold σ² and the last ``rank`` deviations
  (float16). Each pass draws fresh weights.

All S passes run in one vmapped ``functional_call`` of a stateless copy of the MLP, as in
:class:`~core.methods.ensemble.model.DeepEnsemble` (:func:`stacked_logits`).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import functional_call, vmap

from core.engine.interface import ModelConfig, flat
from core.engine.mlp import MLP


def stacked_logits(template: nn.Module, params: dict[str, torch.Tensor], x: torch.Tensor):
    """Logits of S networks that share ``template``'s architecture, in one vmapped call.

    Args:
        template: A stateless (e.g. ``meta``) copy of the network.
        params: Its parameters by name, each with a leading S dim.
        x: Inputs ``(B, ...)`` shown to every network.

    Returns:
        Logits ``(S, B, C)``.
    """
    x = flat(x)
    return vmap(lambda p: functional_call(template, p, (x,)))(params)


def unflatten(theta: torch.Tensor, like: nn.Module) -> dict[str, torch.Tensor]:
    """Split flat parameter vectors into ``like``'s parameters.

    Args:
        theta: Flat parameters ``(S, d)`` in ``like.named_parameters()`` order.
        like: The network whose names and shapes are used.

    Returns:
        ``{name: (S, *shape)}``.
    """
    named = list(like.named_parameters())
    chunks = theta.split([p.numel() for _, p in named], dim=1)
    return {
        name: chunk.reshape(len(theta), *p.shape)
        for (name, p), chunk in zip(named, chunks, strict=True)
    }


class CollectedMLP(MLP):
    """An MLP that trains as itself and predicts, in eval mode, from collected weights."""

    weight_posterior = False

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        self.register_buffer("n_collected", torch.zeros((), dtype=torch.long))
        object.__setattr__(self, "_template", MLP(config).to("meta"))

    @property
    def stochastic(self) -> bool:
        """Whether passes differ: once weights were collected (True on the class itself)."""
        return int(self.n_collected) > 0

    @property
    def collected(self) -> bool:
        """Whether the predictive uses the collected weights (eval mode, something collected)."""
        return not self.training and int(self.n_collected) > 0

    def _draws(self, n_samples: int) -> dict[str, torch.Tensor]:
        """Parameters of ``n_samples`` networks of the predictive, ``{name: (S, *shape)}``."""
        raise NotImplementedError

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One pass: the network as trained, or one network of the predictive in eval mode.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        if not self.collected:
            return super().forward(x)
        return stacked_logits(self._template, self._draws(1), x)[0]

    def sample_logits(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = True
    ) -> torch.Tensor:
        """Logits of ``n_samples`` passes (the trained network repeated before collection).

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            n_samples: Number of passes.
            lrt: Ignored (no mean-field posterior).

        Returns:
            Logits ``(n_samples, B, C)``.
        """
        if not self.collected:
            return super().forward(x).unsqueeze(0).expand(n_samples, -1, -1)
        return stacked_logits(self._template, self._draws(n_samples), x)


class WeightSamples(CollectedMLP):
    """An MLP of ``config.sizes`` with ``config.params["members"]`` stored weight samples.

    Args:
        config: Architecture, and the number S of samples kept (``config.params["members"]``).

    Attributes:
        samples: The stored samples per parameter name (``.`` written ``__``), float16
            ``(S, *shape)``; the first ``n_collected`` are filled.
        n_collected: How many samples are stored (0 before sampling: the model predicts with
            its parameters).
        sampling_note: Passes are the stored samples, cycled.
    """

    sampling_note = (
        "The sampled networks are the weight samples the sampler kept, taken in turn: with "
        "n passes and S samples each is counted about n/S times."
    )

    def __init__(self, config: ModelConfig) -> None:
        super().__init__(config)
        for name, p in MLP(config).named_parameters():
            shape = (config.params["members"], *p.shape)
            self.register_buffer(_key(name), torch.zeros(shape, dtype=torch.float16))

    @property
    def capacity(self) -> int:
        """S, the number of samples the model stores."""
        return self.config.params["members"]

    def add_sample(self) -> None:
        """Store the current parameters as the next sample (the oldest is replaced when full)."""
        slot = int(self.n_collected) % self.capacity
        with torch.no_grad():
            for name, p in self.named_parameters():
                getattr(self, _key(name))[slot].copy_(p)
        self.n_collected += 1

    def stored(self) -> dict[str, torch.Tensor]:
        """The stored samples in float32, ``{name: (n, *shape)}`` for n = min(n_collected, S)."""
        n = min(int(self.n_collected), self.capacity)
        return {name: getattr(self, _key(name))[:n].float() for name, _ in self.named_parameters()}

    def _draws(self, n_samples: int) -> dict[str, torch.Tensor]:
        stored = self.stored()
        n = next(iter(stored.values())).shape[0]
        index = torch.arange(n_samples, device=self.n_collected.device) % n
        if n_samples == 1:
            index = torch.randint(n, (1,), device=self.n_collected.device)
        return {name: s[index] for name, s in stored.items()}


def _key(name: str) -> str:
    """The buffer of the samples of parameter ``name``."""
    return "samples__" + name.replace(".", "__")
