"""Group-shared Dirichlet weights, reproducible in any process.

VPO scores every rollout of a group under the same K weight vectors. The rollouts of one group are
scored in different processes (veRL's reward workers), so the draws are a pure function of
``(seed, key)``: the sha256 digest of ``f"{seed}:{key}"`` sets the state of a PCG64 generator, never
Python's salted ``hash()`` or a process-global stream. With alpha = 1 the variates are float32
exponentials from that stream (`fill_negative_exponentials`); the weights are Monte Carlo draws, so
their precision is far below what matters, and float32 halves the work of VPO's hot path.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "dirichlet_weights",
    "fill_negative_exponentials",
    "group_gamma_draws",
    "group_weights",
    "key_string",
    "stable_seed",
]

_MASK64 = (1 << 64) - 1


def key_string(key: Hashable) -> str:
    """The canonical text of a group key: ``str(key)``, or ``":"``-joined parts for tuples/lists."""
    if isinstance(key, tuple | list):
        return ":".join(key_string(part) for part in key)
    if isinstance(key, bytes):
        return key.hex()
    return str(key)


def _digest(seed: int, key: Hashable) -> bytes:
    return hashlib.sha256(f"{int(seed)}:{key_string(key)}".encode()).digest()


def stable_seed(seed: int, key: Hashable) -> int:
    """A 64-bit integer derived from ``(seed, key)``, identical in every process.

    Args:
        seed: The run's seed.
        key: The group key (a uid string, an int, or a tuple of those).

    Returns:
        ``int.from_bytes(sha256(f"{seed}:{key}").digest()[:8], "little")``.
    """
    return int.from_bytes(_digest(seed, key)[:8], "little")


def _check(d: int, k: int, alpha: float) -> None:
    if not isinstance(d, int | np.integer) or d < 1:
        raise ValueError(f"d (number of reward dimensions) must be a positive int, got {d!r}.")
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k (number of weight draws) must be a positive int, got {k!r}.")
    if not (isinstance(alpha, int | float | np.floating) and math.isfinite(alpha) and alpha > 0):
        raise ValueError(f"alpha (Dirichlet concentration) must be a finite positive number, got {alpha!r}.")


def group_weights(
    d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> NDArray[np.float64]:
    """K Dirichlet(alpha·1_d) weight vectors per group key.

    Args:
        d: Number of reward dimensions.
        k: Number of draws per group.
        keys: One key per group, length B.
        alpha: Symmetric Dirichlet concentration (1 = uniform on the simplex, the paper's choice).
        seed: The run's seed.

    Returns:
        Weights, shape (B, k, d); every row is non-negative and sums to 1. Row b depends only on
        ``(seed, keys[b], d, k, alpha)``.
    """
    weights = group_gamma_draws(d, k, keys, alpha=alpha, seed=seed)
    totals = weights.sum(axis=-1, keepdims=True)
    degenerate = totals <= 0.0  # only possible for tiny alpha: every gamma underflowed
    if np.any(degenerate):
        weights = np.where(degenerate, 1.0, weights)
        totals = np.where(degenerate, float(d), totals)
    weights /= totals
    return weights


def group_gamma_draws(
    d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> NDArray[np.float64]:
    """The unnormalised Gamma(alpha) variates behind `group_weights` (Exp(1) when alpha = 1).

    Dividing each row by its sum gives the Dirichlet weights. For alpha = 1 (the paper's choice) the
    variates are the float32 exponentials of `fill_negative_exponentials`, negated and widened; for
    other alpha they are numpy's float64 gamma sampler driven by the same keyed stream.

    Returns:
        Variates, shape (B, k, d) (a transposed view of a C-contiguous (B, d, k) array).
    """
    _check(d, k, alpha)
    if alpha == 1.0:
        negated = np.empty((len(keys), d * k), dtype=np.float32)
        fill_negative_exponentials(negated, keys, seed=seed)
        draws = np.negative(negated, dtype=np.float64)
    else:
        draws = np.empty((len(keys), d * k), dtype=np.float64)
        generator = _KeyedGenerator(seed)
        for b, key in enumerate(keys):
            draws[b] = generator.at(key).standard_gamma(float(alpha), size=k * d)
    # The stream fills a (d, k) block per group; returning its transpose keeps the (d, k) block
    # contiguous, which is the layout a batched r @ w.T matmul wants.
    return draws.reshape(len(keys), d, k).transpose(0, 2, 1)


def dirichlet_weights(d: int, k: int, *, alpha: float = 1.0, seed: int = 0, key: Hashable = 0) -> NDArray[np.float64]:
    """K Dirichlet(alpha·1_d) weight vectors for one group, identical in every process.

    Args:
        d: Number of reward dimensions.
        k: Number of draws.
        alpha: Symmetric Dirichlet concentration.
        seed: The run's seed.
        key: The group key (e.g. veRL's uid, or ``(step, task_id)``).

    Returns:
        Weights, shape (k, d), equal to ``group_weights(d, k, [key], alpha=alpha, seed=seed)[0]``.
    """
    return group_weights(d, k, [key], alpha=alpha, seed=seed)[0]


class _KeyedGenerator:
    """One PCG64 generator whose state is re-set from sha256(f"{seed}:{key}") for every key."""

    def __init__(self, seed: int) -> None:
        self._prefix = f"{int(seed)}:"  # the digest input is f"{seed}:{key_string(key)}", as `_digest`'s
        self.bit_generator = np.random.PCG64()
        self.generator = np.random.Generator(self.bit_generator)
        self._state = {"bit_generator": "PCG64", "state": {"state": 0, "inc": 1}, "has_uint32": 0, "uinteger": 0}
        self._inner = self._state["state"]

    def at(self, key: Hashable) -> np.random.Generator:
        """The generator, positioned at the start of `key`'s stream (called once per group: kept lean)."""
        digest = hashlib.sha256((self._prefix + key_string(key)).encode()).digest()
        self._inner["state"] = int.from_bytes(digest[:16], "little")  # type: ignore[index]
        self._inner["inc"] = int.from_bytes(digest[16:], "little") | 1  # type: ignore[index]
        self.bit_generator.state = self._state
        return self.generator


def fill_negative_exponentials(out: NDArray[np.float32], keys: Sequence[Hashable], *, seed: int = 0) -> None:
    """Write -E for E ~ Exp(1), float32, one keyed stream per row, into a caller-owned buffer.

    Row b is a pure function of ``(seed, keys[b])`` and the row length n: the first n 32-bit words
    x of the PCG64 stream keyed by ``sha256(f"{seed}:{key}")`` (each 64-bit output split low word
    first) become U = (x >> 9)·2⁻²³ and then log(1 - U). 1 - U is formed exactly, with bit operations:
    the 23 bits are the mantissa of a float y in [1, 2), and 1 - U = 2 - y in [2⁻²³, 1]. The draws
    stay negated because the objectives that use them are positively homogeneous:
    max_j E·r_j / ΣE = min_j (-E)·r_j / Σ(-E), which saves a pass.

    This is the hot path of VPO (409,600 variates for B=128, K=100, d=32): a Python loop only sets
    each row's generator state, and the transform runs in place over the whole buffer. Rows agree
    bit for bit across processes on machines with the same numpy build and CPU SIMD level
    (numpy's float32 log is SIMD-dispatched; other levels may differ in the last bit).

    Args:
        out: C-contiguous float32 buffer, shape (B, n) with B = len(keys); n = d·K for VPO, read as
            B blocks of shape (d, K).
        keys: One key per row.
        seed: The run's seed.
    """
    if out.ndim != 2 or out.shape[0] != len(keys) or out.dtype != np.float32 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float32 array of shape ({len(keys)}, n), got {out.shape}.")
    n = out.shape[1]
    words = out.view(np.uint32)  # the raw stream is written into the output buffer, then transformed in place
    generator = _KeyedGenerator(seed)
    seek, random_raw = generator.at, generator.bit_generator.random_raw
    n_raw = (n + 1) // 2
    rows = words.view(np.uint64) if n % 2 == 0 else None
    for b, key in enumerate(keys):
        seek(key)
        if rows is not None:
            rows[b] = random_raw(n_raw)
        else:
            words[b] = random_raw(n_raw).view(np.uint32)[:n]
    np.right_shift(words, 9, out=words)
    np.bitwise_or(words, np.uint32(0x3F800000), out=words)  # the bits of y = 1 + U, U = (x >> 9)·2^-23
    np.subtract(np.float32(2.0), out, out=out)  # 1 - U = 2 - y, exact
    np.log(out, out=out)
