"""Flat batches (veRL's layout): N rollouts in one array with a group id each, mapped onto (B, G) groups.

`group_layout` gathers a flat batch into the (B, G) grid every normaliser takes and scatters the
advantages back; `zscore_by_index` is the group z-score straight on the flat batch (groups may differ
in size), with the same rule as `vpo_core.normalizers.group_zscore` (`zscore_rule`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core._checks import Std, check_eps, check_std
from vpo_core.normalizers import zscore_rule

__all__ = ["GroupLayout", "group_layout", "zscore_by_index"]


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
        index: Group id per rollout, shape (N,) (veRL's ``uid`` object array), N >= 1.

    Returns:
        The layout.

    Raises:
        ValueError: If the batch is empty or groups have different sizes.
    """
    ids = np.asarray(index, dtype=object).reshape(-1)
    if ids.size == 0:
        raise ValueError("the batch must hold at least one rollout, got an empty index.")
    _, first, inverse, counts = np.unique(ids.astype(str), return_index=True, return_inverse=True, return_counts=True)
    if np.any(counts != counts[0]):
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

    The same rule as `vpo_core.normalizers.group_zscore` on the (B, G) grid, group by group: only
    the per-group reductions differ (``np.bincount`` here).

    Args:
        scores: Rollout scalars, shape (N,), N >= 1.
        index: Group id per rollout, shape (N,).
        std: z-score convention (see `group_zscore`).
        eps: Added to the std; a finite number >= 0.

    Returns:
        Advantages, shape (N,).
    """
    check_std(std)
    eps = check_eps(eps)
    x = np.asarray(scores, dtype=np.float64).reshape(-1)
    ids = np.asarray(index, dtype=object).reshape(-1)
    if ids.shape != x.shape:
        raise ValueError(f"index must have one id per score ({x.shape[0]}), got {ids.shape[0]}.")
    if x.size == 0:
        raise ValueError("the batch must hold at least one rollout, got empty scores.")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores contain NaN or inf.")
    _, inverse, counts = np.unique(ids.astype(str), return_inverse=True, return_counts=True)
    n_groups = counts.size
    high, low = np.full(n_groups, -np.inf), np.full(n_groups, np.inf)
    np.maximum.at(high, inverse, x)
    np.minimum.at(low, inverse, x)
    scale = np.maximum(np.abs(high), np.abs(low))
    scale = np.where(scale == 0.0, 1.0, scale)[inverse]
    unit = x / scale
    centred = unit - (np.bincount(inverse, weights=unit) / counts)[inverse]
    sum_sq = np.bincount(inverse, weights=centred * centred)[inverse]
    constant = (high == low)[inverse]
    return zscore_rule(x, centred, sum_sq, counts[inverse], constant, scale, std=std, eps=eps)
