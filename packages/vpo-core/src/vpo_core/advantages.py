"""Advantages for VPO and every baseline of the paper, over a batch laid out (B groups, G rollouts).

`compute_advantages` is the one entry point: it turns rewards (B, G, m, d) into the rollout scalars
of the chosen method (`rollout_scalars`) and normalises them within each group. The building blocks
(`group_zscore`, `max_at_k_transform`, `maxrl_advantages`, `gdpo_advantages`, `zscore_by_index`) are
public so that engine adapters reuse them instead of re-deriving the math.

Conventions (estimators.md): the z-score uses the population std with eps = 1e-6 added, and a group
whose std is below eps gets all-zero advantages (the paper's appendix); ``std="unbiased"`` gives
veRL's convention instead (Bessel-corrected std; a singleton group keeps mean 0 and std 1).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core.methods import get_method
from vpo_core.metrics import best_at_k_weight_rows
from vpo_core.objectives import vpo_reward
from vpo_core.weights import fill_negative_exponentials, group_weights

__all__ = [
    "GroupLayout",
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
_OPTIONS = {"std", "eps", "goal_weights", "k", "response_lengths", "gdpo_weights", "divide_by_n"}


# ------------------------------------------------------------------------------------ validation
def _check_std(std: Any) -> None:
    if std not in _STDS:
        raise ValueError(f"std must be one of {_STDS}, got {std!r}.")


def _check_scores(x: ArrayLike, name: str = "scores") -> NDArray[np.float64]:
    array = np.asarray(x, dtype=np.float64)
    if array.ndim != 2 or array.shape[1] < 1:
        raise ValueError(f"{name} must have shape (B groups, G rollouts), got {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} contains NaN or inf.")
    return array


def _check_rewards(rewards: ArrayLike) -> NDArray[np.float64]:
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 4:
        raise ValueError(f"rewards must have shape (B groups, G rollouts, m candidates, d dims), got {r.shape}.")
    if 0 in r.shape[1:]:
        raise ValueError(f"rewards must have G, m and d >= 1, got shape {r.shape}.")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards contain NaN or inf; a reward function must return finite values.")
    return r


def _check_vector(w: ArrayLike, d: int, name: str) -> NDArray[np.float64]:
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


# ------------------------------------------------------------------------------------ normalisers
def group_zscore(scores: ArrayLike, *, std: Std = "population", eps: float = 1e-6) -> NDArray[np.float64]:
    """Within-group z-score.

    Args:
        scores: Rollout scalars, shape (B, G).
        std: ``"population"`` (the paper: zeros when the std is below eps) or ``"unbiased"`` (veRL).
        eps: Added to the std.

    Returns:
        Advantages, shape (B, G).
    """
    _check_std(std)
    x = _check_scores(scores)
    n = x.shape[1]
    mean = x.mean(axis=1, keepdims=True)
    centred = x - mean
    if std == "population":
        sd = np.sqrt(np.mean(centred * centred, axis=1, keepdims=True))
        out = centred / (sd + eps)
        return np.where(sd < eps, 0.0, out)
    if n == 1:  # veRL: a singleton group gets mean 0 and std 1
        return x / (1.0 + eps)
    sd = np.sqrt(np.sum(centred * centred, axis=1, keepdims=True) / (n - 1))
    return centred / (sd + eps)


def max_at_k_transform(scores: ArrayLike, k: int) -> NDArray[np.float64]:
    """The unbiased per-sample max@k weights s_i (Bagirov et al.; PKPO's s), estimators.md §6.

    s_i = (1/C(n,k)) Σ over k-subsets S containing i of max_{l∈S} x_l; Σ_i s_i = k·(max@k estimate).
    Computed in O(n log n) per group: one sort, a diagonal term and a reverse cumulative sum.

    Args:
        scores: Rollout scalars, shape (B, n).
        k: Subset size, 1 <= k <= n.

    Returns:
        s, shape (B, n), in the rollouts' original order.
    """
    x = _check_scores(scores)
    n = x.shape[1]
    if not isinstance(k, int | np.integer) or not 1 <= k <= n:
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
    if not isinstance(k, int | np.integer) or not 1 <= k < n:
        raise ValueError(f"max_at_k needs an int k with 1 <= k < G={n} (G rollouts per group), got {k!r}.")
    return group_zscore(max_at_k_transform(x, int(k)), std=std, eps=eps)


def maxrl_advantages(scores: ArrayLike, *, eps: float = 1e-6, divide_by_n: bool = False) -> NDArray[np.float64]:
    """MaxRL: (x - mean) / (mean + eps) within each group; zero where the group mean is 0.

    Args:
        scores: Rollout scalars, shape (B, G).
        eps: Added to the mean.
        divide_by_n: Divide by G as veRL's official estimator does (a constant learning-rate factor).

    Returns:
        Advantages, shape (B, G).
    """
    x = _check_scores(scores)
    mean = x.mean(axis=1, keepdims=True)
    out = np.where(mean == 0.0, 0.0, (x - mean) / (mean + eps))
    return out / x.shape[1] if divide_by_n else out


def gdpo_advantages(
    per_dim: ArrayLike,
    *,
    weights: ArrayLike | None = None,
    response_lengths: ArrayLike | None = None,
    std: Std = "population",
    eps: float = 1e-6,
    whiten_eps: float = 1e-8,
) -> NDArray[np.float64]:
    """GDPO: per-dimension group z-scores, weighted sum, then whitening over the whole batch.

    Args:
        per_dim: Per-dimension rollout rewards, shape (B, G, d).
        weights: Channel weights, shape (d,); default all ones.
        response_lengths: Valid tokens per rollout, shape (B, G). If given, the whitening is
            token-weighted like veRL's ``masked_whiten`` (each rollout counts once per token);
            otherwise every rollout counts once.
        std: z-score convention of the per-dimension step (veRL uses ``"unbiased"``).
        eps: Added to the per-dimension std.
        whiten_eps: Added to the batch variance before the square root.

    Returns:
        Advantages, shape (B, G).
    """
    r = np.asarray(per_dim, dtype=np.float64)
    if r.ndim != 3:
        raise ValueError(f"per_dim must have shape (B, G, d), got {r.shape}.")
    if not np.all(np.isfinite(r)):
        raise ValueError("per_dim contains NaN or inf.")
    n_groups, group_size, d = r.shape
    w = np.ones(d) if weights is None else _check_vector(weights, d, "gdpo_weights")
    channels = r.transpose(0, 2, 1).reshape(n_groups * d, group_size)
    z = group_zscore(channels, std=std, eps=eps).reshape(n_groups, d, group_size)
    summed = np.einsum("bdg,d->bg", z, w)
    if response_lengths is None:
        counts = np.ones_like(summed)
    else:
        counts = np.asarray(response_lengths, dtype=np.float64)
        if counts.shape != summed.shape or np.any(counts < 1) or not np.all(np.isfinite(counts)):
            raise ValueError(f"response_lengths must be positive, shape {summed.shape}, got {counts.shape}.")
    total = counts.sum()
    mean = float(np.sum(counts * summed) / total)
    var = float(np.sum(counts * (summed - mean) ** 2) / (total - 1.0)) if total > 1 else 0.0
    return (summed - mean) / math.sqrt(var + whiten_eps)


# ------------------------------------------------------------------------------ rollout scalars
def _single(r: NDArray[np.float64], method: str) -> NDArray[np.float64]:
    if r.shape[2] != 1:
        raise ValueError(
            f"method {method!r} is single-answer, so rewards must have m=1 (shape (B, G, 1, d)), got m={r.shape[2]}."
        )
    return r[:, :, 0, :]


class _Scratch(threading.local):
    """Per-thread reusable buffers for the few-MB temporaries of `_vpo_scalars`.

    Allocating the (B, d·K) draws and (B, G·m, K) scores fresh on every call costs more in page
    faults than the arithmetic (measured: 4.9 ms vs 3.1 ms for B=128, G=8, m=3, d=32, K=100).
    """

    def __init__(self) -> None:
        self.buffers: dict[tuple[str, str], NDArray[Any]] = {}

    def get(self, name: str, shape: tuple[int, ...], dtype: type[np.generic] = np.float64) -> NDArray[Any]:
        size = math.prod(shape)
        slot = (name, np.dtype(dtype).str)
        buffer = self.buffers.get(slot)
        if buffer is None or buffer.size < size:
            buffer = np.empty(size, dtype=dtype)
            self.buffers[slot] = buffer
        return buffer[:size].reshape(shape)


_SCRATCH = _Scratch()


def _first_copies(r: NDArray[np.float64]) -> NDArray[np.intp] | None:
    """For each rollout, the index of the first rollout of its group with the same reward matrix.

    A position-independent fingerprint (a row-wise product sum, never BLAS) finds candidate copies,
    and an exact comparison confirms them, so a fingerprint collision can only miss a copy.

    Args:
        r: Rewards, shape (B, G, m, d).

    Returns:
        Indices, shape (B, G), or None when no group holds two identical rollouts.
    """
    n_groups, group_size = r.shape[:2]
    flat = r.reshape(n_groups, group_size, -1)
    probe = 0.5 + (np.arange(flat.shape[-1]) * 0.6180339887498949) % 1.0  # distinct weights in [0.5, 1.5)
    fingerprint = np.einsum("bgn,n->bg", flat, probe)  # (B, G); einsum's own loop, the same for every row
    first = np.argmax(fingerprint[:, :, None] == fingerprint[:, None, :], axis=2)  # (B, G)
    if np.all(first == np.arange(group_size)):
        return None
    same = np.all(np.take_along_axis(flat, first[:, :, None], axis=1) == flat, axis=-1)
    return np.where(same, first, np.arange(group_size))


# Reward magnitudes the float32 path handles (products with variates up to ~16 summed over d stay
# finite and normal); batches outside it take the float64 reference.
_FLOAT32_SAFE = (1e-30, 1e30)


def _vpo_scalars(r: NDArray[np.float64], keys: Sequence[Hashable], k: int, alpha: float, seed: int) -> NDArray:
    """VPO's set reward per rollout, shape (B, G), with bit-identical values for copies of a rollout.

    Copies must score alike (an all-equal group then has exactly zero advantages), but float32 GEMM
    kernels round a block's edge rows differently, so copies take their first occurrence's score.
    """
    scalars = _vpo_set_rewards(r, keys, k, alpha, seed)
    first = _first_copies(r)
    return scalars if first is None else np.take_along_axis(scalars, first, axis=1)


def _vpo_reference(r: NDArray[np.float64], keys: Sequence[Hashable], k: int, alpha: float, seed: int) -> NDArray:
    """`objectives.vpo_reward` under each group's normalised float64 weights, shape (B, G)."""
    return vpo_reward(r, group_weights(r.shape[-1], k, keys, alpha=alpha, seed=seed)[:, None])


def _vpo_set_rewards(r: NDArray[np.float64], keys: Sequence[Hashable], k: int, alpha: float, seed: int) -> NDArray:
    """VPO's set reward per rollout, shape (B, G): `objectives.vpo_reward` under each group's K weights.

    For alpha = 1 this is a float32 fast path over the negated exponentials of
    `weights.fill_negative_exponentials` (never normalised): with L = -E, the best candidate's
    (E/ΣE)·r_j is min_j L·r_j / ΣL, and ΣL comes out of the same batched matmul as one extra row of
    ones. The mean over K is taken in float64. Agreement with the float64 reference is ~1e-6
    relative, three orders below the Monte Carlo error of K = 100 draws. Other alpha, and rewards
    too large or too small for float32, take the float64 reference (`_vpo_reference`).
    """
    n_groups, group_size, m, d = r.shape
    scale = max(float(r.max()), -float(r.min()))  # max |r|, without a temporary
    if alpha != 1.0 or not (_FLOAT32_SAFE[0] <= scale <= _FLOAT32_SAFE[1] or scale == 0.0):
        return _vpo_reference(r, keys, k, alpha, seed)
    rows = group_size * m
    negated = _SCRATCH.get("negated", (n_groups, d * k), np.float32)
    fill_negative_exponentials(negated, keys, seed=seed)
    augmented = _SCRATCH.get("augmented", (n_groups, rows + 1, d), np.float32)  # candidates, then a row of ones
    np.copyto(augmented[:, :rows], r.reshape(n_groups, rows, d), casting="same_kind")
    augmented[:, rows] = 1.0
    scores = _SCRATCH.get("scores", (n_groups, rows + 1, k), np.float32)
    np.matmul(augmented, negated.reshape(n_groups, d, k), out=scores)  # (B, G·m + 1, K)
    totals = scores[:, rows]  # (B, K): ΣL < 0
    if np.any(totals == 0.0):  # every variate of a draw was exactly 0 (possible for tiny d): use the reference
        return _vpo_reference(r, keys, k, alpha, seed)
    by_candidate = scores[:, :rows].reshape(n_groups, group_size, m, k)
    best = _SCRATCH.get("best", (n_groups, group_size, k), np.float32)  # min_j L·r_j = -max_j E·r_j
    np.copyto(best, by_candidate[:, :, 0])
    for j in range(1, m):
        np.minimum(best, by_candidate[:, :, j], out=best)
    inverse_totals = 1.0 / (k * totals.astype(np.float64))  # (B, K)
    return np.einsum("bgk,bk->bg", best, inverse_totals)  # the mean over K, accumulated in float64


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
) -> NDArray[np.float64]:
    """The number each rollout contributes to its group, per method (DESIGN.md's method table).

    Args:
        method: A name of `vpo_core.METHODS`.
        rewards: Shape (B, G, m, d); m must be 1 for single-answer methods. Multi-answer rewards are
            expected de-duplicated and zero-padded (`TextEnv.training_rewards`). Ragged d (env-lcb)
            is accepted as a length-B list of (G, m, d_b) arrays.
        w_star: The fixed scalarisation, shape (d,) (a length-B list of (d_b,) for ragged d).
        seed: The run's seed for group-shared weights.
        group_keys: One key per group (default ``range(B)``); vpo draws `num_weights` Dirichlet
            weights per group from ``(seed, key)``, random_w and goal_cond draw one.
        num_weights: K, the number of weight draws of vpo.
        alpha: Dirichlet concentration.
        goal_weights: goal_cond only: the weights written into each group's prompt, shape (B, d).

    Returns:
        Scalars, shape (B, G); for gdpo the per-dimension rewards, shape (B, G, d).
    """
    spec = get_method(method)
    if not isinstance(rewards, np.ndarray) and isinstance(rewards, list | tuple):
        return _ragged_scalars(method, rewards, w_star, seed, group_keys, num_weights, alpha, goal_weights)
    r = _check_rewards(rewards)
    n_groups, _, _, d = r.shape
    w = _check_vector(w_star, d, "w_star")
    keys = _keys(group_keys, n_groups)
    if not isinstance(num_weights, int | np.integer) or num_weights < 1:
        raise ValueError(f"num_weights (K) must be a positive int, got {num_weights!r}.")
    objective = spec.objective
    if objective == "w_star":
        return _single(r, method) @ w
    if objective == "per_dim":
        return _single(r, method).copy()
    if objective in ("random_w", "goal_w"):
        single = _single(r, method)
        if objective == "goal_w" and goal_weights is not None:
            gw = np.asarray(goal_weights, dtype=np.float64)
            if gw.shape != (n_groups, d) or not np.all(np.isfinite(gw)):
                raise ValueError(f"goal_weights must be finite with shape (B={n_groups}, d={d}), got {gw.shape}.")
        else:
            gw = group_weights(d, 1, keys, alpha=alpha if objective == "random_w" else 1.0, seed=seed)[:, 0, :]
        return np.einsum("bgd,bd->bg", single, gw)
    if objective == "multi_sum":
        return (r @ w).sum(axis=-1)
    if objective == "vpo":
        return _vpo_scalars(r, keys, int(num_weights), alpha, seed)
    raise ValueError(f"method {method!r} has an objective this function does not know: {objective!r}.")


# ---------------------------------------------------------------------------------- ragged d
def _ragged_scalars(method, rewards, w_star, seed, group_keys, num_weights, alpha, goal_weights):
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
        )
        for j, b in enumerate(idx):
            out[b] = values[j]
    if get_method(method).objective == "per_dim" and len({o.shape[-1] for o in out}) != 1:
        raise ValueError("gdpo needs the same d in every group; pad per-test rewards (e.g. tc_0..tc_15) first.")
    return np.stack(out)


# ------------------------------------------------------------------------------ entry point
def compute_advantages(
    method: str,
    rewards: ArrayLike | Sequence[ArrayLike],
    *,
    w_star: ArrayLike | Sequence[ArrayLike],
    seed: int = 0,
    group_keys: Sequence[Hashable] | None = None,
    num_weights: int = 100,
    alpha: float = 1.0,
    **options: Any,
) -> NDArray[np.float64]:
    """Advantages of a batch for any method of the paper.

    Args:
        method: ``"vpo"``, ``"grpo"``, ``"random_w"``, ``"goal_cond"``, ``"gdpo"``, ``"max_at_k"``,
            ``"maxrl"`` or ``"multi_rlvr"``.
        rewards: Shape (B groups, G rollouts, m candidates, d dims); see `rollout_scalars`.
        w_star: The env's fixed scalarisation, shape (d,).
        seed: Seed of the group-shared weights.
        group_keys: One key per group (default ``range(B)``); use a key that changes every step
            (e.g. ``(step, task_id)`` or veRL's uid) so groups get fresh weights.
        num_weights: K, the number of weight draws per group (vpo).
        alpha: Dirichlet concentration (vpo, random_w).
        **options: ``std`` ("population" default, or "unbiased"), ``eps`` (1e-6), ``goal_weights``
            (B, d) for goal_cond, ``k`` for max_at_k (default max(2, G // 2)), ``response_lengths``
            (B, G) and ``gdpo_weights`` (d,) for gdpo, ``divide_by_n`` for maxrl.

    Returns:
        Advantages, shape (B, G), one per rollout (broadcast to its tokens by the engine).

    Raises:
        ValueError: For an unknown method or option, bad shapes, NaN/inf, or a method/m mismatch.
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise ValueError(f"unknown option(s) {sorted(unknown)} for compute_advantages; valid: {sorted(_OPTIONS)}.")
    _check_std(options.get("std", "population"))
    scalars = rollout_scalars(
        method,
        rewards,
        w_star=w_star,
        seed=seed,
        group_keys=group_keys,
        num_weights=num_weights,
        alpha=alpha,
        goal_weights=options.get("goal_weights"),
    )
    return normalize_scalars(method, scalars, **{k: v for k, v in options.items() if k != "goal_weights"})


def normalize_scalars(
    method: str,
    scalars: ArrayLike,
    *,
    std: Std = "population",
    eps: float = 1e-6,
    k: int | None = None,
    response_lengths: ArrayLike | None = None,
    gdpo_weights: ArrayLike | None = None,
    divide_by_n: bool = False,
) -> NDArray[np.float64]:
    """The method's group normaliser applied to rollout scalars (the second half of `compute_advantages`).

    Args:
        method: A name of `vpo_core.METHODS`.
        scalars: From `rollout_scalars`: shape (B, G), or (B, G, d) for gdpo.
        std: z-score convention.
        eps: Added to the std (or to the mean for maxrl).
        k: max_at_k's subset size.
        response_lengths: gdpo's token-weighted whitening, shape (B, G).
        gdpo_weights: gdpo's channel weights, shape (d,).
        divide_by_n: maxrl's veRL form.

    Returns:
        Advantages, shape (B, G).
    """
    spec = get_method(method)
    _check_std(std)
    eps = float(eps)
    if spec.normalizer == "zscore":
        return group_zscore(scalars, std=std, eps=eps)
    if spec.normalizer == "max_at_k":
        return max_at_k_advantages(scalars, k, std=std, eps=eps)
    if spec.normalizer == "maxrl":
        return maxrl_advantages(scalars, eps=eps, divide_by_n=bool(divide_by_n))
    if spec.normalizer == "gdpo":
        return gdpo_advantages(scalars, weights=gdpo_weights, response_lengths=response_lengths, std=std, eps=eps)
    raise ValueError(f"method {method!r} has a normaliser this function does not know: {spec.normalizer!r}.")


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
        index: Group id per rollout, shape (N,) (veRL's ``uid`` object array).

    Returns:
        The layout.

    Raises:
        ValueError: If groups have different sizes.
    """
    ids = np.asarray(index, dtype=object).reshape(-1)
    _, first, inverse, counts = np.unique(ids.astype(str), return_index=True, return_inverse=True, return_counts=True)
    if counts.size and np.any(counts != counts[0]):
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

    Args:
        scores: Rollout scalars, shape (N,).
        index: Group id per rollout, shape (N,).
        std: z-score convention (see `group_zscore`).
        eps: Added to the std.

    Returns:
        Advantages, shape (N,).
    """
    _check_std(std)
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    ids = np.asarray(index, dtype=object).reshape(-1)
    if ids.shape != x.shape:
        raise ValueError(f"index must have one id per score ({x.shape[0]}), got {ids.shape[0]}.")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores contain NaN or inf.")
    _, inverse, counts = np.unique(ids.astype(str), return_inverse=True, return_counts=True)
    sums = np.bincount(inverse, weights=x)
    mean = sums / counts
    centred = x - mean[inverse]
    sq = np.bincount(inverse, weights=centred * centred)
    if std == "population":
        sd = np.sqrt(sq / counts)[inverse]
        return np.where(sd < eps, 0.0, centred / (sd + eps))
    singleton = counts[inverse] == 1
    sd = np.sqrt(sq / np.maximum(counts - 1, 1))[inverse]
    return np.where(singleton, x / (1.0 + eps), centred / (sd + eps))
