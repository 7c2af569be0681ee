"""Confidence intervals for evaluation metrics over seeds and tasks (the two sources of noise).

A metric of one training run is an average over the test tasks of a per-task value (best@k of the
task's pool, its mean w*-score, ...). Runs differ by their seed (warm start, rollouts, weight draws)
and the test set is a sample of tasks. The data of an arm is a table D[s, t] (seeds × tasks), and
the estimand is the mean over both populations (the expected metric of a fresh seed on a fresh task).
Its model is crossed random effects,

    D[s, t] = mu + a_s + b_t + e_st,   Var a = σ²_seed, Var b = σ²_task, Var e = σ²_resid.

The grand mean's error is U + b̄ with U = ā + ē (what moves the per-seed means m_s apart) and b̄ the
mean task effect, shared by every seed. With S = 2-5 seeds, Var U is estimated from S - 1 degrees
of freedom only, which is what an interval must carry.

`seed_interval` (S >= 2) is a seed-level t-interval with a shared-task term:

- seed part: Var̂(m_s)/S (ddof = 1) estimates Var U = (σ²_seed + σ²_resid/T)/S with exactly S - 1
  degrees of freedom under normal effects, independent of the grand mean; its half-width is
  h_seed = t_{(1+level)/2, S-1} · sqrt(Var̂(m_s)/S), the t-interval over per-seed means;
- task part: σ²_task/T, estimated by (MS_task - MS_resid)/(S·T) from the two-way ANOVA mean squares
  (clipped at 0; T - 1 degrees of freedom), half-width h_task = t_{(1+level)/2, T-1} · sqrt(that).
  A t-interval over per-seed means alone leaves it out (b̄ is the same in every m_s) and covered
  only 79 % with S = 3 when the tasks dominate;
- the interval is mean ± sqrt(h_seed² + h_task²). For two normal parts this is exact; with the t
  part it is conservative: simulated coverage of the 95 % interval was 0.94-0.99 at S = 2, 3 and 5
  over the variance mixes of the maze miniature-v2 comparisons (tests/test_stats.py checks >= 0.93
  at S = 3). Satterthwaite's df for the sum was tried first and covered only 0.92 with S = 3 where
  seeds dominate (a low seed-variance draw also raises the df and shrinks the quantile).

Why not the two-level percentile bootstrap this module had before (``bootstrap_ci``, issue 38):
resampling S = 2-3 seeds with replacement treats the seeds' empirical spread as the population's and
ignores that it is estimated from 1-2 degrees of freedom. With the variance components of the
miniature-v2 comparisons its 95 % interval covered 0.68-0.85 with 2 seeds and 0.77-0.89 with 3 where
seeds matter (0.81 for the random start's VPO − GRPO best@30 with 3 seeds). The t quantile carries
that uncertainty: with S = 2 it is 12.7 and with S = 3 it is 4.3, so 2-3 seeds give wide intervals,
which is what they can honestly support.

With S = 1 there is no seed-level interval. `seed_interval` then returns a percentile bootstrap over
tasks and marks it ``seed_level=False``: it says how much the test tasks move the mean, not how
much another seed would, and reports should say "one seed: task-level only".

`paired_seed_interval` applies `seed_interval` to the per-(seed, task) difference of two methods run
with the same seeds on the same tasks (the comparison the paper's tables make: methods share one warm
start per seed). `subset_seed_interval` is the mean over a subset of the cells (the tasks a method
reaches), by linearising the ratio.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = ["Interval", "paired_seed_interval", "seed_interval", "student_t_quantile", "subset_seed_interval"]


@dataclass(frozen=True)
class Interval:
    """A point estimate with its interval.

    Attributes:
        estimate: The mean over seeds and tasks of the data.
        low: Lower end of the interval.
        high: Upper end of the interval.
        level: Coverage the interval is built for (0.95 by default).
        seeds: Number of seeds in the data.
        tasks: Number of tasks in the data.
        seed_level: True for the seed-level t-interval (S >= 2); False with one seed, where the
            interval is a bootstrap over tasks only ("one seed: task-level only").
        df: Degrees of freedom of the seed part's t quantile, S - 1 (None for the task bootstrap).
    """

    estimate: float
    low: float
    high: float
    level: float
    seeds: int
    tasks: int
    seed_level: bool
    df: float | None = None

    def excludes_zero(self) -> bool:
        """Whether the interval lies entirely above or below 0 (for differences)."""
        return self.low > 0 or self.high < 0

    def as_dict(self) -> dict[str, float | int | bool | None]:
        """The JSON form: ``mean``, ``low``, ``high``, ``seeds``, ``tasks``, ``seed_level``, ``df``."""
        return {
            "mean": self.estimate,
            "low": self.low,
            "high": self.high,
            "seeds": self.seeds,
            "tasks": self.tasks,
            "seed_level": self.seed_level,
            "df": self.df,
        }

    def __str__(self) -> str:
        text = f"{self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}]"
        return text if self.seed_level else text + " (one seed: task-level only)"


# ----------------------------------------------------------------------------- t quantile
def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz's method)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 100_000):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((a - 1.0 + m2) * (a + m2)),
            -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1.0 + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            return h
    raise ArithmeticError(f"incomplete beta did not converge for a={a}, b={b}, x={x}.")


def _regularized_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularised incomplete beta function."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_continued_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_continued_fraction(b, a, 1.0 - x) / b


def _t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for t >= 0, T ~ Student-t(df)."""
    return 0.5 * _regularized_beta(df / 2.0, 0.5, df / (df + t * t))


@functools.lru_cache(maxsize=1024)
def student_t_quantile(p: float, df: float) -> float:
    """The p-quantile of Student's t distribution with `df` (real, > 0) degrees of freedom.

    Newton steps on the upper tail (the CDF is concave above 0, so the steps approach the root
    monotonically after the first), kept inside a bracket; df = inf gives the normal quantile.

    Args:
        p: Probability, in (0, 1).
        df: Degrees of freedom, > 0 (``math.inf`` for the normal distribution).

    Returns:
        The quantile t with P(T <= t) = p.

    Raises:
        ValueError: If p or df is out of range.
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p!r}.")
    if not df > 0:  # also refuses NaN
        raise ValueError(f"df (degrees of freedom) must be > 0, got {df!r}.")
    if p < 0.5:
        return -student_t_quantile(1.0 - p, df)
    if p == 0.5:
        return 0.0
    z = NormalDist().inv_cdf(p)
    if math.isinf(df) or df > 1e7:
        return z
    tail = 1.0 - p
    log_density_scale = math.lgamma((df + 1) / 2) - math.lgamma(df / 2) - 0.5 * math.log(df * math.pi)
    low, high = 0.0, math.inf
    t = z + (z**3 + z) / (4 * df)  # Cornish-Fisher start
    for _ in range(200):
        excess = _t_upper_tail(t, df) - tail  # > 0: t is below the quantile
        if excess > 0:
            low = t
        else:
            high = t
        density = math.exp(log_density_scale - (df + 1) / 2 * math.log1p(t * t / df))
        step = excess / density
        candidate = t + step
        if not low < candidate < high:  # Newton left the bracket: bisect (doubling while unbounded)
            candidate = 2 * low + 1.0 if math.isinf(high) else (low + high) / 2
        if abs(candidate - t) <= 1e-13 * max(1.0, abs(t)):
            return candidate
        t = candidate
    return t


# ------------------------------------------------------------------------------- intervals
def _per_seed_task(values: ArrayLike, what: str) -> NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2 or array.shape[0] < 1 or array.shape[1] < 1:
        raise ValueError(f"{what} must have shape (seeds, tasks) with at least one of each, got {array.shape}.")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} must be finite; drop or fix the non-finite per-task values first.")
    return array


def _check_options(level: float, replicates: int) -> None:
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level!r}.")
    if isinstance(replicates, bool) or not isinstance(replicates, int) or replicates < 100:
        raise ValueError(f"replicates must be an int >= 100, got {replicates!r}.")


def _t_half_width(data: NDArray[np.float64], level: float) -> float:
    """Half-width of the seed-level t-interval with a shared-task term of the grand mean of `data` (S >= 2)."""
    n_seeds, n_tasks = data.shape
    seed_means = data.mean(axis=1)
    seed_part = student_t_quantile((1 + level) / 2, n_seeds - 1) ** 2 * float(np.var(seed_means, ddof=1)) / n_seeds
    task_part = 0.0
    if n_tasks > 1:
        task_means = data.mean(axis=0)
        residual = data - seed_means[:, None] - task_means[None, :] + data.mean()
        ms_task = n_seeds * float(np.var(task_means, ddof=1))
        ms_residual = float((residual**2).sum()) / ((n_seeds - 1) * (n_tasks - 1))
        task_variance = max(ms_task - ms_residual, 0.0) / (n_seeds * n_tasks)  # estimates σ²_task / T
        task_part = student_t_quantile((1 + level) / 2, n_tasks - 1) ** 2 * task_variance
    return math.sqrt(seed_part + task_part)


def _task_bootstrap(row: NDArray[np.float64], level: float, replicates: int, seed: int) -> tuple[float, float]:
    """Percentile bootstrap over tasks of the mean of one seed's per-task values, shape (T,)."""
    rng = np.random.default_rng([seed, 1, row.size])
    means = row[rng.integers(0, row.size, size=(replicates, row.size))].mean(axis=1)
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


def seed_interval(
    values: ArrayLike,
    *,
    level: float = 0.95,
    replicates: int = 4000,
    seed: int = 0,
) -> Interval:
    """Interval of the mean of per-(seed, task) values: seed-level t with S >= 2, task bootstrap with S = 1.

    Args:
        values: Per-task values of each run, shape (S seeds, T tasks) (shape (T,) is one seed). A
            per-run value without tasks (ρ̄ of a whole pool) is shape (S, 1).
        level: Coverage of the interval, in (0, 1).
        replicates: Bootstrap replicates of the one-seed task bootstrap (unused with S >= 2).
        seed: Seed of that bootstrap's resampling (the interval is deterministic given it).

    Returns:
        The mean and its interval (see the module docstring). With S = 1 the interval is the task
        bootstrap and ``seed_level`` is False.

    Raises:
        ValueError: If the shape, values, level or replicate count is invalid.
    """
    data = _per_seed_task(values, "values")
    _check_options(level, replicates)
    n_seeds, n_tasks = data.shape
    estimate = float(data.mean())
    if n_seeds == 1:
        low, high = _task_bootstrap(data[0], level, replicates, seed)
        return Interval(estimate, low, high, level, 1, n_tasks, seed_level=False)
    half = _t_half_width(data, level)
    return Interval(
        estimate, estimate - half, estimate + half, level, n_seeds, n_tasks, seed_level=True, df=float(n_seeds - 1)
    )


def paired_seed_interval(
    a: ArrayLike, b: ArrayLike, *, level: float = 0.95, replicates: int = 4000, seed: int = 0
) -> Interval:
    """Interval of mean(a) − mean(b) for two methods evaluated on the same seeds and tasks.

    Args:
        a: Per-task values of method A, shape (S, T).
        b: Per-task values of method B, the same seeds (in the same order) and tasks, shape (S, T).
        level: Coverage of the interval.
        replicates: Replicates of the one-seed task bootstrap.
        seed: Seed of that bootstrap.

    Returns:
        The mean difference and its `seed_interval`.

    Raises:
        ValueError: If the shapes differ (pair the runs by seed first).
    """
    left, right = _per_seed_task(a, "a"), _per_seed_task(b, "b")
    if left.shape != right.shape:
        raise ValueError(
            f"paired differences need the same (seeds, tasks) for both methods, got {left.shape} and {right.shape}; "
            "keep only the seeds both methods ran."
        )
    return seed_interval(left - right, level=level, replicates=replicates, seed=seed)


def subset_seed_interval(
    values: ArrayLike, mask: ArrayLike, *, level: float = 0.95, replicates: int = 4000, seed: int = 0
) -> Interval:
    """Interval of the mean of `values` over the (seed, task) cells where `mask` holds.

    The estimate is the ratio R = Σ v·m / Σ m (pooled over seeds). Its interval is that of the mean
    of the linearised values z = (v − R)·m / mean(m) (the delta method for a ratio), shifted by R:
    the same seed-level t-interval (or one-seed task bootstrap) as `seed_interval`. It is
    approximate when few cells are in the subset.

    Args:
        values: Per-(seed, task) values, shape (S, T) (or (T,)).
        mask: Which cells belong to the subset, the same shape (booleans or 0/1).
        level: Coverage of the interval.
        replicates: Replicates of the one-seed task bootstrap.
        seed: Seed of that bootstrap.

    Returns:
        The subset mean and its interval; ``tasks`` is T (all tasks, the subset varies by seed).

    Raises:
        ValueError: If the shapes differ, the mask is not boolean, or it selects no cell.
    """
    data = _per_seed_task(values, "values")
    selected = np.asarray(mask)
    if selected.ndim == 1:
        selected = selected[None, :]
    if selected.shape != data.shape:
        raise ValueError(f"mask must have the shape of values {data.shape}, got {selected.shape}.")
    if not np.all((selected == 0) | (selected == 1)):
        raise ValueError("mask must hold booleans (or 0/1): whether each (seed, task) cell is in the subset.")
    weights = selected.astype(np.float64)
    if not weights.any():
        raise ValueError("mask selects no (seed, task) cell: the subset mean is undefined.")
    ratio = float((data * weights).sum() / weights.sum())
    linear = (data - ratio) * weights / weights.mean()
    spread = seed_interval(linear, level=level, replicates=replicates, seed=seed)
    return Interval(
        ratio,
        ratio + spread.low - spread.estimate,
        ratio + spread.high - spread.estimate,
        level,
        spread.seeds,
        spread.tasks,
        spread.seed_level,
        spread.df,
    )
