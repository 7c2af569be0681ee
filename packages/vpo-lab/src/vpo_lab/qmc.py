"""The ``sobol`` weight sampler: scrambled Sobol points mapped onto the simplex as Dirichlet(alpha·1_d) draws.

VPO averages each rollout's best-of-m score over K weight vectors. Plain Monte Carlo draws them iid
from Dir(alpha); a quasi-Monte Carlo set spreads the K points evenly over the simplex instead, so the
average, and hence the advantage, is less noisy at equal K (BENCHMARKS.md, "QMC weights").

Construction, per group key: the first K points of the scrambled Sobol sequence of the group's
keyed stream (`vpo_core.qmc.sobol_uniforms`: Joe & Kuo direction numbers, d <= 21, a random linear
matrix scramble and digital shift), then each coordinate u goes through the quantile function of
Gamma(alpha), and each point is divided by its sum. Because a single scrambled point is uniform
with independent coordinates, its image is d independent Gamma(alpha) variates normalised: exactly
a Dir(alpha·1_d) draw. For alpha = 1 the quantile is ``-log(1 - u)``; for other alpha it is found
by safeguarded Newton steps on the regularised incomplete gamma function. Below
`vpo_core.weights.LOG_SPACE_ALPHA` the map runs in log space (`log_gamma_quantile`, then a softmax):
where the quantile is below 1e-300 it is P's small-x asymptote ``log x = (log u + log Γ(alpha +
1)) / alpha``, exact there to float64's resolution, so tiny concentrations give points near the
simplex's vertices, as Dir(alpha) does, instead of underflowing.

alpha must lie in `SOBOL_ALPHA_RANGE`: above 1e4 the incomplete gamma function's series needs more
terms than it is given (at 1e6 the median maps to P = 0.34), and such an alpha is the simplex's
centre to within 1 % anyway.

Marginally every weight vector is Dir(alpha); jointly the K vectors of a group are negatively
dependent (stratified), which is what lowers the variance of their average.

`SOBOL` is the ``weight_sampler=sobol`` record of `vpo_core.weights.WEIGHT_SAMPLERS`; vpo-lab's
``vpo.weight_samplers`` entry point names it, so no engine imports this module to offer it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

from vpo_core.qmc import check_sobol_size, draw_bytes, sobol_uniforms
from vpo_core.weights import ALPHA_RANGE, LOG_SPACE_ALPHA, KeyedWeights, WeightSampler, check_alpha

__all__ = ["SOBOL", "SOBOL_ALPHA_RANGE", "gamma_quantile", "log_gamma_quantile", "sobol_weights"]

SOBOL_ALPHA_RANGE: tuple[float, float] = (ALPHA_RANGE[0], 1e4)
"""The concentrations the Sobol map accepts, inclusive (see the module docstring for the upper end)."""

_LOG_TINY = -690.0
"""Below this log-quantile (x < 3e-300) P's small-x asymptote is exact to float64's resolution."""


# ------------------------------------------------------------------------ Gamma quantile
def _lower_regularized_gamma(a: float, x: NDArray[np.float64]) -> NDArray[np.float64]:
    """P(a, x), the regularised lower incomplete gamma function, for x >= 0 (series / continued fraction)."""
    out = np.zeros_like(x)
    positive = x > 0
    log_front = np.full_like(x, -np.inf)
    log_front[positive] = a * np.log(x[positive]) - x[positive] - math.lgamma(a)
    series = positive & (x < a + 1.0)
    if np.any(series):  # P = e^{-x} x^a / Γ(a) · Σ_n x^n / (a (a+1) ... (a+n))
        xs = x[series]
        term = np.full_like(xs, 1.0 / a)
        total = term.copy()
        for n in range(1, 1000):  # each entry stops on its own criterion: its value never depends on the batch
            term = term * xs / (a + n)
            total += term
            term[np.abs(term) <= np.abs(total) * 1e-15] = 0.0
            if not np.any(term):
                break
        out[series] = np.exp(log_front[series]) * total
    fraction = positive & ~series
    if np.any(fraction):  # Q = e^{-x} x^a / Γ(a) · 1/(x+1-a- 1·(1-a)/(x+3-a- 2·(2-a)/(x+5-a- ...))), modified Lentz
        xf = x[fraction]
        tiny = 1e-300
        b = xf + 1.0 - a
        c = np.full_like(xf, 1.0 / tiny)
        dd = 1.0 / b
        h = dd.copy()
        done = np.zeros(xf.shape, dtype=bool)
        for i in range(1, 1000):
            an = -i * (i - a)
            b = b + 2.0
            dd = an * dd + b
            dd = np.where(np.abs(dd) < tiny, tiny, dd)
            c = b + an / c
            c = np.where(np.abs(c) < tiny, tiny, c)
            dd = 1.0 / dd
            delta = np.where(done, 1.0, dd * c)
            h = h * delta
            done |= np.abs(delta - 1.0) <= 1e-15
            if np.all(done):
                break
        out[fraction] = 1.0 - np.exp(log_front[fraction]) * h
    return np.clip(out, 0.0, 1.0)


def gamma_quantile(u: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """The quantile function of Gamma(alpha, 1) at probabilities u in (0, 1).

    alpha = 1 is ``-log1p(-u)`` exactly; otherwise Newton steps on P(alpha, x) = u inside a bracket
    that every step keeps (a step that leaves it bisects instead), to a relative accuracy of ~1e-12.

    Args:
        u: Probabilities, any shape, strictly inside (0, 1).
        alpha: Shape, a finite number > 0.

    Returns:
        x with P(alpha, x) = u, the shape of u.
    """
    p = np.asarray(u, dtype=np.float64)
    if not np.all((p > 0.0) & (p < 1.0)):
        raise ValueError("gamma_quantile needs probabilities strictly inside (0, 1).")
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite positive number, got {alpha!r}.")
    if alpha == 1.0:
        return -np.log1p(-p)
    asymptote = _log_asymptote(p, alpha)
    tiny = asymptote < _LOG_TINY
    if np.any(tiny):  # the quantile is below 3e-300: its asymptote, 0 where it underflows
        out = np.exp(asymptote)
        if not np.all(tiny):
            out[~tiny] = _newton_quantile(p[~tiny], alpha)
        return out
    return _newton_quantile(p, alpha)


def log_gamma_quantile(u: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """The logarithm of Gamma(alpha)'s quantile at u in (0, 1), finite for every alpha in range.

    Where the quantile is below 3e-300 it is P's small-x asymptote ``(log u + log Γ(alpha + 1)) /
    alpha`` (exact there: P(alpha, x) = x^alpha / Γ(alpha + 1) · (1 + O(x))); elsewhere the log of
    `gamma_quantile`.

    Args:
        u: Probabilities, any shape, strictly inside (0, 1).
        alpha: Shape, a finite number > 0.

    Returns:
        log x with P(alpha, x) = u, the shape of u.
    """
    p = np.asarray(u, dtype=np.float64)
    if not np.all((p > 0.0) & (p < 1.0)):
        raise ValueError("log_gamma_quantile needs probabilities strictly inside (0, 1).")
    if not (math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha must be a finite positive number, got {alpha!r}.")
    if alpha == 1.0:
        return np.log(-np.log1p(-p))
    out = _log_asymptote(p, alpha)
    normal = out >= _LOG_TINY
    if np.any(normal):
        out[normal] = np.log(_newton_quantile(p[normal], alpha))
    return out


def _log_asymptote(p: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """``(log p + log Γ(alpha + 1)) / alpha``: log of P(alpha, ·)'s inverse as x -> 0."""
    return (np.log(p) + math.lgamma(alpha + 1.0)) / alpha


def _newton_quantile(p: NDArray[np.float64], alpha: float) -> NDArray[np.float64]:
    """`gamma_quantile` by safeguarded Newton steps, for quantiles of at least ~3e-300."""
    flat = p.reshape(-1)
    lo = np.zeros_like(flat)
    hi = np.full_like(flat, alpha)
    while True:  # grow the upper end until P(alpha, hi) >= u everywhere
        short = _lower_regularized_gamma(alpha, hi) < flat
        if not np.any(short):
            break
        hi = np.where(short, 2.0 * hi + 1.0, hi)
    # Start from P's small-x asymptote x ≈ (u Γ(a+1))^{1/a} where it lies in the bracket, else the midpoint.
    start = np.exp((np.log(flat) + math.lgamma(alpha + 1.0)) / alpha)
    x = np.where((start > lo) & (start < hi), start, 0.5 * (lo + hi))
    log_norm = math.lgamma(alpha)
    active = np.arange(flat.size)  # the entries still moving; the converged ones drop out
    for _ in range(200):
        xa, la, ha = x[active], lo[active], hi[active]
        f = _lower_regularized_gamma(alpha, xa) - flat[active]
        la = np.where(f < 0, xa, la)
        ha = np.where(f > 0, xa, ha)
        density = np.exp((alpha - 1.0) * np.log(xa) - xa - log_norm)
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            newton = xa - f / density
        inside = np.isfinite(newton) & (newton > la) & (newton < ha)
        step = np.where(f == 0, xa, np.where(inside, newton, 0.5 * (la + ha)))
        x[active], lo[active], hi[active] = step, la, ha
        moving = np.abs(step - xa) > 1e-12 * step
        active = active[moving]
        if active.size == 0:
            break
    return x.reshape(p.shape)


# ------------------------------------------------------------------------ keyed weights
def sobol_weights(
    d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> NDArray[np.float64]:
    """K quasi-Monte Carlo Dir(alpha·1_d) weight vectors per group key (scrambled Sobol, see the module).

    Args:
        d: Number of reward dimensions, 1 <= d <= 21.
        k: Number of weight vectors per group.
        keys: One key per group, length B; the scramble of group b is drawn from ``(seed, keys[b])``.
        alpha: Symmetric Dirichlet concentration.
        seed: The run's seed.

    Returns:
        Weights, shape (B, k, d); every row is non-negative and sums to 1, and row b depends only on
        ``(seed, keys[b], d, k, alpha)``.
    """
    return _keyed_sobol_weights(d, k, keys, KeyedWeights(seed), alpha)


def _keyed_sobol_weights(
    d: int, k: int, keys: Sequence[Hashable], streams: KeyedWeights, alpha: float
) -> NDArray[np.float64]:
    """`sobol_weights` from the keys' streams (a `vpo_core.weights.WeightDraw`), shape (B, k, d)."""
    check_sobol_size(d, k)
    value = check_alpha(alpha, limits=SOBOL_ALPHA_RANGE)
    u = sobol_uniforms(d, k, keys, streams)  # (B, k, d)
    if not u.size:
        return u
    if (
        value < LOG_SPACE_ALPHA
    ):  # a softmax of the log-quantiles: the largest coordinate is 1, none underflows to a 0 sum
        logs = log_gamma_quantile(u, value)
        gammas = np.exp(logs - logs.max(axis=-1, keepdims=True))
    else:  # the quantiles are at least 1e-99 here
        gammas = gamma_quantile(u, value)
    return gammas / gammas.sum(axis=-1, keepdims=True)


SOBOL = WeightSampler(
    name="sobol",
    draw=_keyed_sobol_weights,
    draw_bytes=draw_bytes,
    alpha_range=SOBOL_ALPHA_RANGE,
    check=check_sobol_size,
    description="scrambled Sobol points",
)
"""The ``sobol`` weight sampler: vpo-lab's ``vpo.weight_samplers`` entry point names it (``weight_sampler=sobol``)."""
