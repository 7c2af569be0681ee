"""The scrambled Sobol sequence: evenly spread points of the unit cube, the same in every process.

E_w[best@k]'s evaluation weights (`vpo_core.metrics.evaluation_weights`) are these points mapped onto
Dir(1); vpo-lab's ``sobol`` weight sampler (`vpo_lab.qmc`) maps them onto Dir(alpha) for VPO's
advantages. Construction, per key:

1. The first K points of the d-dimensional Sobol sequence (digital base-2 construction, 32-bit
   precision), with the direction numbers of Joe & Kuo (2008, file ``new-joe-kuo-6.21201``) for the
   dimensions 2..21; dimension 1 is the van der Corput sequence. Points are taken in the natural
   order n = 0, 1, 2, ... (its first 2^t points are the same set as in Gray-code order).
2. A random linear matrix scramble and a random digital shift (Matoušek 1998): per dimension a
   lower-triangular binary matrix with unit diagonal multiplies the digits of every point, then
   the digits are XORed with a random 32-bit shift. The scramble keeps the net structure; the shift
   makes every single point uniform on [0, 1)^d with independent coordinates. The random bits come
   from the key's Generator (`vpo_core.weights.KeyedWeights.generator`, the sha256 digest of
   ``f"{seed}:{key}"``), so every process draws the same points for a key.
3. Each coordinate is the midpoint of its 2^-32 cell, so never 0 or 1.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

from vpo_core.errors import ConfigError
from vpo_core.weights import KeyedWeights, check_draw_size

__all__ = ["MAX_SOBOL_DIM", "check_sobol_size", "draw_bytes", "sobol_points", "sobol_uniforms"]

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


def draw_bytes(d: int, k: int, groups: int) -> int:
    """Bytes the Sobol weights of `groups` groups of K d-dimensional weights take at their peak.

    The (groups, K, d, log2 K) uint64 digits of the scramble plus ~12 float64 temporaries of the
    Gamma quantile per coordinate (vpo-lab's map onto Dir(alpha)).
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


def check_sobol_size(d: int, k: int) -> None:
    """Raise a `ConfigError` unless 1 <= d <= `MAX_SOBOL_DIM` and 1 <= k < 2^32 (ints)."""
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
    check_sobol_size(d, k)
    check_draw_size(draw_bytes(d, k, 1), f"{k} Sobol points of d={d}")
    if rng is None:  # the identity matrix (no bits below the diagonal) and no shift
        plain = _scrambled_integers(k, np.zeros((1, d, _BITS), dtype=np.uint64), np.zeros((1, d), dtype=np.uint64))
        return plain[0].astype(np.float64) / 2.0**_BITS
    below, shift = _scramble_bits(d, rng)
    return (_scrambled_integers(k, below[None], shift[None])[0].astype(np.float64) + 0.5) / 2.0**_BITS


def sobol_uniforms(d: int, k: int, keys: Sequence[Hashable], streams: KeyedWeights) -> NDArray[np.float64]:
    """The first k scrambled Sobol points per key, each scramble drawn from that key's stream.

    Args:
        d: Dimension, 1 <= d <= 21.
        k: Number of points per key.
        keys: One key per group, length B.
        streams: The run's keyed streams (`KeyedWeights` of its seed).

    Returns:
        Points, shape (B, k, d), each coordinate the midpoint of its 2^-32 cell (in (0, 1)); row b
        depends only on ``(seed, keys[b], d, k)``.
    """
    check_sobol_size(d, k)
    check_draw_size(draw_bytes(d, k, len(keys)), f"{len(keys)} group(s) of K={k} Sobol weights of d={d}")
    below = np.empty((len(keys), d, _BITS), dtype=np.uint64)
    shift = np.empty((len(keys), d), dtype=np.uint64)
    for b, key in enumerate(keys):  # each key's Generator is used up before the next is positioned
        below[b], shift[b] = _scramble_bits(d, streams.generator(key))
    return (_scrambled_integers(k, below, shift).astype(np.float64) + 0.5) / 2.0**_BITS
