"""Deep ensembles (Lakshminarayanan et al. 2017): M independently initialised MLPs.

The members are trained in one vectorised loop and averaged at prediction time.

The members' parameters are stacked along a leading ``M`` dim (``torch.func.stack_module_state``
of M freshly initialised :class:`~core.engine.mlp.MLP` s, so each member starts exactly like a
separately built MLP) and are this module's own parameters. All members run at once with
``torch.func.vmap`` over ``functional_call`` of one stateless copy of the MLP: no Python loop over
members, in training or prediction. Adam's update is element-wise, so training the stacked
parameters on the sum of the members' losses is the same as training the M networks separately
on the same minibatches (a test checks it).

Monte-Carlo passes are members: pass ``s`` is member ``s mod M``. With ``n_samples = M`` the
predictive mean is exactly the ensemble's average; fewer passes use the first members; more
cycle through them again. On the Draw page the "sampled networks" histogram therefore shows the
M members, each counted ``n_samples / M`` times.
"""

from __future__ import annotations

import copy

import torch
from torch import nn
from torch.func import functional_call, stack_module_state, vmap

from core.engine.interface import ModelConfig, MonteCarloModule, flat
from core.engine.mlp import MLP
from core.engine.samples import stacked_logits


class DeepEnsemble(MonteCarloModule):
    """M = ``config.params["members"]`` ReLU MLPs of ``config.sizes``, stacked (``(M, ...)``).

    Args:
        config: Architecture of every member and their number ``config.params["members"]``.

    Attributes:
        stochastic: True: passes go through different members.
        weight_posterior: False: point-estimate members, no posterior σ.
        sampling_note: Passes are members, cycled.
        config: The architecture the ensemble was built from.
        stacked: The members' parameters with a leading ``M`` dim, keyed by the MLP's
            parameter names with ``.`` replaced by ``__``.
    """

    stochastic = True
    weight_posterior = False
    sampling_note = (
        "The sampled networks of a deep ensemble are its members, taken in turn: with n passes "
        "and M members each member is counted about n/M times."
    )

    def __init__(self, config: ModelConfig) -> None:
        super().__init__()
        self.config = config
        members = [MLP(config) for _ in range(config.params["members"])]
        params, _ = stack_module_state(members)
        # state_dict keys read "stacked.layers.0.weight" etc., each with a leading M dim.
        self.stacked = nn.ParameterDict(
            {name.replace(".", "__"): nn.Parameter(p) for name, p in params.items()}
        )
        base = copy.deepcopy(members[0]).to("meta")
        object.__setattr__(self, "_base", base)  # stateless template, not a submodule

    @property
    def members(self) -> int:
        """Number of networks M."""
        return self.config.params["members"]

    def _params(self) -> dict[str, torch.Tensor]:
        return {name.replace("__", "."): p for name, p in self.stacked.items()}

    def member_logits(self, x: torch.Tensor, per_member: bool = False) -> torch.Tensor:
        """Logits of every member, in one vmapped call.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)`` shown to every member, or
                with ``per_member`` one batch per member, ``(M, B, ...)``.
            per_member: Whether ``x`` has a leading member dim.

        Returns:
            Logits ``(M, B, C)``.
        """
        if per_member:
            return vmap(lambda p, xm: functional_call(self._base, p, (flat(xm),)))(
                self._params(), x
            )
        return stacked_logits(self._base, self._params(), x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """One pass: the logits of one member drawn uniformly at random.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.

        Returns:
            Logits ``(B, C)``.
        """
        member = int(torch.randint(self.members, ()))
        params = {name: p[member] for name, p in self._params().items()}
        return functional_call(self._base, params, (flat(x),))

    def sample_logits(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = True
    ) -> torch.Tensor:
        """Logits of ``n_samples`` passes, pass ``s`` being member ``s mod M``.

        Args:
            x: Images ``(B, 1, 28, 28)`` or flat inputs ``(B, 784)``.
            n_samples: Number of passes; ``n_samples = M`` gives each member once.
            lrt: Ignored (no weight posterior).

        Returns:
            Logits ``(n_samples, B, C)``.
        """
        logits = self.member_logits(x)
        return logits[torch.arange(n_samples, device=logits.device) % self.members]

    def training_passes(
        self, x: torch.Tensor, n_samples: int, lrt: bool | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Every member's outputs (each member trains on its own pass), no complexity cost.

        Args:
            x: Inputs ``(B, ...)``.
            n_samples: Ignored: the passes are the M members.
            lrt: Ignored.

        Returns:
            ``(outputs, kl)``: ``(M, B, C)`` and zeros ``(M,)``.
        """
        out = self.member_logits(x)
        return out, out.new_zeros(out.shape[0])

    def sample_functions(self, x: torch.Tensor, n_samples: int) -> torch.Tensor:
        """The M members' functions, each once (``n_samples`` is ignored).

        Args:
            x: Inputs ``(B, ...)``.
            n_samples: Ignored.

        Returns:
            Outputs ``(M, B, C)``.
        """
        return self.member_logits(x)

    def sample_function(self, x: torch.Tensor) -> torch.Tensor:
        """One member drawn uniformly, by a tensor index (so it vmaps, unlike :meth:`forward`).

        Args:
            x: Inputs ``(B, ...)``.

        Returns:
            Outputs ``(B, C)``.
        """
        logits = self.member_logits(x)
        return logits[torch.randint(self.members, (), device=logits.device)]

    def member(self, index: int) -> MLP:
        """A stand-alone copy of one member as an :class:`~core.engine.mlp.MLP`.

        Args:
            index: Which member, in 0..M−1.

        Returns:
            The member's network, on the ensemble's device.
        """
        mlp = MLP(self.config)
        mlp.load_state_dict({n: p[index].detach() for n, p in self._params().items()})
        return mlp.to(next(self.parameters()).device)
