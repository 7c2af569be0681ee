"""Group normalisers: how a group's rollout scalars become advantages (registered with `register_normalizer`).

``zscore`` (`group_zscore`), ``max_at_k`` (`max_at_k_advantages`), ``maxrl`` (`maxrl_advantages`) and
``gdpo`` (`gdpo_advantages`) take scalars laid out (B groups, G rollouts), plus ``std`` and ``eps``
and the keyword options they declare at registration. `check_options` is the one place that checks
std, eps and the options a normaliser is given; `apply_normalizer` runs a normaliser with those checks
(`vpo_core.advantages.normalize_scalars` and the veRL estimators both call it).

Conventions (the paper's appendix; veRL's ``core_algos``): the z-score uses the population std with
eps = 1e-6 added, and a group whose std is below eps gets all-zero advantages; ``std="unbiased"``
gives veRL's convention instead (Bessel-corrected std; a singleton group keeps mean 0 and std 1). A
group whose scalars are all equal gets zeros under both, for any eps >= 0. `zscore_rule` is that rule,
shared by the grid (`group_zscore`) and the flat batch (`vpo_core.layout.zscore_by_index`).

Numerics: everything is float64. Normalisers divide each group by its largest |scalar| first (a
z-score does not depend on the scale, and eps is rescaled with it), so scalars anywhere in float64's
range give finite advantages. Input that has no finite answer (scalars beyond float64, a negative
group mean for MaxRL) raises a ValueError naming the problem; NaN is never returned.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import Std, check_eps, check_scores, check_std, check_vector, finite_or_raise
from vpo_core.methods import NORMALIZERS, Method, Normalizer, register_normalizer, registered_part
from vpo_core.metrics import best_at_k_weight_rows

__all__ = [
    "apply_normalizer",
    "check_options",
    "eps_per_unit",
    "gdpo_advantages",
    "group_scale",
    "group_zscore",
    "max_at_k_advantages",
    "max_at_k_transform",
    "maxrl_advantages",
    "normalizer_of",
    "zscore_rule",
]


# ------------------------------------------------------------------------------ shared numerics
def group_scale(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
    """Per-group max |x| (1 for an all-zero group) and the mask of constant groups.

    Args:
        x: Scalars, shape (B, G).

    Returns:
        The scale and the constant mask, both shape (B, 1).
    """
    constant = np.all(x == x[:, :1], axis=1, keepdims=True)
    scale = np.max(np.abs(x), axis=1, keepdims=True)
    return np.where(scale == 0.0, 1.0, scale), constant


def eps_per_unit(eps: float, scale: NDArray[np.float64]) -> NDArray[np.float64]:
    """The eps of a group in units of its scale; inf (so the result is 0) where the scale is below eps / 1.8e308."""
    with np.errstate(over="ignore"):
        return eps / scale


def zscore_rule(
    x: NDArray[np.float64],
    centred: NDArray[np.float64],
    sum_sq: NDArray[Any],
    count: NDArray[Any] | int,
    constant: NDArray[np.bool_],
    scale: NDArray[np.float64],
    *,
    std: Std,
    eps: float,
) -> NDArray[np.float64]:
    """The z-score rule, given each rollout's group statistics (in units of the group's scale).

    Every argument but `x` broadcasts against `x`'s shape (N,) or (B, G), so the grid and the flat
    batch share this code and differ only in how they reduce a group.

    Args:
        x: The rollout scalars, any shape S.
        centred: x / scale minus the group's mean of x / scale, shape S.
        sum_sq: The group's sum of ``centred**2``, broadcastable to S.
        count: The group's number of rollouts, broadcastable to S.
        constant: Whether the group's scalars are all equal, broadcastable to S.
        scale: The group's max |x| (1 for an all-zero group), broadcastable to S.
        std: ``"population"``: sd = sqrt(sum_sq / count), and zeros where sd < eps (in units of the
            scale); ``"unbiased"``: sd = sqrt(sum_sq / (count - 1)), and a singleton group gets
            x / (1 + eps) (veRL's mean 0 and std 1).
        eps: Added to the std; a checked, finite number >= 0.

    Returns:
        Advantages, shape S; zeros for a constant group.
    """
    tolerance = eps_per_unit(eps, scale)
    if std == "population":
        sd = np.sqrt(sum_sq / count)
        degenerate = constant | (sd < tolerance)
    else:
        singleton = np.broadcast_to(np.equal(count, 1), x.shape)
        sd = np.sqrt(sum_sq / np.maximum(np.subtract(count, 1), 1))
        degenerate = constant | singleton
    out = np.zeros_like(x)
    np.divide(centred, sd + tolerance, out=out, where=~np.broadcast_to(degenerate, x.shape))
    if std == "unbiased":  # veRL: a singleton group gets mean 0 and std 1
        out[singleton] = x[singleton] / (1.0 + eps)
    return out


# ------------------------------------------------------------------------------ option plumbing
def normalizer_of(method: Method) -> Normalizer:
    """The normaliser a method names.

    Raises:
        ValueError: If it is not registered, listing those that are.
    """
    return registered_part(NORMALIZERS, "normaliser", method.normalizer, method=method.name)


def check_options(normalizer: Normalizer, std: Any, eps: Any, options: Mapping[str, Any], *, owner: str) -> float:
    """Check std, eps and that `normalizer` reads every given option; the one copy of these checks.

    Args:
        normalizer: The registered normaliser.
        std: The z-score convention to check.
        eps: The eps to check.
        options: The method-specific options that are set (not None), by name.
        owner: Who asks, for the message (``"method 'vpo'"``).

    Returns:
        eps as a float.

    Raises:
        ValueError: For a bad std or eps, or an option the normaliser does not read.
    """
    check_std(std)
    checked_eps = check_eps(eps)
    unread = sorted(name for name in options if name not in normalizer.options)
    if unread:
        reads = ", ".join(normalizer.options) or "no options besides std and eps"
        raise ValueError(
            f"option(s) {unread} do not apply to {owner}: its normaliser {normalizer.name!r} reads {reads}."
        )
    return checked_eps


def apply_normalizer(
    normalizer: Normalizer, scalars: ArrayLike, *, std: Any, eps: Any, options: Mapping[str, Any], owner: str
) -> NDArray[np.float64]:
    """`check_options`, then the normaliser on the scalars, then a check that every advantage is finite.

    Args:
        normalizer: The registered normaliser.
        scalars: Rollout scalars, shape (B, G) (or what the normaliser takes, e.g. (B, G, d) for gdpo).
        std: The z-score convention.
        eps: Added to the std.
        options: The options that are set, by name; each must be one the normaliser reads.
        owner: Who asks, for the messages (``"method 'vpo'"``).

    Returns:
        Advantages, shape (B, G), all finite.
    """
    checked_eps = check_options(normalizer, std, eps, options, owner=owner)
    advantages = normalizer.fn(scalars, std=std, eps=checked_eps, **options)
    return finite_or_raise(advantages, f"the advantages of {owner}")


# ------------------------------------------------------------------------------------ normalisers
@register_normalizer("zscore")
def group_zscore(scores: ArrayLike, *, std: Std = "population", eps: float = 1e-6) -> NDArray[np.float64]:
    """Within-group z-score, (x - mean) / (std + eps) (`zscore_rule`).

    Args:
        scores: Rollout scalars, shape (B, G); any finite values.
        std: ``"population"`` (the paper: zeros when the std is below eps) or ``"unbiased"`` (veRL).
        eps: Added to the std; a finite number >= 0.

    Returns:
        Advantages, shape (B, G); zeros for a group whose scalars are all equal.
    """
    check_std(std)
    eps = check_eps(eps)
    x = check_scores(scores)
    scale, constant = group_scale(x)
    unit = x / scale  # in [-1, 1]: the squares below cannot overflow
    centred = unit - unit.mean(axis=1, keepdims=True)
    sum_sq = np.sum(centred * centred, axis=1, keepdims=True)
    return zscore_rule(x, centred, sum_sq, x.shape[1], constant, scale, std=std, eps=eps)


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
    x = check_scores(scores)
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
    x = check_scores(scores)
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
    check_std(std)
    eps = check_eps(eps)
    x = check_scores(scores)
    scale, _ = group_scale(x)
    unit = x / scale
    mean = unit.mean(axis=1, keepdims=True)
    if np.any(mean < 0.0):
        worst = int(np.argmin(mean[:, 0]))
        raise ValueError(
            f"maxrl divides by the group mean, so it needs rollout scalars whose group mean is >= 0; group "
            f"{worst} has mean {float(mean[worst, 0] * scale[worst, 0]):.3g}. Use non-negative rewards."
        )
    denominator = mean + eps_per_unit(eps, scale)
    out = np.zeros_like(unit)
    np.divide(unit - mean, denominator, out=out, where=np.broadcast_to(mean > 0.0, unit.shape))
    return out / x.shape[1] if divide_by_n else out


def _token_counts(response_lengths: ArrayLike | None, shape: tuple[int, ...]) -> NDArray[np.float64]:
    """Each rollout's weight in gdpo's whitening: its valid tokens, or 1 each; shape (B, G)."""
    if response_lengths is None:
        return np.ones(shape)
    counts = np.asarray(response_lengths, dtype=np.float64)
    if counts.shape != shape or not np.all(np.isfinite(counts)) or np.any(counts < 1):
        raise ValueError(f"response_lengths must be finite and >= 1 with shape {shape}, got {counts.shape}.")
    return counts


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
    w = np.ones(d) if gdpo_weights is None else check_vector(gdpo_weights, d, "gdpo_weights")
    channels = r.transpose(0, 2, 1).reshape(n_groups * d, group_size)
    z = group_zscore(channels, std=std, eps=eps).reshape(n_groups, d, group_size)
    with np.errstate(over="ignore", invalid="ignore"):
        summed = finite_or_raise(np.einsum("bdg,d->bg", z, w), "gdpo's weighted sums of z-scores")
    counts = _token_counts(response_lengths, summed.shape)
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
        return finite_or_raise((unit - mean) / spread, "gdpo's whitened advantages")
