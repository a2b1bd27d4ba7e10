"""Bayes by Backprop (Blundell et al. 2015).

An MLP of mean-field Gaussian ``BayesLinear`` layers.
"""

from __future__ import annotations

from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import vmap

from core.engine import native
from core.engine.fused import FusedSampler, LRTActivation
from core.engine.interface import ModelConfig, MonteCarloModule, flat
from core.engine.layers import BayesLinear, LayerNoise
from core.engine.priors import prior_from_dict
from core.methods.base import prior_config


class BayesMLP(MonteCarloModule):
    """MLP of :class:`~core.engine.layers.BayesLinear` layers with ReLU (default 784-400-400-10).

    Attributes:
        stochastic: Always True: every pass draws fresh weight (or pre-activation) noise.
        weight_posterior: Always True: each weight has a posterior mean μ and std σ.
        config: The architecture and the parameters of :mod:`core.methods.bbb` (prior, initial
            σ, the estimator ``impl``).
        lrt: Whether a pass samples pre-activations (local reparameterisation) unless told
            otherwise: when it trains with them (``impl == "vmap_lrt"``).
        layers: The :class:`~core.engine.layers.BayesLinear` layers, input to output.
    """

    stochastic = True
    weight_posterior = True

    def __init__(self, config: ModelConfig) -> None:
        """Build the layers of ``config.sizes`` with the prior of ``config.params``.

        Args:
            config: Architecture, prior and initial posterior σ (``init_sigma``), complete
                (:func:`core.methods.check_config`).
        """
        super().__init__()
        self.config = config
        self.lrt = config.params["impl"] == "vmap_lrt"
        prior = prior_from_dict(prior_config(config.params))
        self.layers = nn.ModuleList(
            BayesLinear(a, b, prior, init_sigma=config.params["init_sigma"])
            for a, b in pairwise(config.sizes)
        )
        self._fused: FusedSampler | None = None  # built on first use (layout and scratch, no state)

    def forward_with_kl(
        self,
        x: torch.Tensor,
        noise: list[LayerNoise] | None = None,
        lrt: bool | None = None,
        with_kl: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One stochastic pass: logits and the total complexity cost.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            noise: Per layer, standard-normal noise from :meth:`draw_noise` (one pass's slice);
                None draws fresh noise.
            lrt: True for local reparameterisation, False for weight sampling, None for
                :attr:`lrt`.
            with_kl: Whether to compute the complexity cost.

        Returns:
            ``(logits, kl)``: logits ``(B, C)`` and the summed complexity cost KL(q || p) of all
            layers in nats (a one-sample estimate for a scale-mixture prior), or None when
            ``with_kl`` is False.
        """
        lrt = self.lrt if lrt is None else lrt
        h, kl = flat(x), None
        for i, layer in enumerate(self.layers):
            h, layer_kl = layer(h, None if noise is None else noise[i], lrt=lrt, with_kl=with_kl)
            if with_kl:
                kl = layer_kl if kl is None else kl + layer_kl
            if i < len(self.layers) - 1:
                h = F.relu(h)
        return h, kl

    def fused_forward_with_kl(
        self, x: torch.Tensor, noise: list[LayerNoise] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One weight-sampling pass with the fused sampler (:mod:`core.engine.fused`).

        The same estimator as ``forward_with_kl(x, noise, lrt=False)`` (same weights, complexity
        cost and gradients given the same noise) with far fewer passes over the weights; one
        noise draw covers all layers.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            noise: Per layer, ``"weight"`` and ``"bias"`` noise of one pass (one pass's slice of
                :meth:`draw_noise`); None draws fresh noise.

        Returns:
            ``(logits, kl)``: logits ``(B, C)`` and the summed complexity cost in nats (a
            one-sample estimate for a scale-mixture prior).
        """
        if self._fused is None:
            self._fused = FusedSampler(self.layers)
        weights, kl = self._fused.sample(noise)
        h = flat(x)
        for i, (w, b) in enumerate(weights):
            h = F.linear(h, w, b)
            if i < len(weights) - 1:
                h = F.relu(h)
        return h, kl

    def lrt_forward_with_kl(
        self, x: torch.Tensor, n_samples: int, noise: list[LayerNoise] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``n_samples`` local-reparameterisation passes at once, batched over the samples.

        The same pre-activations as ``forward_with_kl(x, noise_s, lrt=True)`` for every pass s
        (mean x·μ + c, variance x²·σ² + σ_c², one standard-normal draw per input, unit and pass),
        computed without ``vmap``: σ = softplus(ρ) and the complexity cost once per step
        (:meth:`FusedSampler.sigma_kl`; the mixture prior's one weight draw per pass in one
        node), and the first layer's mean and variance products, which do not depend on the
        pass, once for all passes; later layers run on ``(S·B, width)`` rows.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            n_samples: Number of passes S.
            noise: Per layer, noise with a leading S dim as from :meth:`draw_noise` with
                ``lrt=True`` (``"out"``; ``"weight"`` and ``"bias"`` for the mixture prior's
                complexity cost), or None for fresh draws.

        Returns:
            ``(outputs, kl)``: logits ``(S, B, C)`` and per pass the complexity cost in nats
            ``(S,)``.
        """
        if self._fused is None:
            self._fused = FusedSampler(self.layers)
        variances, kl = self._fused.sigma_kl(n_samples, noise)
        h = flat(x)
        square = h * h
        last = len(self.layers) - 1
        for i, (layer, (w_var, b_var)) in enumerate(zip(self.layers, variances, strict=True)):
            mean = F.linear(h, layer.weight_mu, layer.bias_mu)
            var = F.linear(square, w_var, b_var + 1e-16)  # + 1e-16: sqrt stays differentiable
            if noise is None:
                eps = native.standard_normal((n_samples, *mean.shape[-2:]), mean)
            else:
                eps = noise[i]["out"]
            if i < last:
                h, square = LRTActivation.apply(mean, var, eps, True)
            else:
                h = LRTActivation.apply(mean, var, eps, False)
        return h, kl

    def training_passes(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``n_samples`` weight (or local-reparameterisation) draws and their KL terms.

        Args:
            x: Inputs ``(B, ...)``.
            n_samples: Weight samples S.
            lrt: Local reparameterisation; None uses :attr:`lrt`.

        Returns:
            ``(outputs, kl)``: ``(S, B, C)`` and ``(S,)`` in nats.
        """
        draw = vmap(lambda _: self.forward_with_kl(x, lrt=lrt), randomness="different")
        return draw(torch.arange(n_samples, device=x.device))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One stochastic pass without the complexity cost.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        return self.forward_with_kl(x, with_kl=False)[0]

    def draw_noise(self, n_samples: int, batch_size: int, lrt: bool) -> list[LayerNoise]:
        """Standard-normal noise for ``n_samples`` passes, on the parameters' device.

        Args:
            n_samples: Number of passes (the leading dim of every tensor).
            batch_size: Number of inputs ``B`` per pass (only used for ``"out"``).
            lrt: Whether to add the ``"out"`` noise of local reparameterisation.

        Returns:
            Per layer, a dict with ``"weight"`` ``(n_samples, out, in)`` and ``"bias"``
            ``(n_samples, out)`` shaped like the parameters, plus ``"out"``
            ``(n_samples, B, out)`` when ``lrt``.
        """
        noise = []
        for layer in self.layers:
            mu = layer.weight_mu
            n = {
                "weight": torch.randn(n_samples, *mu.shape, device=mu.device),
                "bias": torch.randn(n_samples, layer.out_features, device=mu.device),
            }
            if lrt:
                n["out"] = torch.randn(n_samples, batch_size, layer.out_features, device=mu.device)
            noise.append(n)
        return noise
