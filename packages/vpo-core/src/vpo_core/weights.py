"""Group-shared Dirichlet weights, reproducible in any process.

VPO scores every rollout of a group under the same K weight vectors. The rollouts of one group are
scored in different processes (veRL's reward workers), so the draws are a pure function of
``(seed, key)``: the sha256 digest of ``f"{seed}:{key}"`` sets the state of the numpy Generator
(PCG64) that draws that group's weights, never Python's salted ``hash()`` or a process-global
stream. A Dirichlet(alpha·1_d) vector is d Gamma(alpha) variates divided by their sum; numpy's
float64 samplers draw them (`numpy.random.Generator.standard_gamma`, which for alpha = 1 returns
the numbers of `numpy.random.Generator.standard_exponential`). One float64 sampler serves every
alpha (the draws' history is in the CHANGELOG).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "KeyedWeights",
    "dirichlet_weights",
    "group_gamma_draws",
    "group_weights",
    "key_string",
    "keyed_generator",
    "stable_seed",
]


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


class KeyedWeights:
    """Dirichlet weights keyed by ``(seed, key)``: the same numbers for a key in every process.

    One numpy Generator (PCG64) serves every key: for each key its state is set from the sha256
    digest of ``f"{seed}:{key}"`` (the digest's 256 bits are the 128-bit state and the 128-bit
    increment, made odd). Setting the state through `numpy.random.PCG64.state` costs ~2 µs; a
    freshly seeded Generator per group would cost ~7 µs (its SeedSequence), a sixth of VPO's time.

    Args:
        seed: The run's seed.
    """

    def __init__(self, seed: int = 0) -> None:
        self._prefix = f"{int(seed)}:"
        self._bit_generator = np.random.PCG64()
        self._generator = np.random.Generator(self._bit_generator)

    def generator(self, key: Hashable) -> np.random.Generator:
        """The Generator, positioned at the start of `key`'s stream (valid until the next call)."""
        digest = hashlib.sha256((self._prefix + key_string(key)).encode()).digest()
        self._bit_generator.state = {
            "bit_generator": "PCG64",
            "state": {"state": int.from_bytes(digest[:16], "little"), "inc": int.from_bytes(digest[16:], "little") | 1},
            "has_uint32": 0,
            "uinteger": 0,
        }
        return self._generator

    def gamma_draws(self, d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0) -> NDArray[np.float64]:
        """K·d Gamma(alpha) variates per key: key b's Generator fills a (d, K) block in C order.

        For alpha = 1 (the paper's choice) numpy's `standard_exponential` is used: it returns exactly
        the numbers ``standard_gamma(1.0)`` would, faster.

        Returns:
            Variates, shape (B, K, d): a transposed view of a C-contiguous (B, d, K) array, the layout
            a batched ``r @ w.T`` wants.
        """
        _check(d, k, alpha)
        draws = np.empty((len(keys), d, k), dtype=np.float64)
        for b, key in enumerate(keys):
            rng = self.generator(key)
            if alpha == 1.0:
                rng.standard_exponential(out=draws[b])
            else:
                draws[b] = rng.standard_gamma(float(alpha), size=(d, k))
        return draws.transpose(0, 2, 1)

    def weights(self, d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0) -> NDArray[np.float64]:
        """K Dirichlet(alpha·1_d) weight vectors per key: the gamma draws divided by their sums.

        Returns:
            Weights, shape (B, K, d) (a transposed view of a C-contiguous (B, d, K) array); every
            row is non-negative and sums to 1.
        """
        draws = self.gamma_draws(d, k, keys, alpha=alpha)
        blocks = draws.transpose(0, 2, 1)  # the contiguous (B, d, K) blocks: the sum over d runs along rows
        totals = blocks.sum(axis=1, keepdims=True)  # (B, 1, K)
        degenerate = totals <= 0.0  # only possible for tiny alpha: every gamma variate of a draw underflowed
        if np.any(degenerate):
            blocks[...] = np.where(degenerate, 1.0, blocks)
            totals = np.where(degenerate, float(d), totals)
        blocks /= totals
        return draws


def keyed_generator(seed: int, key: Hashable) -> np.random.Generator:
    """A numpy Generator at the start of the stream of ``(seed, key)``: the same numbers in every process."""
    return KeyedWeights(seed).generator(key)


def group_gamma_draws(
    d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> NDArray[np.float64]:
    """The Gamma(alpha) variates behind `group_weights` (`KeyedWeights.gamma_draws`), shape (B, k, d)."""
    return KeyedWeights(seed).gamma_draws(d, k, keys, alpha=alpha)


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
        Weights, shape (B, k, d) (a transposed view of a C-contiguous (B, d, k) array); every row
        is non-negative and sums to 1. Row b depends only on ``(seed, keys[b], d, k, alpha)``.
    """
    return KeyedWeights(seed).weights(d, k, keys, alpha=alpha)


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
