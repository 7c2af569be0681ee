"""Rollout scalars: how one rollout's (m, d) reward matrix becomes the number its group normalises.

All functions are vectorised over leading axes and compute in float64.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import finite_array

__all__ = ["best_of_m_mean", "linear_reward", "multi_rlvr_reward", "vpo_reward"]


def vpo_reward(rewards: ArrayLike, weights: ArrayLike) -> NDArray[np.float64]:
    """VPO's Monte Carlo set reward: mean over K weights of the best candidate's w·r (paper eq. 2).

    Args:
        rewards: Reward matrices, shape (..., m, d).
        weights: Weight vectors, shape (K, d) shared by every matrix, or (..., K, d) broadcastable
            against the leading axes of `rewards` (one set of K draws per group).

    Returns:
        R̂ = (1/K) Σ_k max_j w_k·r_j, shape (...).

    Raises:
        ValueError: On non-finite input or mismatched d.
    """
    r = finite_array("rewards", rewards, 2)
    w = finite_array("weights", weights, 2)
    if r.shape[-1] != w.shape[-1]:
        raise ValueError(
            f"rewards have d={r.shape[-1]} but weights have d={w.shape[-1]} (shapes {r.shape}, {w.shape})."
        )
    return best_of_m_mean(r, w)


def best_of_m_mean(rewards: NDArray[np.float64], weights: NDArray[np.float64]) -> NDArray[np.float64]:
    """`vpo_reward` without its argument checks, for callers whose arrays are already checked.

    The scores of each reward matrix come from a matrix product of their own: with rewards
    (..., m, d) and weights (..., K, d), ``np.matmul`` runs one (m, d) @ (d, K) product per matrix
    (a stack, never one product over the concatenated rows), so a matrix's R̂ depends only on its
    own values and its weights, bit for bit, wherever it sits in the batch.

    Args:
        rewards: Reward matrices, shape (..., m, d), finite.
        weights: Weight vectors, shape (..., K, d), finite, broadcastable against `rewards`.

    Returns:
        R̂, shape (...).
    """
    scores = np.matmul(rewards, np.swapaxes(weights, -1, -2))  # (..., m, K)
    return scores.max(axis=-2).mean(axis=-1)


def linear_reward(rewards: ArrayLike, w: ArrayLike) -> NDArray[np.float64]:
    """The scalarisation w·r.

    Args:
        rewards: Reward vectors, shape (..., d).
        w: Weights, shape (d,) or broadcastable (..., d).

    Returns:
        Scalars, shape (...).
    """
    r = finite_array("rewards", rewards, 1)
    weights = finite_array("w", w, 1)
    if r.shape[-1] != weights.shape[-1]:
        raise ValueError(f"rewards have d={r.shape[-1]} but w has d={weights.shape[-1]}.")
    if weights.ndim == 1:
        return r @ weights
    return np.einsum("...d,...d->...", r, weights)


def multi_rlvr_reward(rewards: ArrayLike, w_star: ArrayLike) -> NDArray[np.float64]:
    """Multi-RLVR as run for the VPO paper: the sum of w*·r over a completion's candidates.

    The matrix must already be de-duplicated and zero-padded (`TextEnv.training_rewards`), so a
    duplicate is worth a missing answer (the VPO authors' Multi-RLVR baseline).

    Args:
        rewards: Reward matrices, shape (..., m, d).
        w_star: The fixed scalarisation, shape (d,).

    Returns:
        Σ_j w*·r_j, shape (...).
    """
    r = finite_array("rewards", rewards, 2)
    return linear_reward(r, w_star).sum(axis=-1)
