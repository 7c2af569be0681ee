"""Quasi-Monte Carlo weights: scrambled Sobol points mapped onto the simplex as Dirichlet(alpha·1_d) draws.

VPO averages each rollout's best-of-m score over K weight vectors. Plain Monte Carlo draws them iid
from Dir(alpha); a quasi-Monte Carlo set spreads the K points evenly over the simplex instead, so the
average, and hence the advantage, is less noisy at equal K (BENCHMARKS.md, "QMC weights").

Construction, per group key:

1. The first K points of the d-dimensional Sobol sequence (digital base-2 construction, 32-bit
   precision), with the direction numbers of Joe & Kuo (2008, file ``new-joe-kuo-6.21201``) for the
   dimensions 2..21; dimension 1 is the van der Corput sequence. Points are taken in the natural
   order n = 0, 1, 2, ... (its first 2^t points are the same set as in Gray-code order).
2. A random linear matrix scramble and a random digital shift (Matoušek 1998): per dimension a
   lower-triangular binary matrix with unit diagonal multiplies the digits of every point, then
   the digits are XORed with a random 32-bit shift. The scramble keeps the net structure; the shift
   makes every single point uniform on [0, 1)^d. The random bits come from the group's keyed
   Generator (`vpo_core.weights.KeyedWeights.generator`, the sha256 digest of ``f"{seed}:{key}"``),
   so every process draws the same points for a key.
3. Each coordinate u (the midpoint of its 2^-32 cell, so never 0 or 1) goes through the quantile
   function of Gamma(alpha), and each point is divided by its sum. Because a single scrambled point
   is uniform with independent coordinates, its image is d independent Gamma(alpha) variates
   normalised: exactly a Dir(alpha·1_d) draw. For alpha = 1 the quantile is ``-log(1 - u)``; for
   other alpha it is found by safeguarded Newton steps on the regularised incomplete gamma function.
   Below `vpo_core.weights.LOG_SPACE_ALPHA` the map runs in log space (`log_gamma_quantile`, then a
   softmax): where the quantile is below 1e-300 it is P's small-x asymptote ``log x = (log u +
   log Γ(alpha + 1)) / alpha``, exact there to float64's resolution, so tiny concentrations give
   points near the simplex's vertices, as Dir(alpha) does, instead of underflowing.

alpha must lie in `SOBOL_ALPHA_RANGE`: above 1e4 the incomplete gamma function's series needs more
terms than it is given (at 1e6 the median maps to P = 0.34), and such an alpha is the simplex's
centre to within 1 % anyway.

Marginally every weight vector is Dir(alpha); jointly the K vectors of a group are negatively
dependent (stratified), which is what lowers the variance of their average.

`SOBOL` is the ``weight_sampler=sobol`` record of `vpo_core.weights.WEIGHT_SAMPLERS`; vpo-core's
``vpo.weight_samplers`` entry point names it, so no engine imports this module to offer it.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

from vpo_core.errors import ConfigError
from vpo_core.weights import ALPHA_RANGE, LOG_SPACE_ALPHA, KeyedWeights, WeightSampler, check_alpha, check_draw_size

__all__ = [
    "MAX_SOBOL_DIM",
    "SOBOL",
    "SOBOL_ALPHA_RANGE",
    "draw_bytes",
    "gamma_quantile",
    "log_gamma_quantile",
    "sobol_points",
    "sobol_weights",
]

_BITS = 32

# Joe & Kuo (2008), new-joe-kuo-6.21201: (degree s, coefficients a, initial m_1..m_s) for dimensions 2, 3, ...
_JOE_KUO: tuple[tuple[int, int, tuple[int, ...]], ...] = (
    (1, 0, (1,)),
    (2, 1, (1, 3)),
    (3, 1, (1, 3, 1)),
    (3, 2, (1, 1, 1)),
    (4, 1, (1, 1, 3, 3)),
    (4, 4, (1, 3, 5, 13)),
    (5, 2, (1, 1, 5, 5, 17)),
    (5, 4, (1, 1, 5, 5, 5)),
    (5, 7, (1, 1, 7, 11, 19)),
    (5, 11, (1, 1, 5, 1, 1)),
    (5, 13, (1, 1, 1, 3, 11)),
    (5, 14, (1, 3, 5, 5, 31)),
    (6, 1, (1, 3, 3, 9, 7, 49)),
    (6, 13, (1, 1, 1, 15, 21, 21)),
    (6, 16, (1, 3, 1, 13, 27, 49)),
    (6, 19, (1, 1, 1, 15, 7, 5)),
    (6, 22, (1, 3, 1, 15, 13, 25)),
    (6, 25, (1, 1, 5, 5, 19, 61)),
    (7, 1, (1, 3, 7, 11, 23, 15, 103)),
    (7, 4, (1, 3, 7, 13, 13, 15, 69)),
)

MAX_SOBOL_DIM = len(_JOE_KUO) + 1
"""The largest d the Sobol sampler supports (21)."""

SOBOL_ALPHA_RANGE: tuple[float, float] = (ALPHA_RANGE[0], 1e4)
"""The concentrations the Sobol map accepts, inclusive (see the module docstring for the upper end)."""

_LOG_TINY = -690.0
"""Below this log-quantile (x < 3e-300) P's small-x asymptote is exact to float64's resolution."""


def draw_bytes(d: int, k: int, groups: int) -> int:
    """Bytes the Sobol weights of `groups` groups of K d-dimensional weights take at their peak.

    The (groups, K, d, log2 K) uint64 digits of the scramble plus ~12 float64 temporaries of the
    quantile per coordinate.
    """
    n = int(groups) * int(d) * int(k)
    return 8 * n * (max(1, int(k - 1).bit_length()) + 12)


def _direction_numbers(d: int) -> NDArray[np.uint64]:
    """Sobol direction numbers v_{j,i} << (32 - i), shape (d, 32), as uint64 holding 32-bit values."""
    v = np.zeros((d, _BITS), dtype=np.uint64)
    v[0] = [1 << (_BITS - 1 - i) for i in range(_BITS)]
    for j in range(1, d):
        s, a, m = _JOE_KUO[j - 1]
        row = [m[i] << (_BITS - 1 - i) for i in range(s)]
        for i in range(s, _BITS):
            value = row[i - s] ^ (row[i - s] >> s)
            for k in range(1, s):
                if (a >> (s - 1 - k)) & 1:
                    value ^= row[i - k]
            row.append(value)
        v[j] = row
    return v


_DIRECTIONS = _direction_numbers(MAX_SOBOL_DIM)


def _parity(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Parity of the set bits of each (32-bit) entry."""
    for shift in (16, 8, 4, 2, 1):
        x = x ^ (x >> np.uint64(shift))
    return x & np.uint64(1)


def _check_sobol(d: int, k: int) -> None:
    if isinstance(d, bool) or not isinstance(d, int | np.integer) or not 1 <= d <= MAX_SOBOL_DIM:
        raise ConfigError(
            f"the sobol weight sampler supports 1 <= d <= {MAX_SOBOL_DIM} reward dimensions, got {d!r}; "
            "use weight_sampler='dirichlet' for more."
        )
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k < 2**_BITS:
        raise ConfigError(f"k (number of points) must be an int in [1, 2^32), got {k!r}.")


def _scramble_bits(d: int, rng: np.random.Generator) -> tuple[NDArray[np.uint64], NDArray[np.uint64]]:
    """One scramble's random bits from `rng`: the matrices' strictly-lower parts (d, 32) and the shift (d,)."""
    below = rng.integers(0, 2**_BITS, size=(d, _BITS), dtype=np.uint64)
    shift = rng.integers(0, 2**_BITS, size=d, dtype=np.uint64)
    return below, shift


def _scrambled_integers(k: int, below: NDArray[np.uint64], shift: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """The first k Sobol points as 32-bit integers under B scrambles, shape (B, k, d).

    Args:
        k: Number of points.
        below: Random bits of the scramble matrices, shape (B, d, 32).
        shift: The digital shifts, shape (B, d).
    """
    d = below.shape[1]
    # Lower-triangular matrix rows as bit masks: output digit i (MSB first) is the parity of the input
    # digits l <= i that row i selects; digit i itself is always kept (unit diagonal).
    digit = np.uint64(1) << np.arange(_BITS - 1, -1, -1, dtype=np.uint64)  # digit i's bit, (32,)
    at_or_above = ~(digit - np.uint64(1)) & np.uint64(2**_BITS - 1)  # the bits of digits l <= i
    rows = (below & at_or_above & ~digit) | digit  # (B, d, 32)
    n_bits = max(1, int(k - 1).bit_length())
    directions = _DIRECTIONS[:d, :n_bits]  # (d, n_bits)
    bits = _parity(rows[:, :, :, None] & directions[None, :, None, :])  # (B, d, 32 digits, n_bits)
    scrambled = np.bitwise_or.reduce(
        bits << (np.uint64(_BITS - 1) - np.arange(_BITS, dtype=np.uint64))[:, None], axis=2
    )
    index = np.arange(k, dtype=np.uint64)
    digits = (index[:, None] >> np.arange(n_bits, dtype=np.uint64)) & np.uint64(1)  # (k, n_bits)
    chosen = np.where(digits[None, :, None, :] == 1, scrambled[:, None, :, :], np.uint64(0))  # (B, k, d, n_bits)
    return np.bitwise_xor.reduce(chosen, axis=3) ^ shift[:, None, :]


def sobol_points(d: int, k: int, rng: np.random.Generator | None = None) -> NDArray[np.float64]:
    """The first k points of the d-dimensional Sobol sequence, optionally scrambled.

    Args:
        d: Dimension, 1 <= d <= 21.
        k: Number of points.
        rng: Source of the scramble's bits; None gives the plain (unscrambled) sequence.

    Returns:
        Points, shape (k, d): scrambled, each coordinate is the midpoint of its 2^-32 cell (in (0, 1));
        plain, the sequence's exact dyadic values (point 0 is the origin).
    """
    _check_sobol(d, k)
    check_draw_size(draw_bytes(d, k, 1), f"{k} Sobol points of d={d}")
    if rng is None:  # the identity matrix (no bits below the diagonal) and no shift
        plain = _scrambled_integers(k, np.zeros((1, d, _BITS), dtype=np.uint64), np.zeros((1, d), dtype=np.uint64))
        return plain[0].astype(np.float64) / 2.0**_BITS
    below, shift = _scramble_bits(d, rng)
    return (_scrambled_integers(k, below[None], shift[None])[0].astype(np.float64) + 0.5) / 2.0**_BITS


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
    _check_sobol(d, k)
    value = check_alpha(alpha, limits=SOBOL_ALPHA_RANGE)
    check_draw_size(draw_bytes(d, k, len(keys)), f"{len(keys)} group(s) of K={k} Sobol weights of d={d}")
    below = np.empty((len(keys), d, _BITS), dtype=np.uint64)
    shift = np.empty((len(keys), d), dtype=np.uint64)
    for b, key in enumerate(keys):
        below[b], shift[b] = _scramble_bits(d, streams.generator(key))
    u = (_scrambled_integers(k, below, shift).astype(np.float64) + 0.5) / 2.0**_BITS  # (B, k, d)
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
    check=_check_sobol,
    description="scrambled Sobol points",
)
"""The ``sobol`` weight sampler: vpo-core's ``vpo.weight_samplers`` entry point names it (``weight_sampler=sobol``)."""
