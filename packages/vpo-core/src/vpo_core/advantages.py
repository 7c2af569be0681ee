"""Advantages for VPO and every baseline of the paper, over a batch laid out (B groups, G rollouts).

`compute_advantages` is the one entry point: the method's registered objective turns rewards
(B, G, m, d) into rollout scalars (`rollout_scalars`), and its registered normaliser turns each
group's scalars into advantages (`normalize_scalars`). The pieces live along their registries:

* `vpo_core.methods`: the registries and the `Method` records (an entry point resolves a name once
  and passes the record on; every entry point here takes a name or a `Method`);
* `vpo_core.objectives`: the scalarisations and the objectives registered from them;
* `vpo_core.normalizers`: the group normalisers (z-score, max@k, MaxRL, GDPO) and their option checks;
* `vpo_core.layout`: flat batches with group ids (veRL's layout) and the z-score over them.

The building blocks are re-exported here (`group_zscore`, `max_at_k_transform`, `maxrl_advantages`,
`gdpo_advantages`, `zscore_by_index`, ...), so engine adapters reuse them instead of re-deriving the
math. Conventions and numerics: see `vpo_core.normalizers`.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import Std, check_vector, finite_or_raise
from vpo_core.layout import GroupLayout, group_layout, zscore_by_index
from vpo_core.methods import Method, check_mode_m, get_method
from vpo_core.normalizers import (
    apply_normalizer,
    check_options,
    gdpo_advantages,
    group_zscore,
    max_at_k_advantages,
    max_at_k_transform,
    maxrl_advantages,
    normalizer_of,
)
from vpo_core.objectives import GROUPS_PER_BLOCK, ObjectiveInputs, objective_of
from vpo_core.weights import check_weight_options

__all__ = [
    "GroupLayout",
    "ObjectiveInputs",
    "Std",
    "compute_advantages",
    "gdpo_advantages",
    "group_layout",
    "group_zscore",
    "max_at_k_advantages",
    "max_at_k_transform",
    "maxrl_advantages",
    "normalize_scalars",
    "rollout_scalars",
    "zscore_by_index",
]


# ------------------------------------------------------------------------------------ validation
def _check_rewards(rewards: ArrayLike | Sequence[ArrayLike]) -> NDArray[np.float64]:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 4:
        raise ValueError(f"rewards must have shape (B groups, G rollouts, m candidates, d dims), got {r.shape}.")
    if r.shape[0] < 1:
        raise ValueError(f"rewards must hold at least one group (B >= 1), got shape {r.shape}.")
    if 0 in r.shape[1:]:
        raise ValueError(f"rewards must have G, m and d >= 1, got shape {r.shape}.")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards contain NaN or inf; a reward function must return finite values.")
    return r


def _keys(group_keys: Sequence[Hashable] | None, n_groups: int) -> Sequence[Hashable]:
    if group_keys is None:
        return range(n_groups)
    if len(group_keys) != n_groups:
        raise ValueError(f"group_keys must have one key per group ({n_groups}), got {len(group_keys)}.")
    return group_keys


def _check_goal(goal_weights: ArrayLike, n_groups: int, d: int) -> NDArray[np.float64]:
    goal = np.asarray(goal_weights, dtype=np.float64)
    if goal.shape != (n_groups, d) or not np.all(np.isfinite(goal)):
        raise ValueError(f"goal_weights must be finite with shape (B={n_groups}, d={d}), got {goal.shape}.")
    return goal


# ------------------------------------------------------------------------------ rollout scalars
def rollout_scalars(
    method: str | Method,
    rewards: ArrayLike | Sequence[ArrayLike],
    *,
    w_star: ArrayLike | Sequence[ArrayLike],
    seed: int = 0,
    group_keys: Sequence[Hashable] | None = None,
    num_weights: int = 100,
    alpha: float = 1.0,
    goal_weights: ArrayLike | Sequence[ArrayLike] | None = None,
    weight_sampler: str = "dirichlet",
) -> NDArray[np.float64]:
    """The number each rollout contributes to its group: the method's registered objective.

    Args:
        method: A name of `vpo_core.METHODS`, or its `Method` record.
        rewards: Shape (B, G, m, d); m must be 1 for single-answer methods. Multi-answer rewards are
            expected de-duplicated and zero-padded (`TextEnv.training_rewards`). Ragged d (env-lcb)
            is accepted as a length-B list of (G, m, d_b) arrays.
        w_star: The fixed scalarisation, shape (d,) (a length-B list of (d_b,) for ragged d).
        seed: The run's seed for group-shared weights.
        group_keys: One key per group (default ``range(B)``); vpo draws `num_weights` Dirichlet
            weights per group from ``(seed, key)``, random_w draws one.
        num_weights: K, the number of weight draws of vpo.
        alpha: Dirichlet concentration.
        goal_weights: goal_cond only (and required there): the weights written into each group's
            prompt, shape (B, d) (`vpo_core.methods.task_goal_weights`).
        weight_sampler: How vpo and random_w draw the group-shared weights: a name of
            `vpo_core.weights.WEIGHT_SAMPLERS` (``"dirichlet"``, iid Dir(alpha), the paper's).

    Returns:
        Scalars, shape (B, G); for gdpo the per-dimension rewards, shape (B, G, d).

    Raises:
        ValueError: On bad shapes or values, an option the method does not read, or scalars that
            overflow float64; a `vpo_core.errors.ConfigError` (a ValueError) for alpha, num_weights or
            weight_sampler out of range, or K so large that the estimator's arrays would exceed
            `vpo_core.weights.MAX_DRAW_BYTES` (`vpo_core.weights.check_weight_options`).
    """
    spec = get_method(method)
    objective = objective_of(spec)
    if goal_weights is not None and not spec.goal_prompt:
        raise ValueError(
            f"goal_weights apply to goal-conditioned methods only; method {spec.name!r} does not read them."
        )
    if not isinstance(rewards, np.ndarray) and isinstance(rewards, list | tuple):
        return _ragged_scalars(
            spec, rewards, w_star, seed, group_keys, num_weights, alpha, goal_weights, weight_sampler
        )
    r = _check_rewards(rewards)
    n_groups, _, m, d = r.shape
    try:
        check_mode_m(spec.mode, m)
    except ValueError:
        raise ValueError(
            f"method {spec.name!r} is single-answer, so rewards must have m=1 (shape (B, G, 1, d)), got m={m}."
        ) from None
    # alpha, K and the sampler, and the size of the (16, K, d) draws and (16, G, m, K) scores, before any work
    check_weight_options(
        alpha, num_weights, weight_sampler, d=d, groups=min(n_groups, GROUPS_PER_BLOCK), rollouts=r.shape[1] * m
    )
    inputs = ObjectiveInputs(
        w_star=check_vector(w_star, d, "w_star"),  # type: ignore[arg-type]  # a (d,) array here, not ragged
        keys=_keys(group_keys, n_groups),
        seed=seed,
        num_weights=int(num_weights),  # checked above
        alpha=float(alpha),
        goal_weights=None if goal_weights is None else _check_goal(goal_weights, n_groups, d),  # type: ignore[arg-type]
        weight_sampler=str(weight_sampler),
    )
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by name
        scalars = objective(r, inputs)
    return finite_or_raise(scalars, f"the rollout scalars of method {spec.name!r}")


def _ragged_scalars(
    method: Method,
    rewards: Sequence[ArrayLike],
    w_star: Any,
    seed: int,
    group_keys: Sequence[Hashable] | None,
    num_weights: int,
    alpha: float,
    goal_weights: Any,
    weight_sampler: str,
) -> NDArray[np.float64]:
    """`rollout_scalars` over a list of (G, m, d_b) groups: one vectorised call per distinct (d, w*)."""
    n_groups = len(rewards)
    if n_groups == 0:
        raise ValueError("rewards is an empty list; pass at least one group.")
    groups = [np.asarray(g, dtype=np.float64) for g in rewards]
    if any(g.ndim != 3 for g in groups):
        raise ValueError("ragged rewards must be a list of (G, m, d_b) arrays, one per group.")
    if len({g.shape[:2] for g in groups}) != 1:
        raise ValueError(f"every group must share G and m, got shapes {[g.shape for g in groups]}.")
    if (isinstance(w_star, np.ndarray) and w_star.ndim == 1) or len(w_star) != n_groups:
        raise ValueError("with ragged rewards, w_star must be a list with one (d_b,) vector per group.")
    keys = list(_keys(group_keys, n_groups))
    if goal_weights is not None and len(goal_weights) != n_groups:
        raise ValueError("with ragged rewards, goal_weights must be a list with one (d_b,) vector per group.")
    buckets: dict[tuple[float, ...], list[int]] = {}  # w* (its length is d) -> member groups
    for b in range(n_groups):
        w = tuple(np.asarray(w_star[b], dtype=np.float64))
        if len(w) != groups[b].shape[2]:
            raise ValueError(f"w_star[{b}] has {len(w)} entries but group {b} has d={groups[b].shape[2]}.")
        buckets.setdefault(w, []).append(b)
    out: list[Any] = [None] * n_groups
    for w, idx in buckets.items():
        values = rollout_scalars(
            method,
            np.stack([groups[b] for b in idx]),
            w_star=np.asarray(w),
            seed=seed,
            group_keys=[keys[b] for b in idx],
            num_weights=num_weights,
            alpha=alpha,
            goal_weights=None if goal_weights is None else np.stack([np.asarray(goal_weights[b]) for b in idx]),
            weight_sampler=weight_sampler,
        )
        for j, b in enumerate(idx):
            out[b] = values[j]
    if method.objective == "per_dim" and len({o.shape[-1] for o in out}) != 1:
        raise ValueError("gdpo needs the same d in every group; pad per-test rewards (e.g. tc_0..tc_15) first.")
    return np.stack(out)


# ------------------------------------------------------------------------------ normalising
def _given_options(
    k: int | None, response_lengths: ArrayLike | None, gdpo_weights: ArrayLike | None, divide_by_n: bool | None
) -> dict[str, Any]:
    """The normaliser options that are set (not None), by name: the one place the entry points gather them."""
    given = {"k": k, "response_lengths": response_lengths, "gdpo_weights": gdpo_weights, "divide_by_n": divide_by_n}
    return {name: value for name, value in given.items() if value is not None}


def normalize_scalars(
    method: str | Method,
    scalars: ArrayLike,
    *,
    std: Std = "population",
    eps: float = 1e-6,
    k: int | None = None,
    response_lengths: ArrayLike | None = None,
    gdpo_weights: ArrayLike | None = None,
    divide_by_n: bool | None = None,
) -> NDArray[np.float64]:
    """The method's registered normaliser applied to rollout scalars (the second half of `compute_advantages`).

    Args:
        method: A name of `vpo_core.METHODS`, or its `Method` record.
        scalars: From `rollout_scalars`: shape (B, G), or (B, G, d) for gdpo.
        std: z-score convention.
        eps: Added to the std (or to the mean for maxrl); a finite number >= 0.
        k: max_at_k's subset size.
        response_lengths: gdpo's token-weighted whitening, shape (B, G).
        gdpo_weights: gdpo's channel weights, shape (d,).
        divide_by_n: maxrl's veRL form.

    Returns:
        Advantages, shape (B, G), all finite.

    Raises:
        ValueError: For an option the method's normaliser does not read (k, response_lengths,
            gdpo_weights and divide_by_n are method-specific), bad values, or no finite answer.
    """
    spec = get_method(method)
    given = _given_options(k, response_lengths, gdpo_weights, divide_by_n)
    return apply_normalizer(
        normalizer_of(spec), scalars, std=std, eps=eps, options=given, owner=f"method {spec.name!r}"
    )


def compute_advantages(
    method: str | Method,
    rewards: ArrayLike | Sequence[ArrayLike],
    *,
    w_star: ArrayLike | Sequence[ArrayLike],
    seed: int = 0,
    group_keys: Sequence[Hashable] | None = None,
    num_weights: int = 100,
    alpha: float = 1.0,
    std: Std = "population",
    eps: float = 1e-6,
    goal_weights: ArrayLike | Sequence[ArrayLike] | None = None,
    k: int | None = None,
    response_lengths: ArrayLike | None = None,
    gdpo_weights: ArrayLike | None = None,
    divide_by_n: bool | None = None,
    weight_sampler: str = "dirichlet",
) -> NDArray[np.float64]:
    """Advantages of a batch for any method of the paper.

    Args:
        method: ``"vpo"``, ``"grpo"``, ``"random_w"``, ``"goal_cond"``, ``"gdpo"``, ``"max_at_k"``,
            ``"maxrl"`` or ``"multi_rlvr"`` (`vpo_core.METHODS`), or a `Method` record.
        rewards: Shape (B groups, G rollouts, m candidates, d dims); see `rollout_scalars`.
        w_star: The env's fixed scalarisation, shape (d,).
        seed: Seed of the group-shared weights.
        group_keys: One key per group (default ``range(B)``); use a key that changes every step
            (e.g. ``(step, task_id)`` or veRL's uid) so groups get fresh weights.
        num_weights: K, the number of weight draws per group (vpo).
        alpha: Dirichlet concentration (vpo, random_w).
        std: ``"population"`` (the paper) or ``"unbiased"`` (veRL); every method but maxrl.
        eps: Added to the std (to the mean for maxrl); a finite number >= 0.
        goal_weights: goal_cond only, required: the prompt weights, shape (B, d).
        k: max_at_k only: the subset size (default max(2, G // 2)).
        response_lengths: gdpo only: valid tokens per rollout, shape (B, G), for token-weighted whitening.
        gdpo_weights: gdpo only: channel weights, shape (d,).
        divide_by_n: maxrl only: divide by G (veRL's official form).
        weight_sampler: vpo and random_w: a name of `vpo_core.weights.WEIGHT_SAMPLERS` (``"dirichlet"``,
            iid draws, the paper's).

    Returns:
        Advantages, shape (B, G), one per rollout (broadcast to its tokens by the engine); never NaN.

    Raises:
        ValueError: For an unknown method, an option the method does not read, bad shapes or
            values, NaN/inf, a method/m mismatch, or input with no finite answer.
    """
    spec = get_method(method)
    given = _given_options(k, response_lengths, gdpo_weights, divide_by_n)
    check_options(normalizer_of(spec), std, eps, given, owner=f"method {spec.name!r}")  # fail before any work
    scalars = rollout_scalars(
        spec,
        rewards,
        w_star=w_star,
        seed=seed,
        group_keys=group_keys,
        num_weights=num_weights,
        alpha=alpha,
        goal_weights=goal_weights,
        weight_sampler=weight_sampler,
    )
    return normalize_scalars(spec, scalars, std=std, eps=eps, **given)
