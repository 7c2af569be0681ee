"""Advantages for VPO and every baseline of the paper, over a batch laid out (B groups, G rollouts).

`compute_advantages` is the one entry point: the method's registered objective turns rewards
(B, G, m, d) into rollout scalars (`rollout_scalars`), and its registered normaliser turns each
group's scalars into advantages (`normalize_scalars`). Both halves are registered here with the
decorators of `vpo_core.methods`; the building blocks (`group_zscore`, `max_at_k_transform`,
`maxrl_advantages`, `gdpo_advantages`, `zscore_by_index`) are public so that engine adapters reuse
them instead of re-deriving the math.

Conventions (the paper's appendix; veRL's ``core_algos``): the z-score uses the population std with eps = 1e-6 added, and a group
whose std is below eps gets all-zero advantages (the paper's appendix); ``std="unbiased"`` gives
veRL's convention instead (Bessel-corrected std; a singleton group keeps mean 0 and std 1). A group
whose scalars are all equal gets zeros under both, for any eps >= 0.

Numerics: everything is float64. Normalisers divide each group by its largest |scalar| first (a
z-score does not depend on the scale, and eps is rescaled with it), so scalars anywhere in float64's
range give finite advantages. Input that has no finite answer (scalars beyond float64, a negative
group mean for MaxRL) raises a ValueError naming the problem; NaN is never returned.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core.methods import (
    NORMALIZERS,
    OBJECTIVES,
    Method,
    Normalizer,
    check_mode_m,
    get_method,
    register_normalizer,
    register_objective,
)
from vpo_core.metrics import best_at_k_weight_rows
from vpo_core.objectives import best_of_m_mean
from vpo_core.qmc import check_weight_sampler, sobol_weights
from vpo_core.weights import KeyedWeights, group_weights

__all__ = [
    "GroupLayout",
    "ObjectiveInputs",
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

Std = Literal["population", "unbiased"]
_STDS = ("population", "unbiased")


# ------------------------------------------------------------------------------------ validation
def _check_std(std: Any) -> None:
    if std not in _STDS:
        raise ValueError(f"std must be one of {_STDS}, got {std!r}.")


def _check_eps(eps: Any) -> float:
    if isinstance(eps, bool) or not isinstance(eps, int | float | np.integer | np.floating):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}.")
    value = float(eps)
    if not math.isfinite(value) or value < 0.0:
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}.")
    return value


def _check_scores(x: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] < 1:
        raise ValueError(f"{name} must have shape (B groups, G rollouts), got {array.shape}.")
    if array.shape[0] < 1:
        raise ValueError(f"{name} must hold at least one group (B >= 1), got shape {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf.")
    return array


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


def _check_vector(w: ArrayLike | Sequence[ArrayLike], d: int, name: str) -> NDArray[np.float64]:
    array = np.asarray(w, dtype=np.float64)
    if array.shape != (d,):
        raise ValueError(f"{name} must have shape ({d},) to match the rewards' d, got {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf.")
    return array


def _keys(group_keys: Sequence[Hashable] | None, n_groups: int) -> Sequence[Hashable]:
    if group_keys is None:
        return range(n_groups)
    if len(group_keys) != n_groups:
        raise ValueError(f"group_keys must have one key per group ({n_groups}), got {len(group_keys)}.")
    return group_keys


def _finite_or_raise(values: NDArray[np.float64], what: str) -> NDArray[np.float64]:
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{what} overflow float64 (the true values exceed ~1.8e308); rescale the rewards or weights.")
    return values


def _group_scale(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Per-group max |x| (1 for an all-zero group) and the mask of constant groups, both shape (B, 1)."""
    constant = np.all(x == x[:, :1], axis=1, keepdims=True)
    scale = np.max(np.abs(x), axis=1, keepdims=True)
    return np.where(scale == 0.0, 1.0, scale), constant


def _eps_per_unit(eps: float, scale: NDArray[np.float64]) -> NDArray[np.float64]:
    """The eps of a group in units of its scale; inf (so the result is 0) where the scale is below eps / 1.8e308."""
    with np.errstate(over="ignore"):
        return eps / scale


# ------------------------------------------------------------------------------------ normalisers
@register_normalizer("zscore")
def group_zscore(scores: ArrayLike, *, std: Std = "population", eps: float = 1e-6) -> NDArray[np.float64]:
    """Within-group z-score, (x - mean) / (std + eps).

    Args:
        scores: Rollout scalars, shape (B, G); any finite values.
        std: ``"population"`` (the paper: zeros when the std is below eps) or ``"unbiased"`` (veRL).
        eps: Added to the std; a finite number >= 0.

    Returns:
        Advantages, shape (B, G); zeros for a group whose scalars are all equal.
    """
    _check_std(std)
    eps = _check_eps(eps)
    x = _check_scores(scores)
    n = x.shape[1]
    if std == "unbiased" and n == 1:  # veRL: a singleton group gets mean 0 and std 1
        return x / (1.0 + eps)
    scale, constant = _group_scale(x)
    unit = x / scale  # in [-1, 1]: the squares below cannot overflow
    centred = unit - unit.mean(axis=1, keepdims=True)
    sd = np.sqrt(np.sum(centred * centred, axis=1, keepdims=True) / (n if std == "population" else n - 1))
    tolerance = _eps_per_unit(eps, scale)
    degenerate = constant | (sd < tolerance) if std == "population" else constant
    out = np.zeros_like(centred)
    np.divide(centred, sd + tolerance, out=out, where=~np.broadcast_to(degenerate, centred.shape))
    return out


def max_at_k_transform(scores: ArrayLike, k: int) -> NDArray[np.float64]:
    """The unbiased per-sample max@k weights s_i (Bagirov et al. 2025; the s of Walder & Karkhanis's PKPO).

    s_i = (1/C(n,k)) Σ over k-subsets S containing i of max_{l∈S} x_l; Σ_i s_i = k·(max@k estimate).
    Computed in O(n log n) per group: one sort, a diagonal term and a reverse cumulative sum. Every
    s_i is a combination of the x with coefficients summing to at most 1, so it cannot overflow.

    Args:
        scores: Rollout scalars, shape (B, n).
        k: Subset size, 1 <= k <= n.

    Returns:
        s, shape (B, n), in the rollouts' original order.
    """
    x = _check_scores(scores)
    n = x.shape[1]
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or not 1 <= k <= n:
        raise ValueError(f"k must be an int in [1, n={n}], got {k!r}.")
    order = np.argsort(x, axis=1, kind="stable")
    xs = np.take_along_axis(x, order, axis=1)
    # C(i-1,k-1)/C(n,k) are the best@k order-statistic weights, and C(j-2,k-2)/C(n,k) = (k/n)·C(j-2,k-2)/C(n-1,k-1)
    # are best@(k-1) weights of a pool of n-1 shifted by one rank: one stable recurrence serves both.
    diag = best_at_k_weight_rows(n, np.array([k]))[0] * xs
    off = np.zeros_like(xs)
    if k >= 2:
        off[:, 1:] = (k / n) * best_at_k_weight_rows(n - 1, np.array([k - 1]))[0] * xs[:, 1:]
    tail = np.cumsum(off[:, ::-1], axis=1)[:, ::-1]  # Σ_{j>=i}
    exclusive = np.concatenate([tail[:, 1:], np.zeros((x.shape[0], 1))], axis=1)  # Σ_{j>i}
    s_sorted = diag + exclusive
    s = np.empty_like(s_sorted)
    np.put_along_axis(s, order, s_sorted, axis=1)
    return s


@register_normalizer("max_at_k", options=("k",))
def max_at_k_advantages(
    scores: ArrayLike, k: int | None = None, *, std: Std = "population", eps: float = 1e-6
) -> NDArray[np.float64]:
    """The Max@k baseline as run for the VPO paper: the z-score of the unbiased max@k weights.

    Args:
        scores: Rollout scalars, shape (B, G).
        k: Subset size; default max(2, G // 2). k >= G is rejected (the z-score would be degenerate).
        std: z-score convention.
        eps: Added to the std.

    Returns:
        Advantages, shape (B, G).
    """
    x = _check_scores(scores)
    n = x.shape[1]
    k = max(2, n // 2) if k is None else k
    if not isinstance(k, int | np.integer) or isinstance(k, bool) or not 1 <= k < n:
        raise ValueError(f"max_at_k needs an int k with 1 <= k < G={n} (G rollouts per group), got {k!r}.")
    return group_zscore(max_at_k_transform(x, int(k)), std=std, eps=eps)


@register_normalizer("maxrl", options=("divide_by_n",))
def maxrl_advantages(
    scores: ArrayLike, *, std: Std = "population", eps: float = 1e-6, divide_by_n: bool | None = False
) -> NDArray[np.float64]:
    """MaxRL: (x - mean) / (mean + eps) within each group; zero where the group mean is 0.

    Args:
        scores: Rollout scalars, shape (B, G); every group's mean must be >= 0 (MaxRL is defined for
            non-negative rewards: a negative mean would flip the sign of every advantage).
        std: Accepted for a uniform normaliser signature and checked; MaxRL uses no std.
        eps: Added to the mean; a finite number >= 0.
        divide_by_n: Divide by G as veRL's official estimator does (a constant learning-rate factor).

    Returns:
        Advantages, shape (B, G).

    Raises:
        ValueError: If a group's mean is negative.
    """
    _check_std(std)
    eps = _check_eps(eps)
    x = _check_scores(scores)
    scale, _ = _group_scale(x)
    unit = x / scale
    mean = unit.mean(axis=1, keepdims=True)
    if np.any(mean < 0.0):
        worst = int(np.argmin(mean[:, 0]))
        raise ValueError(
            f"maxrl divides by the group mean, so it needs rollout scalars whose group mean is >= 0; group "
            f"{worst} has mean {float(mean[worst, 0] * scale[worst, 0]):.3g}. Use non-negative rewards."
        )
    denominator = mean + _eps_per_unit(eps, scale)
    out = np.zeros_like(unit)
    np.divide(unit - mean, denominator, out=out, where=np.broadcast_to(mean > 0.0, unit.shape))
    return out / x.shape[1] if divide_by_n else out


@register_normalizer("gdpo", options=("response_lengths", "gdpo_weights"))
def gdpo_advantages(
    per_dim: ArrayLike,
    *,
    gdpo_weights: ArrayLike | None = None,
    response_lengths: ArrayLike | None = None,
    std: Std = "population",
    eps: float = 1e-6,
    whiten_eps: float = 1e-8,
) -> NDArray[np.float64]:
    """GDPO: per-dimension group z-scores, weighted sum, then whitening over the whole batch.

    Args:
        per_dim: Per-dimension rollout rewards, shape (B, G, d).
        gdpo_weights: Channel weights, shape (d,); default all ones.
        response_lengths: Valid tokens per rollout, shape (B, G). If given, the whitening is
            token-weighted like veRL's ``masked_whiten`` (each rollout counts once per token);
            otherwise every rollout counts once.
        std: z-score convention of the per-dimension step (veRL uses ``"unbiased"``).
        eps: Added to the per-dimension std.
        whiten_eps: Added to the batch variance before the square root.

    Returns:
        Advantages, shape (B, G).

    Raises:
        ValueError: On bad shapes, non-finite values, or channel weights so large that the sum overflows.
    """
    r = np.asarray(per_dim, dtype=np.float64)
    if r.ndim != 3 or 0 in r.shape:
        raise ValueError(f"per_dim must have shape (B, G, d) with B, G, d >= 1, got {r.shape}.")
    if not np.all(np.isfinite(r)):
        raise ValueError("per_dim contains NaN or inf.")
    n_groups, group_size, d = r.shape
    w = np.ones(d) if gdpo_weights is None else _check_vector(gdpo_weights, d, "gdpo_weights")
    channels = r.transpose(0, 2, 1).reshape(n_groups * d, group_size)
    z = group_zscore(channels, std=std, eps=eps).reshape(n_groups, d, group_size)
    with np.errstate(over="ignore", invalid="ignore"):
        summed = _finite_or_raise(np.einsum("bdg,d->bg", z, w), "gdpo's weighted sums of z-scores")
    if response_lengths is None:
        counts = np.ones_like(summed)
    else:
        counts = np.asarray(response_lengths, dtype=np.float64)
        if counts.shape != summed.shape or not np.all(np.isfinite(counts)) or np.any(counts < 1):
            raise ValueError(f"response_lengths must be finite and >= 1 with shape {summed.shape}, got {counts.shape}.")
    scale = float(np.max(np.abs(summed)))
    if scale == 0.0:
        return np.zeros_like(summed)
    unit = summed / scale  # whitening is scale-free; whiten_eps is rescaled with it
    weights = counts / counts.sum()
    total = float(counts.sum())
    mean = float(np.sum(weights * unit))
    var = float(np.sum(weights * (unit - mean) ** 2)) * total / (total - 1.0) if total > 1 else 0.0
    spread = math.sqrt(var + whiten_eps / scale / scale)  # whiten_eps / scale² may underflow to 0
    if spread == 0.0:  # every rollout alike and whiten_eps negligible: nothing to whiten
        return np.zeros_like(summed)
    with np.errstate(over="ignore"):
        return _finite_or_raise((unit - mean) / spread, "gdpo's whitened advantages")


# ------------------------------------------------------------------------------ rollout scalars
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
        weight_sampler: ``"dirichlet"`` (iid draws) or ``"sobol"`` (scrambled Sobol points, `vpo_core.qmc`).
    """

    w_star: NDArray[np.float64]
    keys: Sequence[Hashable]
    seed: int
    num_weights: int
    alpha: float
    goal_weights: NDArray[np.float64] | None
    weight_sampler: str = "dirichlet"

    def draw(self, d: int, k: int, keys: Sequence[Hashable], draws: KeyedWeights | None = None) -> NDArray[np.float64]:
        """K group-shared Dir(alpha) weights per key from the configured sampler, shape (len(keys), k, d)."""
        if self.weight_sampler == "sobol":
            return sobol_weights(d, k, keys, alpha=self.alpha, seed=self.seed)
        if draws is not None:
            return draws.weights(d, k, keys, alpha=self.alpha)
        return group_weights(d, k, keys, alpha=self.alpha, seed=self.seed)


@register_objective("w_star")
def _w_star_scalars(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """w*·r of each rollout's single answer, shape (B, G)."""
    return np.einsum("bgd,d->bg", r[:, :, 0], inputs.w_star)


@register_objective("per_dim")
def _per_dim_rewards(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """Each rollout's single reward vector, shape (B, G, d) (GDPO normalises every dimension)."""
    return r[:, :, 0].copy()


@register_objective("random_w")
def _random_w_scalars(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """w·r with one Dir(alpha) draw per group, keyed like VPO's draws, shape (B, G)."""
    w = inputs.draw(r.shape[-1], 1, inputs.keys)[:, 0, :]
    return np.einsum("bgd,bd->bg", r[:, :, 0], w)


@register_objective("goal_w")
def _goal_w_scalars(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """w·r with the weights written into each group's prompt (`vpo_core.methods.goal_weights`), shape (B, G)."""
    if inputs.goal_weights is None:
        raise ValueError(
            "goal_cond needs goal_weights (B, d): the weights written into each group's prompt "
            "(vpo_core.methods.goal_weights(d, seed=..., task_id=...))."
        )
    return np.einsum("bgd,bd->bg", r[:, :, 0], inputs.goal_weights)


@register_objective("multi_sum")
def _multi_sum_scalars(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """Multi-RLVR: Σ_j w*·r_j over the de-duplicated, zero-padded answers, shape (B, G)."""
    return np.einsum("bgjd,d->bg", r, inputs.w_star)


_GROUPS_PER_BLOCK = 16


@register_objective("vpo")
def _vpo_scalars(r: NDArray[np.float64], inputs: ObjectiveInputs) -> NDArray[np.float64]:
    """VPO's set reward per rollout (paper eq. 2): `objectives.vpo_reward` under each group's K draws.

    Copies of one rollout get bit-identical scalars, so an all-equal group has exactly zero
    advantages: `objectives.best_of_m_mean` multiplies each rollout's (m, d) matrix by its group's
    (d, K) weights in a matrix product of its own (a stack of B·G products, never one (G·m, d)
    product per group, whose kernel may round a row differently by its position), then takes the
    max over m and the mean over K along fixed axes. A rollout's value never depends on where it sits.

    Groups go 16 at a time: a block's weights and scores (~0.4 MB) stay in cache and their memory is
    reused, where one pass over B = 128 groups would fault in ~6 MB of fresh temporaries, which can
    cost as much as the arithmetic.
    """
    n_groups, _, _, d = r.shape
    draws = KeyedWeights(inputs.seed)
    out = np.empty(r.shape[:2])
    for start in range(0, n_groups, _GROUPS_PER_BLOCK):
        block = slice(start, start + _GROUPS_PER_BLOCK)
        weights = inputs.draw(d, inputs.num_weights, inputs.keys[block], draws)  # (b, K, d)
        out[block] = best_of_m_mean(r[block], weights[:, None])
    return out


def _objective(method: Method) -> Any:
    try:
        return OBJECTIVES[method.objective]
    except KeyError:
        raise ValueError(
            f"method {method.name!r} names objective {method.objective!r}, which is not registered; "
            f"registered: {sorted(OBJECTIVES)}."
        ) from None


def rollout_scalars(
    method: str,
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
        method: A name of `vpo_core.METHODS`.
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
            prompt, shape (B, d).
        weight_sampler: How vpo and random_w draw the group-shared weights: ``"dirichlet"`` (iid
            Dir(alpha), the paper's) or ``"sobol"`` (scrambled Sobol points mapped onto the simplex,
            `vpo_core.qmc`; d <= 21).

    Returns:
        Scalars, shape (B, G); for gdpo the per-dimension rewards, shape (B, G, d).

    Raises:
        ValueError: On bad shapes or values, an option the method does not read, or scalars that
            overflow float64.
    """
    spec = get_method(method)
    objective = _objective(spec)
    if goal_weights is not None and not spec.goal_prompt:
        raise ValueError(f"goal_weights apply to goal-conditioned methods only; method {method!r} does not read them.")
    if not isinstance(rewards, np.ndarray) and isinstance(rewards, list | tuple):
        return _ragged_scalars(
            method, rewards, w_star, seed, group_keys, num_weights, alpha, goal_weights, weight_sampler
        )
    r = _check_rewards(rewards)
    n_groups, _, m, d = r.shape
    try:
        check_mode_m(spec.mode, m)
    except ValueError:
        raise ValueError(
            f"method {method!r} is single-answer, so rewards must have m=1 (shape (B, G, 1, d)), got m={m}."
        ) from None
    if not isinstance(num_weights, int | np.integer) or isinstance(num_weights, bool) or num_weights < 1:
        raise ValueError(f"num_weights (K) must be a positive int, got {num_weights!r}.")
    goal = None
    if goal_weights is not None:
        goal = np.asarray(goal_weights, dtype=np.float64)
        if goal.shape != (n_groups, d) or not np.all(np.isfinite(goal)):
            raise ValueError(f"goal_weights must be finite with shape (B={n_groups}, d={d}), got {goal.shape}.")
    inputs = ObjectiveInputs(
        w_star=_check_vector(w_star, d, "w_star"),
        keys=_keys(group_keys, n_groups),
        seed=seed,
        num_weights=int(num_weights),
        alpha=alpha,
        goal_weights=goal,
        weight_sampler=check_weight_sampler(weight_sampler),
    )
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is reported below, by name
        scalars = objective(r, inputs)
    return _finite_or_raise(scalars, f"the rollout scalars of method {method!r}")


# ---------------------------------------------------------------------------------- ragged d
def _ragged_scalars(method, rewards, w_star, seed, group_keys, num_weights, alpha, goal_weights, weight_sampler):
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
    if get_method(method).objective == "per_dim" and len({o.shape[-1] for o in out}) != 1:
        raise ValueError("gdpo needs the same d in every group; pad per-test rewards (e.g. tc_0..tc_15) first.")
    return np.stack(out)


# ------------------------------------------------------------------------------ normalising
def _normalizer(method: Method, std: Any, eps: Any, options: dict[str, Any]) -> tuple[Normalizer, float]:
    """The method's registered normaliser, after checking std, eps and that it reads every given option."""
    try:
        normalizer = NORMALIZERS[method.normalizer]
    except KeyError:
        raise ValueError(
            f"method {method.name!r} names normaliser {method.normalizer!r}, which is not registered; "
            f"registered: {sorted(NORMALIZERS)}."
        ) from None
    _check_std(std)
    eps = _check_eps(eps)
    unread = sorted(name for name in options if name not in normalizer.options)
    if unread:
        reads = ", ".join(normalizer.options) or "no options besides std and eps"
        raise ValueError(
            f"option(s) {unread} do not apply to method {method.name!r}: its normaliser {normalizer.name!r} "
            f"reads {reads}."
        )
    return normalizer, eps


def normalize_scalars(
    method: str,
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
        method: A name of `vpo_core.METHODS`.
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
    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("k", k),
            ("response_lengths", response_lengths),
            ("gdpo_weights", gdpo_weights),
            ("divide_by_n", divide_by_n),
        )
        if value is not None
    }
    normalizer, eps = _normalizer(get_method(method), std, eps, options)
    advantages = normalizer.fn(scalars, std=std, eps=eps, **options)
    return _finite_or_raise(advantages, f"the advantages of method {method!r}")


def compute_advantages(
    method: str,
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
            ``"maxrl"`` or ``"multi_rlvr"`` (`vpo_core.METHODS`).
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
        weight_sampler: vpo and random_w: ``"dirichlet"`` (iid draws, the paper's) or ``"sobol"``
            (quasi-Monte Carlo: scrambled Sobol points mapped onto Dir(alpha), `vpo_core.qmc`).

    Returns:
        Advantages, shape (B, G), one per rollout (broadcast to its tokens by the engine); never NaN.

    Raises:
        ValueError: For an unknown method, an option the method does not read, bad shapes or
            values, NaN/inf, a method/m mismatch, or input with no finite answer.
    """
    options: dict[str, Any] = {
        name: value
        for name, value in (
            ("k", k),
            ("response_lengths", response_lengths),
            ("gdpo_weights", gdpo_weights),
            ("divide_by_n", divide_by_n),
        )
        if value is not None
    }
    _normalizer(get_method(method), std, eps, options)  # fail on a bad option before any work
    scalars = rollout_scalars(
        method,
        rewards,
        w_star=w_star,
        seed=seed,
        group_keys=group_keys,
        num_weights=num_weights,
        alpha=alpha,
        goal_weights=goal_weights,
        weight_sampler=weight_sampler,
    )
    return normalize_scalars(method, scalars, std=std, eps=eps, **options)


# ------------------------------------------------------------------------ flat batches (veRL)
@dataclass(frozen=True)
class GroupLayout:
    """How a flat batch of N rollouts with group ids maps onto a (B, G) grid.

    Attributes:
        order: Indices into the flat batch, shape (B, G): row b holds group b's rollouts.
        keys: The group id of each row, length B, in order of first appearance.
    """

    order: NDArray[np.int64]
    keys: list[Any]

    def to_grid(self, flat: ArrayLike) -> NDArray[np.float64]:
        """Gather flat values (N, ...) into (B, G, ...)."""
        return np.asarray(flat, dtype=np.float64)[self.order]

    def to_flat(self, grid: ArrayLike) -> NDArray[np.float64]:
        """Scatter (B, G, ...) values back to the flat order (N, ...)."""
        values = np.asarray(grid, dtype=np.float64)
        out = np.empty((self.order.size, *values.shape[2:]), dtype=np.float64)
        out[self.order.reshape(-1)] = values.reshape(self.order.size, *values.shape[2:])
        return out


def group_layout(index: ArrayLike) -> GroupLayout:
    """Group a flat batch by id; every group must have the same size (veRL's rollout.n).

    Args:
        index: Group id per rollout, shape (N,) (veRL's ``uid`` object array), N >= 1.

    Returns:
        The layout.

    Raises:
        ValueError: If the batch is empty or groups have different sizes.
    """
    ids = np.asarray(index, dtype=object).reshape(-1)
    if ids.size == 0:
        raise ValueError("the batch must hold at least one rollout, got an empty index.")
    _, first, inverse, counts = np.unique(ids.astype(str), return_index=True, return_inverse=True, return_counts=True)
    if np.any(counts != counts[0]):
        raise ValueError(f"every group must have the same number of rollouts, got sizes {sorted(set(counts))}.")
    rank_of_group = np.argsort(np.argsort(first))  # groups in order of first appearance
    row = rank_of_group[inverse]
    order = np.argsort(row, kind="stable").reshape(counts.size, -1)
    keys = [ids[i] for i in np.sort(first)]
    return GroupLayout(order=order, keys=keys)


def zscore_by_index(
    scores: ArrayLike, index: ArrayLike, *, std: Std = "population", eps: float = 1e-6
) -> NDArray[np.float64]:
    """Group z-score of a flat batch whose groups are given by an id array (groups may differ in size).

    The same numbers as `group_zscore` on the (B, G) grid, group by group.

    Args:
        scores: Rollout scalars, shape (N,), N >= 1.
        index: Group id per rollout, shape (N,).
        std: z-score convention (see `group_zscore`).
        eps: Added to the std; a finite number >= 0.

    Returns:
        Advantages, shape (N,).
    """
    _check_std(std)
    eps = _check_eps(eps)
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    ids = np.asarray(index, dtype=object).reshape(-1)
    if ids.shape != x.shape:
        raise ValueError(f"index must have one id per score ({x.shape[0]}), got {ids.shape[0]}.")
    if x.size == 0:
        raise ValueError("the batch must hold at least one rollout, got empty scores.")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores contain NaN or inf.")
    _, inverse, counts = np.unique(ids.astype(str), return_inverse=True, return_counts=True)
    n_groups = counts.size
    high, low = np.full(n_groups, -np.inf), np.full(n_groups, np.inf)
    np.maximum.at(high, inverse, x)
    np.minimum.at(low, inverse, x)
    constant = (high == low)[inverse]
    scale = np.maximum(np.abs(high), np.abs(low))
    scale = np.where(scale == 0.0, 1.0, scale)[inverse]
    unit = x / scale
    centred = unit - (np.bincount(inverse, weights=unit) / counts)[inverse]
    squares = np.bincount(inverse, weights=centred * centred)
    tolerance = _eps_per_unit(eps, scale)
    singleton = counts[inverse] == 1
    if std == "population":
        sd = np.sqrt(squares / counts)[inverse]
        degenerate = constant | (sd < tolerance)
    else:
        sd = np.sqrt(squares / np.maximum(counts - 1, 1))[inverse]
        degenerate = constant | singleton
    out = np.zeros_like(x)
    np.divide(centred, sd + tolerance, out=out, where=~degenerate)
    if std == "unbiased":  # veRL: a singleton group gets mean 0 and std 1
        out[singleton] = x[singleton] / (1.0 + eps)
    return out
