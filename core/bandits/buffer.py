"""The replay buffer of a bandit's reward networks: every run's most recent interactions."""

from __future__ import annotations

import torch


class ReplayBuffer:
    """The most recent interactions of every run, in a ring.

    Attributes:
        contexts: ``(n_runs, capacity, context_dim)``.
        actions: ``(n_runs, capacity)`` int64.
        rewards: ``(n_runs, capacity)`` float32, reward units divided by the scale.
        size: Interactions held per run (the same for all runs: they act in lockstep).
        seen: Interactions added per run since the buffer was made (``size`` until it is full).
    """

    def __init__(
        self, n_runs: int, capacity: int, context_dim: int, device: torch.device | str = "cpu"
    ) -> None:
        """Allocate an empty buffer.

        Args:
            n_runs: Number of runs.
            capacity: Interactions kept per run.
            context_dim: Width of a context.
            device: Where the interactions are kept (the networks' device).
        """
        self.capacity = capacity
        self.contexts = torch.zeros(n_runs, capacity, context_dim, device=device)
        self.actions = torch.zeros(n_runs, capacity, dtype=torch.long, device=device)
        self.rewards = torch.zeros(n_runs, capacity, device=device)
        self.size, self._next, self.seen = 0, 0, 0

    def add(self, contexts: torch.Tensor, actions: torch.Tensor, rewards: torch.Tensor) -> None:
        """Store one interaction per run, over the oldest when full.

        Args:
            contexts: ``(n_runs, context_dim)``.
            actions: ``(n_runs,)``.
            rewards: ``(n_runs,)``.
        """
        i = self._next
        self.contexts[:, i] = contexts
        self.actions[:, i] = actions
        self.rewards[:, i] = rewards.float()
        self._next = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        self.seen += 1

    @property
    def next_slot(self) -> int:
        """Where :meth:`add` writes the next interaction."""
        return self._next

    def state_dict(self) -> dict:
        """The interactions held and where the next one goes.

        Returns:
            Tensors and ints.
        """
        return {
            "contexts": self.contexts,
            "actions": self.actions,
            "rewards": self.rewards,
            "size": self.size,
            "next": self._next,
            "seen": self.seen,
        }

    def load_state_dict(self, state: dict) -> None:
        """Hold what :meth:`state_dict` of a buffer of the same sizes returned.

        Args:
            state: What :meth:`state_dict` returned.
        """
        self.contexts.copy_(state["contexts"])
        self.actions.copy_(state["actions"])
        self.rewards.copy_(state["rewards"])
        self.size, self._next = state["size"], state["next"]
        self.seen = state.get("seen", self.size)  # states saved before it was kept

    def gather(self, idx: torch.Tensor):
        """The interactions at positions ``idx`` of every run's ring.

        Args:
            idx: Positions ``(K, B)`` in ``[0, size)``, row k from run k (on the buffer's
                device).

        Returns:
            ``(contexts (K, B, context_dim), actions (K, B), rewards (K, B))``.
        """
        rows = torch.arange(idx.shape[0], device=idx.device)[:, None]
        return self.contexts[rows, idx], self.actions[rows, idx], self.rewards[rows, idx]
