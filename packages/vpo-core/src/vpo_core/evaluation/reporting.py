"""What makes two evaluations comparable: standard errors, a results schema version and a settings digest.

- `standard_errors`: the bootstrap standard error of every summary metric of `pool_summary`, over
  tasks: the T tasks are resampled with replacement `BOOTSTRAP_RESAMPLES` times (a fixed seed, so
  the same tasks give the same resamples and two evaluations on one split are resampled alike), the
  metric is recomputed on each resample, and its standard error is the standard deviation of those
  values (``ddof=1``). It measures how much the number depends on which tasks were drawn, the
  uncertainty lm-evaluation-harness reports beside its metrics; the completions are not resampled.
- `settings_digest`: the sha256 of the canonical JSON (sorted keys, no spaces, ASCII, strict
  numbers) of the settings that define a run; the server's address (``base_url``) is left out, as
  the same model served elsewhere is the same run.
- `RESULTS_SCHEMA_VERSION`: the version of the evaluation command's ``results.json`` layout
  (`vpo_engines.evaluate`; the schema is documented in docs/evaluation.md);

Example:
    >>> settings_digest({"env": "maze-v1", "temperature": 0.7, "base_url": "http://a/v1"}) == settings_digest(
    ...     {"temperature": 0.7, "env": "maze-v1", "base_url": "http://b/v1"})
    True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vpo_core import strict_json
from vpo_core.evaluation.metrics import REACH_SPLIT
from vpo_core.metrics import collinearity

__all__ = [
    "BOOTSTRAP_RESAMPLES",
    "BOOTSTRAP_SEED",
    "NOT_DEFINING",
    "RESULTS_SCHEMA_VERSION",
    "bootstrap_counts",
    "settings_digest",
    "standard_errors",
]

RESULTS_SCHEMA_VERSION = 2
"""Version of the evaluation command's results.json layout.

1: vpo-eval's one served model at the top level; 2: one schema for every backend, a row per evaluated model
(and goal conditioning) under ``rows``, each with its metrics, their standard errors, settings and digest.
"""

BOOTSTRAP_RESAMPLES = 1000
"""Resamples of the tasks behind each standard error (the Monte Carlo error of a standard error is ~2 % at 1000)."""

BOOTSTRAP_SEED = 0
"""Seed of the task resamples (fixed: the same tasks are resampled alike in every evaluation)."""

NOT_DEFINING = ("base_url",)
"""Settings left out of the digest: where the model was served does not change the run."""

_CONSTANT = 1e-12
"""Relative variance below which a resampled dimension counts as constant (the moments' rounding)."""


def settings_digest(settings: Mapping[str, Any]) -> str:
    """The sha256 (hex) of the canonical JSON of `settings` without `NOT_DEFINING`.

    Args:
        settings: The run's settings (JSON values; numpy scalars and non-finite floats as
            `vpo_core.strict_json` writes them).

    Returns:
        64 hex digits; equal settings (key order aside) give equal digests.
    """
    defining = {str(k): v for k, v in settings.items() if k not in NOT_DEFINING}
    canonical = json.dumps(
        strict_json.to_strict(defining), sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def bootstrap_counts(
    n_tasks: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED
) -> NDArray[np.int64]:
    """How often each task is drawn in each resample (T draws with replacement).

    Args:
        n_tasks: T.
        resamples: B.
        seed: Seed of the draws.

    Returns:
        Counts, shape (B, T); each row sums to T.
    """
    if n_tasks < 1 or resamples < 2:
        raise ValueError(f"a bootstrap needs a task and two resamples, got {n_tasks} tasks, {resamples} resamples.")
    rng = np.random.default_rng(seed)
    return rng.multinomial(n_tasks, np.full(n_tasks, 1.0 / n_tasks), size=resamples).astype(np.int64)


def _spread(values: NDArray[np.float64]) -> float:
    """Standard deviation (ddof=1) of the finite resample values; NaN with fewer than two."""
    finite = values[np.isfinite(values)]
    return float(np.std(finite, ddof=1)) if len(finite) >= 2 else float("nan")


def standard_errors(
    env: Any,
    tasks: Sequence[Any],
    pools: Sequence[Any],
    per_task: Sequence[Mapping[str, float]],
    metrics: Mapping[str, float],
    *,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> dict[str, float]:
    """The bootstrap standard error over tasks of each metric of `pool_summary` (see the module docstring).

    A mean over tasks (``best@k``, ``pass@k``, ``mean_w_star``, ``diversity@k``...) is recomputed on
    each resample from the per-task values; ``best@k|reached`` / ``|unreached`` as the mean over the
    resample's reached / unreached tasks (resamples without such a task are left out); ``collinearity``
    from the resampled tasks' candidates (or the mean of their per-task ρ̄ where dimensions differ).

    Args:
        env: The environment (`spec_for`).
        tasks: The T tasks.
        pools: One pool per task, shape (n_t, m, d'_t).
        per_task: Each task's metrics (`task_pool_metrics`, plus any per-task extras averaged in `metrics`).
        metrics: The summary (`pool_summary(..., per_task=per_task)`).
        resamples: B.
        seed: Seed of the resamples.

    Returns:
        Metric name -> standard error, for every key of `metrics` (NaN where it is undefined, e.g.
        a metric that is NaN itself).

    Raises:
        ValueError: If tasks, pools and per-task rows differ in number.
    """
    if not (len(tasks) == len(pools) == len(per_task)) or not tasks:
        raise ValueError(f"need one pool and one row per task, got {len(tasks)}, {len(pools)}, {len(per_task)}.")
    counts = bootstrap_counts(len(tasks), resamples, seed).astype(np.float64)  # (B, T)
    out: dict[str, float] = {}
    plain = [key for key in metrics if all(key in row for row in per_task)]
    if plain:
        values = np.array([[row[key] for key in plain] for row in per_task], dtype=np.float64)  # (T, M)
        means = counts @ values / len(tasks)  # (B, M)
        out.update({key: _spread(means[:, j]) for j, key in enumerate(plain)})
    reached = np.array([row.get("no_valid", 1.0) == 0.0 for row in per_task], dtype=np.float64)
    for key in metrics:
        if key in out:
            continue
        base, _, part = str(key).rpartition("|")
        if part in REACH_SPLIT and all(base in row for row in per_task):
            mask = reached if part == REACH_SPLIT[0] else 1.0 - reached
            values = np.array([row[base] for row in per_task], dtype=np.float64)
            with np.errstate(invalid="ignore", divide="ignore"):
                out[key] = _spread((counts @ (values * mask)) / (counts @ mask))
        elif key == "collinearity":
            out[key] = _collinearity_spread(env, tasks, pools, counts)
        else:
            out[key] = float("nan")
    return out


def _collinearity_spread(env: Any, tasks: Sequence[Any], pools: Sequence[Any], counts: NDArray[np.float64]) -> float:
    """Standard error of `pool_summary`'s collinearity over task resamples (`counts`, shape (B, T))."""
    specs = [env.spec_for(t) for t in tasks]
    own = [np.asarray(p, dtype=np.float64)[..., : s.dim].reshape(-1, s.dim) for p, s in zip(pools, specs, strict=True)]
    if len({s.names for s in specs}) > 1:  # per-task ρ̄, averaged where defined
        rhos = np.array([collinearity(x) for x in own])
        defined = np.isfinite(rhos)
        with np.errstate(invalid="ignore", divide="ignore"):
            return _spread((counts @ np.where(defined, rhos, 0.0)) / (counts @ defined.astype(np.float64)))
    # ρ̄ of the resampled candidates from per-task moments: each task's count, sum and cross-products
    n = np.array([len(x) for x in own], dtype=np.float64)  # (T,)
    s1 = np.stack([x.sum(axis=0) for x in own])  # (T, d)
    s2 = np.stack([x.T @ x for x in own])  # (T, d, d)
    total = counts @ n  # (B,)
    mean = (counts @ s1) / total[:, None]  # (B, d)
    cov = np.einsum("bt,tij->bij", counts, s2) / total[:, None, None] - mean[:, :, None] * mean[:, None, :]
    values = np.full(len(counts), np.nan)
    for b in range(len(counts)):
        var = np.diagonal(cov[b])
        kept = var > _CONSTANT * np.maximum(1.0, mean[b] ** 2)  # collinearity drops dimensions that do not vary
        if kept.sum() < 2:
            continue
        sub = cov[b][np.ix_(kept, kept)]
        corr = sub / np.sqrt(np.outer(var[kept], var[kept]))
        values[b] = corr[~np.eye(len(sub), dtype=bool)].mean()
    return _spread(values)
