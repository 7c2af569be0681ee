"""Group-shared Dirichlet weights, reproducible in any process.

VPO scores every rollout of a group under the same K weight vectors. The rollouts of one group are
scored in different processes (veRL's reward workers), so the draws are a pure function of
``(seed, key)``: the sha256 digest of ``f"{seed}:{key}"`` sets the state of a PCG64 generator, never
Python's salted ``hash()`` or a process-global stream.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Hashable, Sequence

import numpy as np
from numpy.typing import NDArray

__all__ = ["dirichlet_weights", "group_gamma_draws", "group_weights", "key_string", "stable_seed"]

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

    Dividing each row by its sum gives the Dirichlet weights. Objectives that are positively
    homogeneous in w (such as max_j w·r_j) can skip the division over d and divide their result by
    the row sums instead, which is cheaper.

    Returns:
        Variates, shape (B, k, d).
    """
    _check(d, k, alpha)
    n_keys = len(keys)
    draws = np.empty((n_keys, k * d), dtype=np.float64)
    bit_generator = np.random.PCG64()
    generator = np.random.Generator(bit_generator)
    state = {"bit_generator": "PCG64", "state": {"state": 0, "inc": 1}, "has_uint32": 0, "uinteger": 0}
    inner = state["state"]
    for b, key in enumerate(keys):
        digest = _digest(seed, key)
        inner["state"] = int.from_bytes(digest[:16], "little")  # type: ignore[index]
        inner["inc"] = int.from_bytes(digest[16:], "little") | 1  # type: ignore[index]
        bit_generator.state = state
        if alpha == 1.0:
            generator.standard_exponential(out=draws[b])
        else:
            draws[b] = generator.standard_gamma(float(alpha), size=k * d)
    return draws.reshape(n_keys, k, d)


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
