"""Evaluation metrics of the paper (its appendix on evaluation), and the authors' pool metrics.

pass@k, best@k (iid and multi-answer chains), E_w[best@k], reward-space diversity and on-policy
collinearity; chain-level and solution-level pass@k and the Pareto fraction of a pool.

Every estimator is exact and unbiased for sampling without replacement from the pool, computed in
float64 with stable weights; none of them resamples. E_w[best@k] is an integral over the simplex:
by default it is taken on `EXPECTED_WEIGHTS` scrambled Sobol points mapped to Dir(1)
(`evaluation_weights`), within about 0.002 of the exact integral on maze pools. The fixed set of 100
iid draws used before sat 0.013-0.018 below it (that set's mean is (0.249, 0.299, 0.231, 0.222)).
"""

from __future__ import annotations

import functools
import math

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import finite_array
from vpo_core.qmc import MAX_SOBOL_DIM, sobol_uniforms
from vpo_core.weights import KeyedWeights, dirichlet_weights

EXPECTED_WEIGHTS = 256
"""Weight points of E_w[best@k] by default: 2^8 scrambled Sobol points (error <= ~0.002 on maze pools)."""

__all__ = [
    "EXPECTED_WEIGHTS",
    "best_at_k",
    "best_at_k_chains",
    "best_at_k_curve",
    "best_at_k_weight_rows",
    "best_at_k_weights",
    "chain_pass_at_k",
    "collinearity",
    "evaluation_weights",
    "expected_best_at_k",
    "pareto_fraction",
    "pass_at_k",
    "reward_diversity",
    "solution_pass_at_k",
]


def _check_k(k: object, n: int, what: str = "k") -> int:
    if isinstance(k, bool) or not isinstance(k, int | np.integer):
        raise ValueError(f"{what} must be an int, got {k!r}.")
    if not 1 <= k <= n:
        raise ValueError(f"{what} must satisfy 1 <= {what} <= n (pool size {n}), got {k}.")
    return int(k)


# ------------------------------------------------------------------------------------- pass@k
def pass_at_k(n: ArrayLike, c: ArrayLike, k: ArrayLike) -> NDArray[np.float64] | float:
    """Unbiased pass@k = 1 − C(n−c, k)/C(n, k) (Chen et al. 2021), in the stable log1p form.

    Args:
        n: Samples per problem (scalar or array).
        c: Correct samples per problem, 0 <= c <= n.
        k: Budget, 1 <= k <= n.

    Returns:
        pass@k, broadcast shape of the inputs (a float for scalar input).
    """
    nn, cc, kk = np.broadcast_arrays(np.asarray(n), np.asarray(c), np.asarray(k))
    for name, arr in (("n", nn), ("c", cc), ("k", kk)):
        if not np.all(np.equal(np.mod(arr, 1), 0)):
            raise ValueError(f"{name} must hold integers, got {arr!r}.")
    nn, cc, kk = nn.astype(np.int64), cc.astype(np.int64), kk.astype(np.int64)
    if np.any(nn < 1) or np.any(cc < 0) or np.any(cc > nn):
        raise ValueError("pass_at_k needs n >= 1 and 0 <= c <= n.")
    if np.any(kk < 1) or np.any(kk > nn):
        raise ValueError("pass_at_k needs 1 <= k <= n; draw more samples or lower k.")
    out = np.empty(nn.shape, dtype=np.float64)
    flat_n, flat_c, flat_k, flat_out = nn.reshape(-1), cc.reshape(-1), kk.reshape(-1), out.reshape(-1)
    for i in range(flat_n.size):  # one short sum of c log1p terms per problem
        n_i, c_i, k_i = int(flat_n[i]), int(flat_c[i]), int(flat_k[i])
        if c_i == 0:
            flat_out[i] = 0.0
        elif n_i - c_i < k_i:
            flat_out[i] = 1.0
        else:
            terms = np.arange(n_i - c_i + 1, n_i + 1, dtype=np.float64)
            flat_out[i] = -math.expm1(float(np.sum(np.log1p(-k_i / terms))))
    return float(out) if out.ndim == 0 else out


def _check_success(success: ArrayLike) -> NDArray[np.bool_]:
    s = np.asarray(success)
    if s.ndim != 2 or 0 in s.shape:
        raise ValueError(f"success must have shape (n chains, m candidates) with n, m >= 1, got {s.shape}.")
    if not np.all((s == 0) | (s == 1)):
        raise ValueError("success must hold booleans (or 0/1): whether each candidate solves the task.")
    return s.astype(bool)


def chain_pass_at_k(success: ArrayLike, k: int) -> float:
    """Chain-level pass@k: the chance that at least one of k chains, drawn without replacement, holds a success.

    A chain is one completion with its m candidates; it succeeds when any candidate does. This is
    Chen et al.'s unbiased pass@k with chains as the samples: 1 − C(n − c, k)/C(n, k), c the
    succeeding chains. It charges a policy per completion (a generation budget of k completions).

    Args:
        success: Whether each candidate solves the task, shape (n chains, m candidates).
        k: Number of chains, 1 <= k <= n.

    Returns:
        The estimate in [0, 1].
    """
    s = _check_success(success)
    n = s.shape[0]
    _check_k(k, n, "k (chains)")
    return float(pass_at_k(n, int(s.any(axis=1).sum()), k))


def solution_pass_at_k(success: ArrayLike, k: int) -> float:
    """Solution-level pass@k: the chance that at least one of k candidates, drawn from all n·m without replacement, succeeds.

    Chains are ignored: every candidate of the pool is one sample (1 − C(N − c, k)/C(N, k) with
    N = n·m and c the succeeding candidates). It charges a policy per candidate.

    Args:
        success: Whether each candidate solves the task, shape (n chains, m candidates).
        k: Number of candidates, 1 <= k <= n·m.

    Returns:
        The estimate in [0, 1].
    """
    s = _check_success(success)
    _check_k(k, s.size, "k (candidates)")
    return float(pass_at_k(s.size, int(s.sum()), k))


def pareto_fraction(rewards: ArrayLike) -> float:
    """The fraction of a pool's candidates that lie on the pool's own Pareto front.

    Candidate i is dominated when some candidate j is at least as good in every dimension and
    strictly better in one (every dimension is maximised); the front is the non-dominated
    candidates. Copies of one reward vector do not dominate each other, so all copies of a front
    point count. The front is the pool's own, not the task's true front (which few tasks know).

    Args:
        rewards: The pool's reward vectors, shape (N, d), N >= 1.

    Returns:
        (number of non-dominated candidates) / N, in (0, 1].
    """
    r = finite_array("rewards", rewards, 2)
    if r.ndim != 2 or r.shape[0] < 1:
        raise ValueError(f"rewards must have shape (N candidates, d) with N >= 1, got {r.shape}.")
    n = r.shape[0]
    dominated = np.zeros(n, dtype=bool)
    block = max(1, 2**20 // max(1, n * r.shape[1]))  # bounds the (block, N, d) comparison to ~1M entries
    for start in range(0, n, block):
        rows = r[start : start + block, None, :]  # candidates i
        geq = np.all(r[None] >= rows, axis=-1)  # (block, N): j at least as good as i everywhere
        gt = np.any(r[None] > rows, axis=-1)  # j strictly better somewhere
        dominated[start : start + block] = np.any(geq & gt, axis=1)
    return float(np.count_nonzero(~dominated) / n)


# ------------------------------------------------------------------------------------- best@k
def best_at_k_weights(n: int, k: int) -> NDArray[np.float64]:
    """Weights of the order statistics in best@k: w_i = C(i−1, k−1)/C(n, k), i = 1..n (ascending).

    Args:
        n: Pool size.
        k: Subset size.

    Returns:
        Weights, shape (n,), zero below rank k, summing to 1.
    """
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"n must be a positive int, got {n!r}.")
    k = _check_k(k, int(n))
    return best_at_k_weight_rows(int(n), np.array([k]))[0]


def best_at_k_weight_rows(n: int, ks: NDArray[np.int64]) -> NDArray[np.float64]:
    """Rows of best@k weights for several k at once, shape (len(ks), n).

    Backward recurrence w_n = k/n, w_{i-1} = w_i·(i−k)/(i−1) as one reversed cumulative product; the
    factor at i = k is exactly 0, so every weight below rank k is exactly 0.
    """
    k = ks.astype(np.float64)[:, None]
    out = np.empty((ks.size, n), dtype=np.float64)
    out[:, -1] = k[:, 0] / n
    if n > 1:
        t = np.arange(n, 1, -1, dtype=np.float64)  # t = n..2
        ratios = t[None, :] - k  # (len(ks), n-1): w_{t-1}/w_t = (t-k)/(t-1)
        ratios /= t - 1.0
        np.cumprod(ratios, axis=1, out=ratios)
        ratios *= k / n
        out[:, :-1] = ratios[:, ::-1]
    return out


def best_at_k(scores: ArrayLike, k: int) -> NDArray[np.float64] | float:
    """Unbiased estimate of E[max of a uniform k-subset] of a pool of n scalar scores.

    Args:
        scores: Pool scores, shape (..., n).
        k: Subset size, 1 <= k <= n.

    Returns:
        best@k, shape (...) (a float for a 1-D pool).
    """
    x = finite_array("scores", scores, 1)
    k = _check_k(k, x.shape[-1])
    result = np.sort(x, axis=-1) @ best_at_k_weight_rows(x.shape[-1], np.array([k]))[0]
    return float(result) if np.ndim(result) == 0 else result


def best_at_k_curve(scores: ArrayLike, ks: ArrayLike | None = None) -> NDArray[np.float64]:
    """best@k for several k with one sort.

    Args:
        scores: Pool scores, shape (..., n).
        ks: The k values (default 1..n).

    Returns:
        best@k, shape (..., len(ks)).
    """
    x = finite_array("scores", scores, 1)
    n = x.shape[-1]
    k_values = np.arange(1, n + 1) if ks is None else np.asarray(ks).reshape(-1)
    for k in k_values:
        _check_k(int(k) if np.issubdtype(np.asarray(k).dtype, np.integer) else k, n)
    return np.sort(x, axis=-1) @ best_at_k_weight_rows(n, k_values.astype(np.int64)).T


def best_at_k_chains(chain_scores: ArrayLike, k: int) -> NDArray[np.float64] | float:
    """Exact best@k of the VPO paper's multi-answer protocol (the paper's appendix on best@k for multi-answer policies).

    S_k concatenates the candidates of c = ⌈k/m⌉ independent chains in generation order and keeps the
    first k; the estimate averages max(S_k) over every ordered choice of c distinct chains of the pool.

    Args:
        chain_scores: Scores of each chain's candidates in generation order, shape (..., n, m).
        k: Number of candidates, 1 <= k <= n·m.

    Returns:
        best@k, shape (...) (a float for a single pool).
    """
    s = finite_array("chain_scores", chain_scores, 2)
    n, m = s.shape[-2], s.shape[-1]
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= n * m:
        raise ValueError(f"k must be an int with 1 <= k <= n_chains·m = {n}·{m}; got {k!r}. Sample more chains.")
    c = -(-k // m)
    r = k - (c - 1) * m
    partial = s[..., :r].max(axis=-1)  # P_p, shape (..., n)
    if c == 1:
        result = partial.mean(axis=-1)
        return float(result) if np.ndim(result) == 0 else result
    full = s.max(axis=-1)  # F_p
    order = np.argsort(full, axis=-1, kind="stable")
    sorted_full = np.take_along_axis(full, order, axis=-1)  # (..., n)
    position = np.empty_like(order)
    np.put_along_axis(position, order, np.arange(n), axis=-1)  # rank of chain p in sorted order
    # F^{(-p)} is the sorted list without chain p's own entry: sorted entry i has rank i among the other
    # chains below p's position q and rank i - 1 above it, so it gets the weight u[i] or u[i - 1] (none at q);
    # max(·, P_p) keeps the order, so best@(c-1) of the others against P_p is one weighted sum per p
    u = best_at_k_weight_rows(n - 1, np.array([c - 1]))[0]  # C(i-1, c-2)/C(n-1, c-1)
    q, i = np.arange(n)[:, None], np.arange(n)[None, :]
    rank_weights = np.where(i < q, u[np.minimum(i, n - 2)], np.where(i > q, u[np.maximum(i - 1, 0)], 0.0))  # (q, i)
    values = np.einsum(
        "...pi,...pi->...p", np.maximum(sorted_full[..., None, :], partial[..., :, None]), rank_weights[position]
    )  # (..., n)
    result = values.mean(axis=-1)
    return float(result) if np.ndim(result) == 0 else result


def evaluation_weights(d: int, num_weights: int = EXPECTED_WEIGHTS, *, seed: int = 0) -> NDArray[np.float64]:
    """The weights E_w[best@k] averages over: a quasi-Monte Carlo Dir(1) set, the same in every process.

    Scrambled Sobol points (`vpo_core.qmc.sobol_uniforms`, key ``"expected_best_at_k"``) mapped onto
    the simplex through Gamma(1)'s quantile ``-log(1 - u)`` for d <= 21, iid Dir(1) draws
    (`dirichlet_weights`) above. Every point is marginally Dir(1) and the set is stratified, so the
    average is much closer to the integral over Dir(1) than iid draws of the same size (use a power
    of two).

    Args:
        d: Number of reward dimensions.
        num_weights: K, the number of weight vectors.
        seed: Seed of the scramble (or of the iid draws).

    Returns:
        Weights, shape (K, d), each row non-negative and summing to 1.
    """
    if isinstance(num_weights, bool) or not isinstance(num_weights, int | np.integer) or num_weights < 1:
        raise ValueError(f"num_weights must be a positive int, got {num_weights!r}.")
    return _evaluation_weights(int(d), int(num_weights), int(seed)).copy()


@functools.lru_cache(maxsize=64)
def _evaluation_weights(d: int, num_weights: int, seed: int) -> NDArray[np.float64]:
    """`evaluation_weights` without the checks, cached (the same set serves every task and k)."""
    if d <= MAX_SOBOL_DIM:
        gammas = -np.log1p(-sobol_uniforms(d, num_weights, ["expected_best_at_k"], KeyedWeights(seed))[0])
        return gammas / gammas.sum(axis=-1, keepdims=True)  # d independent Exp(1) variates normalised: Dir(1)
    return dirichlet_weights(d, num_weights, seed=seed, key="expected_best_at_k")


def expected_best_at_k(
    rewards: ArrayLike,
    k: int,
    *,
    weights: ArrayLike | None = None,
    num_weights: int = EXPECTED_WEIGHTS,
    seed: int = 0,
    chains: bool = False,
) -> float:
    """E_w[best@k]: best@k of the scores w·r, averaged over w ~ Dir(1) (§10.4).

    Args:
        rewards: The pool's reward vectors: shape (n, d) for iid samples, or (n_chains, m, d) with
            ``chains=True`` for the multi-answer protocol.
        k: Subset size (candidates).
        weights: Explicit weights, shape (K, d); default `evaluation_weights` (K = `num_weights`
            scrambled Sobol points from `seed`).
        num_weights: K when weights are not given.
        seed: Seed of the default weights.
        chains: Use the chain estimator.

    Returns:
        The average of best@k over the weights.
    """
    r = finite_array("rewards", rewards, 3 if chains else 2)
    if r.ndim != (3 if chains else 2):
        raise ValueError(f"rewards must have shape {'(n_chains, m, d)' if chains else '(n, d)'}, got {r.shape}.")
    d = r.shape[-1]
    w = evaluation_weights(d, num_weights, seed=seed) if weights is None else weights
    w = finite_array("weights", w, 2)
    if w.shape[-1] != d:
        raise ValueError(f"weights must have shape (K, {d}), got {w.shape}.")
    scores = np.moveaxis(r @ w.T, -1, 0)  # (K, n) or (K, n_chains, m)
    per_weight = best_at_k_chains(scores, k) if chains else best_at_k(scores, k)
    return float(np.mean(per_weight))


# ------------------------------------------------------------------------------ reward space
def reward_diversity(rewards: ArrayLike) -> float:
    """Mean pairwise L1 distance between reward vectors (the paper's reward-space diversity).

    Computed per dimension from sorted values in O(N log N): Σ_{i<j}|x_i − x_j| = Σ_i x_(i)(2i − N − 1).

    Args:
        rewards: One pool, shape (N, d), or several, shape (P, N, d) (then averaged over pools).

    Returns:
        The diversity; 0 for a pool with fewer than two members.
    """
    r = finite_array("rewards", rewards, 2)
    if r.ndim not in (2, 3):
        raise ValueError(f"rewards must have shape (N, d) or (P, N, d), got {r.shape}.")
    pools = r[None] if r.ndim == 2 else r
    n = pools.shape[1]
    if n < 2:
        return 0.0
    coeff = 2.0 * np.arange(1, n + 1) - n - 1.0  # (N,)
    pair_sums = np.einsum("pnd,n->p", np.sort(pools, axis=1), coeff)
    return float(np.mean(2.0 * pair_sums / (n * (n - 1))))


def collinearity(vectors: ArrayLike, *, absolute: bool = False) -> float:
    """Mean off-diagonal Pearson correlation between reward dimensions (§10.6).

    Zero-variance dimensions are dropped first (np.corrcoef would give NaN rows).

    Args:
        vectors: On-policy reward vectors, shape (N, d).
        absolute: Average |ρ| instead of the signed correlations.

    Returns:
        ρ̄, or NaN when fewer than two dimensions vary.
    """
    v = finite_array("vectors", vectors, 2)
    if v.ndim != 2:
        raise ValueError(f"vectors must have shape (N, d), got {v.shape}.")
    kept = v[:, np.ptp(v, axis=0) > 0]
    if kept.shape[1] < 2:
        return float("nan")
    corr = np.corrcoef(kept, rowvar=False)
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    return float(np.mean(np.abs(off) if absolute else off))
