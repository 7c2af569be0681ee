"""The tabular policy: m answer slots over N candidates per task, its REINFORCE gradient, and Adam.

Slot j of task t picks candidate c_j from ``softmax(a[t, j] + Σ_{i<j} B[t, (j, i), c_i])`` over the
task's real candidates: slot 1 is a plain softmax, later slots see the earlier picks through one
(N, N) table per ordered pair (j, i) of slots. m = 1 is the single-answer policy. With B = 0 the slots
are independent; B lets a slot learn "not what an earlier slot already wrote" (the in-context
mechanism of a multi-answer LM), and independent slots can already represent any deterministic set.

The update maximises the REINFORCE objective ``J = (1/G) Σ_g A_g log π(y_g)`` of each task's group of
G rollouts (the advantages are constants), whose gradient with respect to slot j's logits is
``(A_g / G)(onehot(c_j) − p_j)``. The a-tables use dense Adam; a B row moves only when its context was
sampled in the step (the sparse-Adam rule), since other rows have no gradient.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["Gradient", "TabularPolicy"]

_NEG = -1e30  # logit of a padded candidate: probability exactly 0 after the softmax


def _pairs(m: int) -> list[tuple[int, int]]:
    """Ordered slot pairs (j, i) with i < j, in the order of the B tables."""
    return [(j, i) for j in range(m) for i in range(j)]


@dataclass
class Gradient:
    """dJ of one step.

    Attributes:
        a: Gradient of the slot logits, shape (T, m, N).
        rows: Touched B rows as flat indices into B viewed as (T·P·N, N), shape (R,), unique.
        b_rows: Gradient of those rows, shape (R, N).
    """

    a: NDArray[np.float64]
    rows: NDArray[np.int64]
    b_rows: NDArray[np.float64]


class TabularPolicy:
    """m slots per task over N padded candidates.

    Args:
        prior: Start distribution per task, shape (T, N); its support (prior > 0) within `real` is the
            set of candidates the policy can ever pick.
        real: Which candidates exist, shape (T, N).
        m: Answer slots (1: single-answer).

    Attributes:
        a: Slot logits, shape (T, m, N), initialised to log(prior) in every slot.
        b: Pair tables, shape (T, P, N, N), P = m(m−1)/2, initialised to 0.
    """

    def __init__(self, prior: NDArray[np.float64], real: NDArray[np.bool_], m: int) -> None:
        prior = np.asarray(prior, dtype=np.float64)
        if prior.shape != real.shape or prior.ndim != 2:
            raise ValueError(f"prior must have the candidates' shape (T, N) = {real.shape}, got {prior.shape}.")
        if m < 1:
            raise ValueError(f"m must be >= 1, got {m}.")
        if np.any(prior[real] < 0) or not np.all(np.isfinite(prior)):
            raise ValueError("the prior must be finite and >= 0.")
        self.real = np.asarray(real, dtype=bool) & (prior > 0)  # a softmax never reaches what the prior excludes
        if not self.real.any(axis=1).all():
            raise ValueError("the prior gives a task no candidate with positive probability.")
        self.m = m
        self.pairs = _pairs(m)
        t, n = prior.shape
        logp = np.where(self.real, np.log(np.where(self.real, prior, 1.0)), 0.0)
        self.a = np.repeat(logp[:, None, :], m, axis=1)
        self.b = np.zeros((t, len(self.pairs), n, n))

    @property
    def shape(self) -> tuple[int, int, int]:
        """(T tasks, m slots, N candidates)."""
        t, m, n = self.a.shape
        return t, m, n

    def copy(self) -> TabularPolicy:
        """An independent copy (for checkpoints)."""
        out = object.__new__(TabularPolicy)
        out.real, out.m, out.pairs = self.real, self.m, self.pairs
        out.a, out.b = self.a.copy(), self.b.copy()
        return out

    # ------------------------------------------------------------------------------ probabilities
    def _slot_logits(self, j: int, choices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Logits of slot j given the earlier picks, shape (T, G, N); choices (T, G, m)."""
        t_idx = np.arange(self.a.shape[0])[:, None]
        logits = np.broadcast_to(self.a[:, None, j, :], (*choices.shape[:2], self.a.shape[2])).copy()
        for p, (jj, i) in enumerate(self.pairs):
            if jj == j:
                logits += self.b[t_idx, p, choices[:, :, i]]
        return np.where(self.real[:, None, :], logits, _NEG)

    @staticmethod
    def _softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
        z = np.exp(logits - logits.max(axis=-1, keepdims=True))
        return z / z.sum(axis=-1, keepdims=True)

    def sample(self, rng: np.random.Generator, n: int) -> NDArray[np.int64]:
        """N rollouts per task, slot by slot (Gumbel-max), shape (T, n, m)."""
        t = self.a.shape[0]
        choices = np.zeros((t, n, self.m), dtype=np.int64)
        for j in range(self.m):
            logits = self._slot_logits(j, choices)
            gumbel = -np.log(-np.log(rng.random(logits.shape)))
            choices[:, :, j] = np.argmax(logits + gumbel, axis=-1)
        return choices

    def log_prob(self, choices: NDArray[np.int64]) -> NDArray[np.float64]:
        """Log π of each rollout, shape (T, G); choices (T, G, m)."""
        out = np.zeros(choices.shape[:2])
        for j in range(self.m):
            logits = self._slot_logits(j, choices)
            shifted = logits - logits.max(axis=-1, keepdims=True)
            logz = np.log(np.exp(shifted).sum(axis=-1))
            out += np.take_along_axis(shifted, choices[:, :, j : j + 1], axis=-1)[..., 0] - logz
        return out

    # ------------------------------------------------------------------------------ gradient
    def gradient(self, choices: NDArray[np.int64], advantages: NDArray[np.float64]) -> Gradient:
        """Exact gradient of J = (1/G) Σ_g A_g log π(y_g), summed over tasks.

        Args:
            choices: Rollouts, shape (T, G, m).
            advantages: One per rollout, shape (T, G).

        Returns:
            The gradient (dense for a, touched rows for B).
        """
        t, g, _ = choices.shape
        n = self.a.shape[2]
        grad_a = np.zeros_like(self.a)
        flat_rows: list[NDArray[np.int64]] = []
        flat_grads: list[NDArray[np.float64]] = []
        t_idx = np.arange(t)[:, None]
        for j in range(self.m):
            probs = self._softmax(self._slot_logits(j, choices))  # (T, G, N)
            dlogits = -probs
            np.put_along_axis(
                dlogits, choices[:, :, j : j + 1], np.take_along_axis(dlogits, choices[:, :, j : j + 1], -1) + 1.0, -1
            )
            dlogits *= (advantages / g)[:, :, None]
            grad_a[:, j] = dlogits.sum(axis=1)
            for p, (jj, i) in enumerate(self.pairs):
                if jj == j:
                    flat_rows.append(((t_idx * len(self.pairs) + p) * n + choices[:, :, i]).reshape(-1))
                    flat_grads.append(dlogits.reshape(-1, n))
        if not flat_rows:
            return Gradient(grad_a, np.zeros(0, dtype=np.int64), np.zeros((0, n)))
        flat = np.concatenate(flat_rows)
        order = np.argsort(flat, kind="stable")
        rows, first = np.unique(flat[order], return_index=True)
        b_rows = np.add.reduceat(np.concatenate(flat_grads)[order], first, axis=0)  # summed per touched row
        return Gradient(grad_a, rows, b_rows)

    def dense_b_gradient(self, grad: Gradient) -> NDArray[np.float64]:
        """The B gradient as a dense array of B's shape (T, P, N, N) (for checks)."""
        out = np.zeros_like(self.b)
        out.reshape(-1, self.b.shape[-1])[grad.rows] = grad.b_rows
        return out


class Adam:
    """Adam ascent on a policy: dense for a, per-row (sparse-Adam rule) for B.

    Args:
        policy: The policy to update in place.
        lr: Step size.
        betas: Moment decays.
        eps: Added to the root of the second moment.
    """

    def __init__(self, policy: TabularPolicy, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        if not lr > 0:
            raise ValueError(f"lr must be > 0, got {lr!r}.")
        self.policy, self.lr, self.betas, self.eps = policy, lr, betas, eps
        self.step_count = 0
        self.m_a, self.v_a = np.zeros_like(policy.a), np.zeros_like(policy.a)
        n = policy.b.shape[-1]
        self.m_b, self.v_b = np.zeros((policy.b.size // max(n, 1), n)), np.zeros((policy.b.size // max(n, 1), n))

    def step(self, grad: Gradient) -> None:
        """One ascent step along `grad` (the policy is maximising J)."""
        b1, b2 = self.betas
        self.step_count += 1
        c1, c2 = 1.0 - b1**self.step_count, 1.0 - b2**self.step_count
        self.m_a = b1 * self.m_a + (1 - b1) * grad.a
        self.v_a = b2 * self.v_a + (1 - b2) * grad.a**2
        self.policy.a += self.lr * (self.m_a / c1) / (np.sqrt(self.v_a / c2) + self.eps)
        if grad.rows.size:
            rows = grad.rows
            self.m_b[rows] = b1 * self.m_b[rows] + (1 - b1) * grad.b_rows
            self.v_b[rows] = b2 * self.v_b[rows] + (1 - b2) * grad.b_rows**2
            b_flat = self.policy.b.reshape(-1, self.policy.b.shape[-1])
            b_flat[rows] += self.lr * (self.m_b[rows] / c1) / (np.sqrt(self.v_b[rows] / c2) + self.eps)
