"""Rollout objectives: how one rollout's (m, d) reward matrix becomes the number its group normalises.

The public functions (`vpo_reward`, `linear_reward`, `multi_rlvr_reward`) check their arguments and
are the scalarisations themselves: the objectives registered here with `register_objective` (``w_star``,
``random_w``, ``goal_w``, ``per_dim``, ``multi_sum``, ``vpo``) call the same code on the (B, G, m, d)
batch that `vpo_core.advantages.rollout_scalars` has checked, so what the tests pin is what trains.

All functions are vectorised over leading axes and compute in float64.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import finite_array
from vpo_core.methods import OBJECTIVES, Method, register_objective, registered_part
from vpo_core.weights import WEIGHT_SAMPLERS, KeyedWeights

__all__ = [
    "GROUPS_PER_BLOCK",
    "Objective",
    "ObjectiveInputs",
    "best_of_m_mean",
    "linear_reward",
    "multi_rlvr_reward",
    "objective_of",
    "vpo_reward",
]


# --------------------------------------------------------------------------- the scalarisations
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


def _dot(rewards: NDArray[np.float64], w: NDArray[np.float64]) -> NDArray[np.float64]:
    """w·r over the last axis: w of shape (d,), or (..., d) broadcastable against rewards (..., d)."""
    if w.ndim == 1:
        return np.einsum("...d,d->...", rewards, w)
    return np.einsum("...d,...d->...", rewards, w)


def _sum_over_answers(rewards: NDArray[np.float64], w_star: NDArray[np.float64]) -> NDArray[np.float64]:
    """Σ_j w*·r_j of reward matrices (..., m, d) under w* (d,), in one contraction."""
    return np.einsum("...jd,d->...", rewards, w_star)


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
    return _dot(r, weights)


def multi_rlvr_reward(rewards: ArrayLike, w_star: ArrayLike) -> NDArray[np.float64]:
    """Multi-RLVR as run for the VPO paper: the sum of w*·r over a completion's candidates.

    The matrix must already be de-duplicated and zero-padded (`TextEnv.score_completion`), so a
    duplicate is worth a missing answer (the VPO authors' Multi-RLVR baseline).

    Args:
        rewards: Reward matrices, shape (..., m, d).
        w_star: The fixed scalarisation, shape (d,).

    Returns:
        Σ_j w*·r_j, shape (...).
    """
    r = finite_array("rewards", rewards, 2)
    w = finite_array("w_star", w_star, 1)
    if w.ndim != 1 or r.shape[-1] != w.shape[0]:
        raise ValueError(f"rewards have d={r.shape[-1]} but w_star has shape {w.shape}; it must be ({r.shape[-1]},).")
    return _sum_over_answers(r, w)


# ------------------------------------------------------------------------ registered objectives
@dataclass(frozen=True)
class ObjectiveInputs:
    """What an objective may read besides the rewards (checked by `rollout_scalars`).

    Attributes:
        w_star: The env's fixed scalarisation, shape (d,).
        keys: One key per group, length B (the group-shared draws are keyed by it).
        seed: The run's seed.
        num_weights: K, vpo's draws per group.
        alpha: Dirichlet concentration (vpo, random_w).
        goal_weights: goal_cond's prompt weights, shape (B, d), or None.
        weight_sampler: A name of `vpo_core.weights.WEIGHT_SAMPLERS`: how vpo and random_w draw the
            group-shared weights (``"dirichlet"``, iid draws, or e.g. vpo-lab's ``"sobol"``, `vpo_lab.qmc`).
    """

    w_star: NDArray[np.float64]
    keys: Sequence[Hashable]
    seed: int
    num_weights: int
    alpha: float
    goal_weights: NDArray[np.float64] | None
    weight_sampler: str = "dirichlet"

    def draw(self, d: int, k: int, keys: Sequence[Hashable], draws: KeyedWeights | None = None) -> NDArray[np.float64]:
        """K group-shared Dir(alpha) weights per key from the configured sampler, shape (len(keys), k, d).

        `draws` are the run's keyed streams (`KeyedWeights` of `seed`), reused across blocks; None makes them.
        """
        streams = KeyedWeights(self.seed) if draws is None else draws
        return WEIGHT_SAMPLERS[self.weight_sampler].draw(d, k, keys, streams, self.alpha)


Objective = Callable[[NDArray[np.float64], ObjectiveInputs], NDArray[np.float64]]
"""A registered objective: ``fn(rewards (B, G, m, d), inputs) -> scalars (B, G)`` (or (B, G, d))."""


def objective_of(method: Method) -> Objective:
    """The objective a method names.

    Raises:
        ValueError: If it is not registered, listing those that are.
    """
    return registered_part(OBJECTIVES, "objective", method.objective, method=method.name)


@register_objective("w_star")
def w_star_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """w*·r of each rollout's single answer (`linear_reward`), shape (B, G)."""
    return _dot(r[:, :, 0], inputs.w_star)


@register_objective("per_dim")
def per_dim_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """Each rollout's single reward vector, shape (B, G, d) (GDPO normalises every dimension)."""
    return r[:, :, 0].copy()


@register_objective("random_w")
def random_w_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """w·r (`linear_reward`) with one Dir(alpha) draw per group, keyed like VPO's draws, shape (B, G)."""
    w = inputs.draw(r.shape[-1], 1, inputs.keys)[:, 0, :]
    return _dot(r[:, :, 0], w[:, None, :])


@register_objective("goal_w")
def goal_w_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """w·r (`linear_reward`) with the weights written into each group's prompt, shape (B, G).

    The weights are `vpo_core.methods.goal_weights` of each group's task, passed in as ``goal_weights``.
    """
    if inputs.goal_weights is None:
        raise ValueError(
            "goal_cond needs goal_weights (B, d): the weights written into each group's prompt "
            "(vpo_core.methods.goal_weights(d, seed=..., task_id=...))."
        )
    return _dot(r[:, :, 0], inputs.goal_weights[:, None, :])


@register_objective("multi_sum")
def multi_sum_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """Multi-RLVR (`multi_rlvr_reward`): Σ_j w*·r_j over the de-duplicated, zero-padded answers, shape (B, G)."""
    return _sum_over_answers(r, inputs.w_star)


GROUPS_PER_BLOCK = 16
"""Groups whose weights `vpo_objective` draws and scores at once (the size its memory check assumes)."""


@register_objective("vpo")
def vpo_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """VPO's set reward per rollout (paper eq. 2): `vpo_reward` under each group's K draws, shape (B, G).

    Copies of one rollout get bit-identical scalars, so an all-equal group has exactly zero
    advantages: `best_of_m_mean` multiplies each rollout's (m, d) matrix by its group's (d, K)
    weights in a matrix product of its own (a stack of B·G products, never one (G·m, d) product per
    group, whose kernel may round a row differently by its position), then takes the max over m and
    the mean over K along fixed axes. A rollout's value never depends on where it sits.

    Groups go 16 at a time: a block's weights and scores (~0.4 MB) stay in cache and their memory is
    reused, where one pass over B = 128 groups would fault in ~6 MB of fresh temporaries, which can
    cost as much as the arithmetic.
    """
    n_groups, _, _, d = r.shape
    draws = KeyedWeights(inputs.seed)
    out = np.empty(r.shape[:2])
    for start in range(0, n_groups, GROUPS_PER_BLOCK):
        block = slice(start, start + GROUPS_PER_BLOCK)
        weights = inputs.draw(d, inputs.num_weights, inputs.keys[block], draws)  # (b, K, d)
        out[block] = best_of_m_mean(r[block], weights[:, None])
    return out


# --------------------------------------------------------------- the mechanism's controls (issue 38)
# Each keeps VPO's m slots and its max over them and changes one thing about the weightings, so that
# a run of it against VPO asks whether that thing matters (results/maze-v1-miniature-v2/README.md, "The control").


@register_objective("vpo_w_star_max")
def vpo_w_star_max_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """VPO's set reward with its K random weightings replaced by w* alone: max_j w*·r_j, shape (B, G).

    This is the limit of `vpo_objective` as alpha grows when w* is the uniform weighting (maze-v1's):
    Dir(alpha·1_d) concentrates on (1/d, ..., 1/d), so every draw becomes w* (a test checks the
    limit). It pays a set for its best answer under the one fixed scalarisation, with no incentive to
    cover other weightings.
    """
    return best_of_m_mean(r, inputs.w_star[None, None, None, :])


@register_objective("vpo_one_draw")
def vpo_one_draw_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """VPO's set reward with K = 1: one group-shared weighting per group (VPO's first draw), shape (B, G)."""
    weights = inputs.draw(r.shape[-1], 1, inputs.keys)  # (B, 1, d)
    return best_of_m_mean(r, weights[:, None])


@register_objective("vpo_unshared")
def vpo_unshared_objective(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """VPO's set reward under one weighting per rollout, not shared by its group, shape (B, G).

    Rollout g of the group keyed ``key`` is scored under one draw keyed ``(key, "rollout", g)``, so
    the rollouts a group compares were each scored under a different weighting.
    """
    n_groups, n_rollouts, _, d = r.shape
    keys = [(key, "rollout", g) for key in inputs.keys for g in range(n_rollouts)]
    weights = inputs.draw(d, 1, keys).reshape(n_groups, n_rollouts, 1, d)
    return best_of_m_mean(r, weights)
