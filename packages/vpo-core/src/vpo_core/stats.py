"""Confidence intervals for evaluation metrics over seeds and tasks (the two sources of noise).

A metric of one training run is an average over the test tasks of a per-task value (best@k of the
task's pool, its mean w*-score, ...). Runs differ by their seed (warm start, rollouts, weight draws)
and the test set is a sample of tasks, so an interval must resample both. `bootstrap_ci` does a
two-level (seed, task) percentile bootstrap: each replicate draws seeds with replacement and, shared
by all drawn seeds, tasks with replacement (the tasks are the same mazes for every seed, so they are
resampled jointly, keeping the per-task pairing). `paired_difference_ci` applies it to the per-(seed,
task) difference of two methods run with the same seeds, which is the comparison the paper's tables
make (methods share one warm start per seed).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Interval", "bootstrap_ci", "paired_difference_ci"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with a percentile-bootstrap interval.

    Attributes:
        estimate: The mean over seeds and tasks of the data.
        low: Lower end of the interval.
        high: Upper end of the interval.
        level: Coverage the interval is built for (0.95 by default).
        seeds: Number of seeds in the data.
        tasks: Number of tasks in the data.
    """

    estimate: float
    low: float
    high: float
    level: float
    seeds: int
    tasks: int

    def excludes_zero(self) -> bool:
        """Whether the interval lies entirely above or below 0 (for differences)."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"


def _per_seed_task(values: ArrayLike, what: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"{what} must have shape (seeds, tasks) with at least one of each, got {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be finite; drop or fix the non-finite per-task values first.")
    return array


def bootstrap_ci(
    values: ArrayLike,
    *,
    level: float = 0.95,
    replicates: int = 4000,
    seed: int = 0,
) -> Interval:
    """Two-level percentile bootstrap of the mean of per-(seed, task) values.

    Args:
        values: Per-task values of each run, shape (S seeds, T tasks) (shape (T,) is one seed).
        level: Coverage of the interval, in (0, 1).
        replicates: Number of bootstrap replicates.
        seed: Seed of the resampling (the interval is deterministic given it).

    Returns:
        The mean and its interval. With one seed only tasks are resampled, so the interval then
        ignores seed-to-seed variation: report the number of seeds beside it.

    Raises:
        ValueError: If the shape, values, level or replicate count is invalid.
    """
    data = _per_seed_task(values, "values")
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    if not isinstance(replicates, int) or replicates < 100:
        raise ValueError(f"replicates must be an int >= 100, got {replicates!r}.")
    n_seeds, n_tasks = data.shape
    rng = np.random.default_rng([seed, n_seeds, n_tasks])
    seed_draws = rng.integers(0, n_seeds, size=(replicates, n_seeds))
    task_draws = rng.integers(0, n_tasks, size=(replicates, n_tasks))
    # mean over the drawn (seed, task) cells = mean over drawn seeds of the per-seed task-means of the draw
    per_seed_sums = np.zeros((replicates, n_seeds))
    for s in range(n_seeds):  # S is small (a handful of seeds); T and the replicates are vectorised
        per_seed_sums[:, s] = data[s][task_draws].sum(axis=1)
    drawn = np.take_along_axis(per_seed_sums, seed_draws, axis=1)
    means = drawn.sum(axis=1) / (n_seeds * n_tasks)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return Interval(float(data.mean()), float(low), float(high), level, n_seeds, n_tasks)


def paired_difference_ci(
    a: ArrayLike, b: ArrayLike, *, level: float = 0.95, replicates: int = 4000, seed: int = 0
) -> Interval:
    """Interval of mean(a) − mean(b) for two methods evaluated on the same seeds and tasks.

    Args:
        a: Per-task values of method A, shape (S, T).
        b: Per-task values of method B, the same seeds (in the same order) and tasks, shape (S, T).
        level: Coverage of the interval.
        replicates: Bootstrap replicates.
        seed: Seed of the resampling.

    Returns:
        The mean difference and its interval.

    Raises:
        ValueError: If the shapes differ (pair the runs by seed first).
    """
    left, right = _per_seed_task(a, "a"), _per_seed_task(b, "b")
    if left.shape != right.shape:
        raise ValueError(
            f"paired differences need the same (seeds, tasks) for both methods, got {left.shape} and {right.shape}; "
            "keep only the seeds both methods ran."
        )
    return bootstrap_ci(left - right, level=level, replicates=replicates, seed=seed)
