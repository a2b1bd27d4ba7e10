"""The one model interface of the lab: configuration, kinds and the :class:`LabModel` protocol.

Every model maps images ``(B, 1, 28, 28)`` (or flat ``(B, 784)``) to class logits ``(B, C)`` and
offers:

* ``forward(x)``: one stochastic forward pass (a deterministic pass for a point estimate);
* ``forward_with_kl(x, noise=None, lrt=None, with_kl=True) -> (logits, kl)``: the same pass
  plus the complexity cost in nats (0 for models without a weight posterior), used by
  :mod:`core.engine.objective`;
* ``stochastic``: whether repeated passes differ; ``n_samples`` passes for a batch are drawn
  by :func:`core.engine.sampler.predictive_samples`;
* ``weight_posterior``: whether each weight has a posterior mean and standard deviation
  (signal-to-noise pruning applies).

A new method is one package of :mod:`core.methods` whose model class follows :class:`LabModel`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Protocol, runtime_checkable

import torch
from torch import nn
from torch.func import vmap


@dataclass(frozen=True)
class ConvLayout:
    """How the convolutions of :attr:`ModelConfig.conv` are laid out (ReLU after each).

    Attributes:
        kernel: Side of each square kernel (pixels).
        stride: Stride of each convolution.
        padding: Zero padding on each side (pixels).
        pool: Side of the max-pooling after the last convolution (1: none).
    """

    kernel: int
    stride: int
    padding: int
    pool: int = 1

    def side(self, side: int, n_convs: int) -> int:
        """Side of the feature maps after ``n_convs`` convolutions and the pooling.

        Args:
            side: Side of the input image (pixels).
            n_convs: Number of convolutions.

        Returns:
            The side of the last (pooled) feature maps.
        """
        for _ in range(n_convs):
            side = (side + 2 * self.padding - self.kernel) // self.stride + 1
        return side // self.pool


CONV_LAYOUTS = {
    "strided": ConvLayout(kernel=5, stride=2, padding=2),
    "pooled": ConvLayout(kernel=4, stride=1, padding=0, pool=2),
}
"""Layout name → layout. ``strided``: 5 × 5 stride-2 convolutions, padding 2 (each halves the
side, rounding up: 28 → 14 → 7), the lab's small CNN. ``pooled``: 4 × 4 convolutions without
padding and one 2 × 2 max-pool (28 → 25 → 22 → 11), the network of Gal et al. (2017)."""


@dataclass(frozen=True)
class ModelConfig:
    """A model: its network and its method's parameters; JSON-serialisable via :meth:`to_dict`.

    ``hidden`` and ``conv`` are normalised to tuples of ints. Whether the method of ``kind``
    exists, offers convolutions and has the parameters ``params`` is checked, and ``params``
    completed with the method's defaults, by :func:`core.methods.check_config` (which
    :func:`core.methods.build_model` calls).

    Attributes:
        kind: The method, a key of :data:`core.methods.METHODS`.
        hidden: Hidden layer widths.
        in_features: Input width (784 for flattened 28 × 28 images).
        num_classes: Number of classes C (the output width).
        conv: Output channels of the convolutions applied to the square image before the
            dense layers, e.g. ``(16, 32)`` maps 1 × 28 × 28 to 32 × 7 × 7 in the ``strided``
            layout; empty (the default): no convolution.
        conv_layout: A key of :data:`CONV_LAYOUTS`: kernels, strides and pooling of ``conv``.
        params: The method's own parameters by name (its
            :class:`~core.methods.base.Setting` s, e.g. ``{"beta": 0.1, "init_sigma": 1e-3}``
            for Bayes by Backprop); the method's defaults where absent.

    Raises:
        ValueError: If ``conv`` is given for a non-square input or ``conv_layout`` is
            unknown.
    """

    kind: str = "bbb"
    hidden: tuple[int, ...] = (400, 400)
    in_features: int = 784
    num_classes: int = 10
    conv: tuple[int, ...] = ()
    conv_layout: str = "strided"
    params: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(h) for h in self.hidden))
        object.__setattr__(self, "conv", tuple(int(c) for c in self.conv))
        object.__setattr__(self, "params", dict(self.params))
        if self.conv and math.isqrt(self.in_features) ** 2 != self.in_features:
            raise ValueError(f"convolutions need a square image, got {self.in_features} inputs")
        if self.conv_layout not in CONV_LAYOUTS:
            raise ValueError(f"conv_layout must be one of {sorted(CONV_LAYOUTS)}")

    @property
    def image_side(self) -> int:
        """Side of the square input image in pixels (28 for 784 inputs), for convolutions."""
        return math.isqrt(self.in_features)

    @property
    def sizes(self) -> list[int]:
        """Widths of the dense layers from input to output, e.g. ``[784, 400, 400, 10]``.

        With :attr:`conv`, the first width is the flattened output of the last convolution
        and the pooling (:meth:`ConvLayout.side`).
        """
        first = self.in_features
        if self.conv:
            side = CONV_LAYOUTS[self.conv_layout].side(self.image_side, len(self.conv))
            first = self.conv[-1] * side**2
        return [first, *self.hidden, self.num_classes]

    def to_dict(self) -> dict:
        """The configuration as a JSON-serialisable dict.

        Returns:
            Every field by name, with ``hidden`` as a list.
        """
        d = asdict(self)
        d["hidden"] = list(self.hidden)
        d["conv"] = list(self.conv)
        return d

    @classmethod
    def from_dict(cls, d: dict) -> ModelConfig:
        """The configuration stored by :meth:`to_dict` (e.g. in a checkpoint).

        Args:
            d: Field values by name; missing fields take their defaults.

        Returns:
            The configuration.

        Raises:
            ValueError: If a field is out of range (see the class).
        """
        return cls(**d)


@runtime_checkable
class LabModel(Protocol):
    """What every model kind offers to the sampler, the objective, the studies and the pages.

    Attributes:
        config: The architecture the model was built from.
        stochastic: Whether repeated passes differ.
        weight_posterior: Whether each weight has a posterior mean and standard deviation
            (signal-to-noise pruning applies).
    """

    config: ModelConfig
    stochastic: bool
    weight_posterior: bool

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One pass (stochastic for a stochastic kind).

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        ...

    def forward_with_kl(
        self,
        x: torch.Tensor,
        noise: list[dict[str, torch.Tensor]] | None = None,
        lrt: bool | None = None,
        with_kl: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One pass and its complexity cost, as used by :mod:`core.engine.objective`.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            noise: Per-layer noise that fixes the randomness (BBB; ignored by other kinds),
                or None to draw it inside.
            lrt: BBB: local reparameterisation; None uses the model's own choice.
            with_kl: Whether to compute the complexity cost.

        Returns:
            ``(logits, kl)``: logits ``(B, C)`` and the complexity cost in nats (0 for models
            without a weight posterior), or None when ``with_kl`` is False.
        """
        ...

    def sample_logits(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = True
    ) -> torch.Tensor:
        """Logits of ``n_samples`` passes (see :class:`MonteCarloModule`).

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            n_samples: Number of Monte-Carlo passes.
            lrt: Passed to ``forward_with_kl`` (BBB: local reparameterisation).

        Returns:
            Logits ``(n_samples, B, C)``.
        """
        ...


class MonteCarloModule(nn.Module):
    """Base class of the model kinds: the default way to draw ``n_samples`` passes.

    A stochastic kind's passes are ``forward_with_kl`` vmapped over the samples with
    ``randomness="different"`` (each pass its own noise, no Python loop); a deterministic kind
    repeats its one pass (``expand``, no copy). Kinds whose passes are not independent draws
    (a deep ensemble cycles through its members) override :meth:`sample_logits`.

    Attributes:
        stochastic: Whether repeated passes differ (True unless a kind says otherwise).
        weight_posterior: Whether each weight has a posterior mean and standard deviation.
        sampling_note: What one "sampled network" is for this kind, when it is not an
            independent posterior draw ("" otherwise); pages show it beside the votes.
    """

    stochastic: bool = True
    weight_posterior: bool = False
    sampling_note: str = ""

    def forward_with_kl(
        self,
        x: torch.Tensor,
        noise: list[dict[str, torch.Tensor]] | None = None,
        lrt: bool | None = None,
        with_kl: bool = True,
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """One pass (``forward``) and a complexity cost of 0.

        The default for kinds without a KL term in their objective (point estimates,
        ensembles, post-hoc posteriors); Bayes by Backprop overrides it.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            noise: Ignored (no weight noise).
            lrt: Ignored (no weight posterior).
            with_kl: Whether to return the (zero) complexity cost.

        Returns:
            ``(logits, kl)``: logits ``(B, C)`` and a scalar 0 (nats), or None when ``with_kl``
            is False.
        """
        logits = self.forward(x)
        return logits, (logits.new_zeros(()) if with_kl else None)

    def sample_logits(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = True
    ) -> torch.Tensor:
        """Logits of ``n_samples`` passes on ``x``, differentiable w.r.t. ``x``.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            n_samples: Number of Monte-Carlo passes.
            lrt: Passed to ``forward_with_kl`` (BBB: local reparameterisation).

        Returns:
            Logits ``(n_samples, B, C)``; for a deterministic kind, one pass expanded (no copy).
        """
        if not self.stochastic:
            return self(x).unsqueeze(0).expand(n_samples, -1, -1)
        draw = vmap(
            lambda _: self.forward_with_kl(x, lrt=lrt, with_kl=False)[0], randomness="different"
        )
        return draw(torch.arange(n_samples, device=x.device))

    def training_passes(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The passes of one training step on ``x`` and their complexity costs.

        By default one pass (``forward_with_kl``: MC dropout draws fresh masks per input);
        Bayes by Backprop draws ``n_samples`` weight samples, a deep ensemble runs every
        member. The training objective averages the passes' losses.

        Args:
            x: Inputs ``(B, ...)``.
            n_samples: Weight samples S, for kinds that sample in training.
            lrt: Bayes by Backprop: local reparameterisation (None: the configuration's).

        Returns:
            ``(outputs, kl)``: ``(P, B, C)`` for P passes and ``(P,)`` in nats.
        """
        out, kl = self.forward_with_kl(x, lrt=lrt)
        return out[None], kl[None]

    def sample_functions(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """``n_samples`` sampled functions on ``x``: each pass's randomness shared by all inputs.

        Each input's predictive is that of :meth:`sample_logits`; only the joint over inputs
        differs (smooth curves for the regression playground). By default the passes of
        :meth:`sample_logits` without local reparameterisation (which samples per input).

        Args:
            x: Inputs ``(B, ...)``.
            n_samples: Number of passes.

        Returns:
            Outputs ``(n_samples, B, C)``.
        """
        return self.sample_logits(x, n_samples, lrt=False)

    def sample_function(self, x: torch.Tensor) -> torch.Tensor:
        """One function drawn from the predictive: one network for all inputs.

        What a Thompson-sampling decision acts on (one weight draw, one set of dropout masks,
        one ensemble member or weight sample); vmappable with ``randomness="different"``.

        Args:
            x: Inputs ``(B, ...)``.

        Returns:
            Outputs ``(B, C)``.
        """
        return self.sample_functions(x, 1)[0]


def flat(x: torch.Tensor) -> torch.Tensor:
    """Flatten images to vectors; flat input is returned as it is.

    Args:
        x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

    Returns:
        Flat inputs ``(B, 784)``.
    """
    return x.reshape(x.shape[0], -1) if x.dim() > 2 else x
