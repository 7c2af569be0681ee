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

__all__ = ["dirichlet_weights", "fill_gamma_draws", "group_gamma_draws", "group_weights", "key_string", "stable_seed"]

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
        Variates, shape (B, k, d) (a transposed view of a C-contiguous (B, d, k) array).
    """
    _check(d, k, alpha)
    draws = np.empty((len(keys), d * k), dtype=np.float64)
    fill_gamma_draws(draws, d, k, keys, alpha=alpha, seed=seed)
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


def fill_gamma_draws(
    out: NDArray[np.float64], d: int, k: int, keys: Sequence[Hashable], *, alpha: float = 1.0, seed: int = 0
) -> None:
    """Write the variates of `group_gamma_draws` into a caller-owned buffer (no allocation).

    Args:
        out: C-contiguous float64 buffer, shape (B, d·k); row b holds group b's (d, k) block.
        d: Number of reward dimensions.
        k: Number of draws per group.
        keys: One key per group, length B.
        alpha: Dirichlet concentration.
        seed: The run's seed.
    """
    _check(d, k, alpha)
    if out.shape != (len(keys), d * k) or out.dtype != np.float64 or not out.flags.c_contiguous:
        raise ValueError(f"out must be a C-contiguous float64 array of shape ({len(keys)}, {d * k}), got {out.shape}.")
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
            generator.standard_exponential(out=out[b])
        else:
            out[b] = generator.standard_gamma(float(alpha), size=k * d)
