"""The paper's metrics of candidate pools: one k-loop for the evaluation app, the local engine and the env CLIs.

A pool is what a policy wrote for one task: n completions of m candidates each, as vector rewards of
shape (n, m, d). Single-answer pools (m = 1) use the iid order-statistic estimator; multi-answer
pools use the paper's chain protocol (⌈k/m⌉ chains in generation order; see `vpo_core.metrics`).

Per task (`task_pool_metrics`), for every k in `KS` that the pool allows:

- ``best@k``: best w*-score among k candidates;
- ``pass@k``: whether one of k candidates solves the task (`TextEnv.is_success`), the same estimator
  applied to success indicators (Chen et al.'s unbiased pass@k for iid samples);
- ``E_w[best@k]``: best@k of w·r averaged over w ~ Dir(1), on 256 scrambled Sobol points
  (`vpo_core.metrics.evaluation_weights`; within ~0.002 of the exact integral, where the 100 iid
  draws used before sat ~0.015 below it);
- ``best@k[<dim>]``: best@k of one reward dimension, for each name in ``env.profile.report_dims``
  (e.g. an answer-F1 dimension an env names there);
- ``chain_pass@k`` (k <= n): chain-level pass@k, the chance that one of k completions (chains of m
  candidates, drawn without replacement) holds a success, `vpo_core.metrics.chain_pass_at_k`;
- ``solution_pass@k`` (k <= n·m): solution-level pass@k, the chance that one of k candidates drawn
  from all n·m without regard to chains succeeds, `vpo_core.metrics.solution_pass_at_k`
  (in single mode, m = 1, both equal ``pass@k``);

and ``mean_w_star``, ``mean_<dim>``, ``diversity`` (mean pairwise L1 distance of the pool's reward
vectors) and ``pareto_fraction`` (the fraction of the pool's n·m candidates that no other candidate
of the pool dominates: the pool's own Pareto front, `vpo_core.metrics.pareto_fraction`). `pool_summary` averages them over tasks and adds the collinearity ρ̄ of all candidates.

The paper's diversity counts failed candidates, whose reward is the zero vector (an unparseable
answer, a maze route that never reaches E), so below full validity it mostly measures the
valid/failed mix. Beside it, per task:

- ``valid``: the share of candidates whose reward vector is not all zeros (maze: routes reaching E);
- ``diversity_valid``: the diversity among the valid candidates only (0 with fewer than two);
- ``distinct_valid``: the number of distinct valid reward vectors in the pool;
- ``pareto_covered``: the share of the task's Pareto points found in the pool, for envs that can
  enumerate them (`TextEnv.pareto_front`; maze's exact solver). Pools are saved in float32 and
  fronts are float64, so a point counts as found when every coordinate agrees within
  `PARETO_TOLERANCE` (relative, at least 1): 0.4 stored as float32 is 0.4 + 6e-9;
- ``no_valid``: 1 when no candidate of the pool is valid (the task is not reached), else 0; its
  mean over tasks is the share of tasks a method never reaches.

Where each method fails: `pool_summary` also splits best@k over the tasks the pool reaches (some
valid candidate) and the ones it does not, ``best@k|reached`` and ``best@k|unreached`` (means over
those tasks; left out when there are none). `split_by_reach` splits any per-task values, e.g. the
per-task difference of two methods over the tasks the second one reaches, into two parts whose
sum is the whole mean.

Rows of a pool may be zero-padded beyond the task's own dimension count (``spec_for(task).dim``, as
LiveCodeBench's per-problem test counts are saved in one array); the padding is ignored.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from vpo_core.errors import ConfigError
from vpo_core.metrics import (
    EXPECTED_WEIGHTS,
    best_at_k,
    best_at_k_chains,
    best_at_k_curve,
    chain_pass_at_k,
    collinearity,
    expected_best_at_k,
    pareto_fraction,
    reward_diversity,
    solution_pass_at_k,
)

__all__ = [
    "KS",
    "TableRow",
    "best_at_k_curve_of_pool",
    "best_at_k_of_pool",
    "markdown_table",
    "pool_curve",
    "pool_metrics",
    "pool_summary",
    "split_by_reach",
    "task_pool_metrics",
    "validity_metrics",
]

KS: tuple[int, ...] = (1, 3, 5, 10, 30)
"""The k of the paper's best@k tables."""

NUM_WEIGHTS = EXPECTED_WEIGHTS
"""Weight points of E_w[best@k]: 256 scrambled Sobol points (the authors' evaluation used 100 iid draws)."""

PARETO_TOLERANCE = 8 * float(np.finfo(np.float32).eps)
"""Relative tolerance (at least 1 in scale) at which a pool's reward vector matches a Pareto point: float32 precision."""

REACH_SPLIT = ("reached", "unreached")
"""The two parts of `split_by_reach` and of the ``best@k|<part>`` metrics."""


def best_at_k_of_pool(values: NDArray[np.float64], k: int, *, mode: str) -> Any:
    """best@k of scalar values of pools (the one best@k estimator of a saved pool).

    Args:
        values: Values of each candidate, shape (..., n, m) (completions × candidates in generation
            order; leading axes, e.g. tasks, are batched).
        k: Candidates, 1 <= k <= n·m (single mode: k <= n).
        mode: ``"multi"`` uses the chain estimator; otherwise candidates are iid (column 0).

    Returns:
        The estimate: a float for one pool of shape (n, m), else shape (...).
    """
    values = np.asarray(values)
    out = best_at_k_chains(values, k) if mode == "multi" else best_at_k(values[..., 0], k)
    return float(out) if values.ndim == 2 else np.asarray(out)


def best_at_k_curve_of_pool(
    values: NDArray[np.float64], *, mode: str, ks: Sequence[int] | NDArray[np.int64] | None = None
) -> NDArray[np.float64]:
    """best@k of pools for several k (`best_at_k_of_pool` for each k, the iid case with one sort).

    Args:
        values: Values of each candidate, shape (T, n, m).
        mode: ``"multi"`` (chain estimator) or ``"single"`` (iid, column 0).
        ks: The k values (default every k the pools allow: 1..n·m in multi mode, 1..n in single mode).

    Returns:
        best@k per pool and k, shape (T, len(ks)).
    """
    values = np.asarray(values)
    if mode == "multi":  # chains: one batched estimator call per k
        k_values = range(1, values[0].size + 1) if ks is None else ks
        return np.stack([best_at_k_of_pool(values, int(k), mode=mode) for k in k_values], axis=-1)
    return best_at_k_curve(values[:, :, 0], ks)


def _pool_size(rewards: NDArray[np.float64], mode: str) -> int:
    n, m = rewards.shape[:2]
    return n * m if mode == "multi" else n


def _own_dims(env: Any, task: Any, rewards: Any) -> tuple[Any, NDArray[np.float64]]:
    spec = env.spec_for(task)
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 3:
        raise ValueError(f"a task's pool must have shape (n completions, m, d), got {r.shape}.")
    if r.shape[-1] < spec.dim:
        raise ValueError(f"pool of {task.id} has {r.shape[-1]} reward dims, its spec {spec.names} has {spec.dim}.")
    return spec, r[..., : spec.dim]


def task_pool_metrics(
    env: Any,
    task: Any,
    rewards: Any,
    *,
    mode: str,
    ks: Sequence[int] | None = None,
    num_weights: int = NUM_WEIGHTS,
    report_dims: Sequence[str] | None = None,
) -> dict[str, float]:
    """The metrics of one task's pool (the one k-loop).

    Args:
        env: The environment (`spec_for`, `is_success`, ``profile.report_dims``).
        task: The task.
        rewards: The pool, shape (n, m, d') with d' >= the task's d (extra columns are padding).
        mode: ``"multi"`` (chain estimator) or ``"single"`` (iid; m = 1).
        ks: The k values (default `KS`); those larger than this pool are left out (`pool_summary`
            refuses a k the caller asked for that the pools cannot give).
        num_weights: Weight draws of E_w[best@k].
        report_dims: Dimensions whose own best@k is reported (default ``env.profile.report_dims``).

    Returns:
        ``mean_<dim>``, ``mean_w_star``, ``diversity``, ``pareto_fraction`` and, per allowed k,
        ``best@k``, ``pass@k``, ``E_w[best@k]``, ``best@k[<dim>]``, ``chain_pass@k`` (k <= n) and
        ``solution_pass@k`` (k <= n·m).

    Raises:
        ValueError: For a pool of the wrong shape or a report dimension the task's spec lacks.
    """
    spec, r = _own_dims(env, task, rewards)
    dims = tuple(env.profile.report_dims if report_dims is None else report_dims)
    missing = [name for name in dims if name not in spec.names]
    if missing:
        raise ValueError(f"report_dims {missing} are not reward dimensions of {task.id} ({spec.names}).")
    n, m, d = r.shape
    flat = r.reshape(n * m, d)
    out: dict[str, float] = {f"mean_{name}": float(flat[:, i].mean()) for i, name in enumerate(spec.names)}
    scores = spec.scalarize(r)  # (n, m)
    success = np.asarray(env.is_success(r, task), dtype=float)  # (n, m)
    out["mean_w_star"] = float(scores.mean())
    chains = mode == "multi"
    for k in KS if ks is None else ks:
        if k <= n:
            out[f"chain_pass@{k}"] = chain_pass_at_k(success, k)
        if k <= n * m:
            out[f"solution_pass@{k}"] = solution_pass_at_k(success, k)
        if k > _pool_size(r, mode):
            continue
        out[f"best@{k}"] = best_at_k_of_pool(scores, k, mode=mode)
        out[f"pass@{k}"] = best_at_k_of_pool(success, k, mode=mode)
        out[f"E_w[best@{k}]"] = expected_best_at_k(r if chains else r[:, 0], k, num_weights=num_weights, chains=chains)
        for name in dims:
            out[f"best@{k}[{name}]"] = best_at_k_of_pool(r[..., spec.names.index(name)], k, mode=mode)
    out["diversity"] = reward_diversity(flat)
    out["pareto_fraction"] = pareto_fraction(flat)
    pareto_front = getattr(env, "pareto_front", None)
    out.update(validity_metrics(flat, pareto_front(task) if pareto_front is not None else None))
    return out


def validity_metrics(rewards: NDArray[np.float64], pareto: NDArray[np.float64] | None) -> dict[str, float]:
    """Validity, valid-only spread and Pareto coverage of one pool (see the module docstring).

    Args:
        rewards: The pool's candidates, shape (N, d).
        pareto: The task's Pareto set, shape (p, d), or None.

    Returns:
        ``valid``, ``no_valid``, ``diversity_valid``, ``distinct_valid`` and (with `pareto`)
        ``pareto_covered``. A Pareto point is found when a valid candidate matches it in every
        coordinate within `PARETO_TOLERANCE` · max(1, |coordinate|) (float32 pools, float64 fronts).
    """
    rewards = np.asarray(rewards)
    valid = np.any(rewards != 0.0, axis=-1)
    kept = np.asarray(rewards[valid], dtype=np.float64)
    distinct = np.unique(np.round(kept, 9), axis=0)
    out: dict[str, float] = {
        "valid": float(valid.mean()) if len(valid) else 0.0,
        "no_valid": 0.0 if valid.any() else 1.0,
        "diversity_valid": reward_diversity(kept) if len(kept) >= 2 else 0.0,
        "distinct_valid": float(len(distinct)),
    }
    if pareto is not None and len(pareto):
        front = np.asarray(pareto, dtype=np.float64)
        tolerance = PARETO_TOLERANCE * np.maximum(1.0, np.abs(front))[:, None, :]
        found = np.all(np.abs(front[:, None, :] - distinct[None, :, :]) <= tolerance, axis=-1).any(axis=1)
        out["pareto_covered"] = float(found.mean())
    return out


def split_by_reach(values: Any, reached: Any) -> dict[str, NDArray[np.float64]]:
    """Split per-task values into their parts on the tasks that are reached and on the others.

    Each part keeps the shape of `values`, with zeros on the other tasks, so the two parts' means
    over all cells add up to the mean of `values`: the share of a mean (a lead of A over B, with
    `reached` B's) that comes from the tasks B never reaches, and from the rest.

    Args:
        values: Per-task values, shape (..., T) (e.g. (S seeds, T tasks)).
        reached: Whether each task is reached (some valid candidate in the pool that decides it,
            ``1 - no_valid``), the same shape; booleans or 0/1.

    Returns:
        ``{"reached": values · reached, "unreached": values · (1 - reached)}``, each shaped like `values`.

    Raises:
        ValueError: If the shapes differ or `reached` is not boolean.
    """
    data = np.asarray(values, dtype=np.float64)
    mask = np.asarray(reached)
    if mask.shape != data.shape:
        raise ValueError(f"reached must have the shape of values {data.shape}, got {mask.shape}.")
    if not np.all((mask == 0) | (mask == 1)):
        raise ValueError("reached must hold booleans (or 0/1): whether each task has a valid candidate.")
    on = mask.astype(bool)
    return {REACH_SPLIT[0]: np.where(on, data, 0.0), REACH_SPLIT[1]: np.where(on, 0.0, data)}


def _asked_ks(ks: Sequence[int] | None) -> tuple[int, ...]:
    """The k a caller asked for (empty for the default: None or `KS` itself); refuses a k below 1."""
    if ks is None:
        return ()
    asked = tuple(ks)
    bad = [k for k in asked if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1]
    if bad or not asked:
        raise ConfigError(f"k of best@k must be integers >= 1, got {list(asked)}.")
    return () if tuple(int(k) for k in asked) == KS else tuple(int(k) for k in asked)


def pool_curve(env: Any, tasks: Sequence[Any], pools: Sequence[Any], *, mode: str) -> list[float]:
    """best@k of the w*-score for k = 1..(smallest pool size), averaged over tasks.

    Args:
        env: The environment.
        tasks: The T tasks.
        pools: One pool per task, shape (n, m, d').
        mode: ``"multi"`` or ``"single"``.

    Returns:
        The curve, one value per k.
    """
    if not pools:
        return []
    size = min(_pool_size(np.asarray(p), mode) for p in pools)
    values = np.zeros((len(pools), size))
    for i, (task, rewards) in enumerate(zip(tasks, pools, strict=True)):
        spec, r = _own_dims(env, task, rewards)
        scores = spec.scalarize(r)
        values[i] = [best_at_k_of_pool(scores, k, mode=mode) for k in range(1, size + 1)]
    return values.mean(axis=0).tolist()


def pool_summary(
    env: Any,
    tasks: Sequence[Any],
    pools: Sequence[Any],
    per_task: Sequence[Mapping[str, float]] | None = None,
    *,
    mode: str,
    ks: Sequence[int] | None = None,
    num_weights: int = NUM_WEIGHTS,
    report_dims: Sequence[str] | None = None,
) -> dict[str, float]:
    """The metrics of a split: `task_pool_metrics` averaged over tasks, plus ``collinearity``.

    A k the caller asks for must fit every pool: a larger one is refused, naming k and the smallest
    pool's size (never a table that silently lacks it). By default (``ks`` None, or the paper's `KS`
    itself) each k of `KS` is reported where every pool allows it and a warning names the k left out
    and the pool size. A metric is kept only when every task has it; ``no_valid`` is the share of tasks without a
    valid candidate, and ``best@k|reached`` / ``best@k|unreached`` the mean best@k over the tasks with
    one / without one (each left out when there are no such tasks);
    ``mean_<dim>`` only when every task has the same dimensions. ``collinearity`` is ρ̄ of all
    candidates' reward vectors in one matrix (the paper's on-policy ρ̄); where tasks have different
    dimensions (LiveCodeBench's per-problem tests) it is the mean of the per-task ρ̄ that are defined.

    Args:
        env: The environment.
        tasks: The T tasks.
        pools: One pool per task, shape (n_t, m, d'_t).
        per_task: The tasks' `task_pool_metrics`, if already computed.
        mode: ``"multi"`` or ``"single"``.
        ks: The k values (see above; default `KS` where the pools allow).
        num_weights: Weight draws of E_w[best@k].
        report_dims: As in `task_pool_metrics`.

    Returns:
        Metric name -> value.

    Raises:
        ValueError: For no tasks, or tasks and pools of different lengths.
        ConfigError: For a k below 1 or one that is asked for and larger than the smallest pool.
    """
    if not pools or len(tasks) != len(pools):
        raise ValueError(f"need one pool per task and at least one task, got {len(tasks)} tasks, {len(pools)} pools.")
    asked = _asked_ks(ks)
    sizes = [_pool_size(np.asarray(p), mode) for p in pools]
    smallest = min(sizes)
    _check_ks_fit(asked, tasks, sizes, mode=mode)
    if per_task is None:
        per_task = [
            task_pool_metrics(env, t, p, mode=mode, ks=ks, num_weights=num_weights, report_dims=report_dims)
            for t, p in zip(tasks, pools, strict=True)
        ]
    if not asked:
        _warn_left_out([k for k in KS if k > smallest], smallest, mode=mode)
    specs = [env.spec_for(t) for t in tasks]
    same_dims = len({s.names for s in specs}) == 1
    keys = [k for k in per_task[0] if all(k in row for row in per_task)]
    out = _task_means(per_task, keys, specs)
    if "no_valid" in keys:  # where the pool fails: best@k over the tasks it reaches and the others
        out.update(_reach_means(per_task, keys))
    out["collinearity"] = _pooled_collinearity(pools, specs) if same_dims else _mean_collinearity(pools, specs)
    return out


def _pool_kind(mode: str) -> str:
    """What a pool's size counts in `mode`, for messages."""
    return "n x m in multi mode" if mode == "multi" else "n"


def _check_ks_fit(asked: Sequence[int], tasks: Sequence[Any], sizes: Sequence[int], *, mode: str) -> None:
    """Refuse a k the caller asked for that is larger than the smallest pool.

    Args:
        asked: The k asked for (`_asked_ks`; empty for the default).
        tasks: The T tasks.
        sizes: Each task's pool size (`_pool_size`), length T.
        mode: ``"multi"`` or ``"single"``.

    Raises:
        ConfigError: Naming the k too large, the task of the smallest pool and its size.
    """
    smallest = min(sizes)
    too_large = [k for k in asked if k > smallest]
    if too_large:
        where = tasks[sizes.index(smallest)]
        raise ConfigError(
            f"k = {', '.join(map(str, too_large))} is larger than the pools: task {getattr(where, 'id', where)} "
            f"has {smallest} candidates ({_pool_kind(mode)}); sample more per task or ask for k <= {smallest}."
        )


def _warn_left_out(left_out: Sequence[int], smallest: int, *, mode: str) -> None:
    """Warn that the default k in `left_out` are not reported (said, not silent: the table has no column)."""
    if left_out:
        logging.getLogger(__name__).warning(
            "best@k, pass@k and E_w[best@k] for k = %s are not reported: the smallest pool has %d candidates "
            "(%s); sample more per task (or lower k) to report them.",
            ", ".join(map(str, left_out)),
            smallest,
            _pool_kind(mode),
        )


def _task_means(per_task: Sequence[Mapping[str, float]], keys: Sequence[str], specs: Sequence[Any]) -> dict[str, float]:
    """The mean over tasks of each metric in `keys`; ``mean_<dim>`` only when every task has the same dimensions.

    Args:
        per_task: The tasks' `task_pool_metrics`.
        keys: The metrics every task has, in the order reported.
        specs: The tasks' reward specs (``env.spec_for(task)``).

    Returns:
        Metric name -> mean over tasks.
    """
    same_dims = len({s.names for s in specs}) == 1
    dim_keys = {f"mean_{name}" for s in specs for name in s.names}
    return {key: float(np.mean([row[key] for row in per_task])) for key in keys if same_dims or key not in dim_keys}


def _reach_means(per_task: Sequence[Mapping[str, float]], keys: Sequence[str]) -> dict[str, float]:
    """``best@k|reached`` and ``best@k|unreached``: best@k averaged over the tasks with a valid candidate and without.

    Args:
        per_task: The tasks' `task_pool_metrics`, each with ``no_valid``.
        keys: The metrics every task has; only w*-score best@k are split.

    Returns:
        Metric name -> mean over those tasks (a part is left out when it has no task).
    """
    reached = np.array([row["no_valid"] == 0.0 for row in per_task])
    out: dict[str, float] = {}
    for key in keys:
        if not re.fullmatch(r"best@[0-9]+", key):
            continue
        values = np.array([row[key] for row in per_task])
        for part, mask in zip(REACH_SPLIT, (reached, ~reached), strict=True):
            if mask.any():
                out[f"{key}|{part}"] = float(values[mask].mean())
    return out


def _pooled_collinearity(pools: Sequence[Any], specs: Sequence[Any]) -> float:
    """ρ̄ of every candidate's reward vector in one matrix, for tasks that share one spec (shape (n, m, d') each)."""
    d = specs[0].dim
    flat = np.concatenate([np.asarray(p, dtype=np.float64)[..., :d].reshape(-1, d) for p in pools])
    return collinearity(flat)


def _mean_collinearity(pools: Sequence[Any], specs: Sequence[Any]) -> float:
    """The mean of the per-task ρ̄ that are defined (NaN when none is), for tasks of different dimensions."""
    rhos = [
        collinearity(np.asarray(p, dtype=np.float64)[..., : s.dim].reshape(-1, s.dim))
        for p, s in zip(pools, specs, strict=True)
    ]
    defined = [x for x in rhos if np.isfinite(x)]
    return float(np.mean(defined)) if defined else float("nan")


def pool_metrics(
    env: Any,
    tasks: Sequence[Any],
    rewards: NDArray[np.float64],
    *,
    mode: str,
    num_weights: int = NUM_WEIGHTS,
    ks: Sequence[int] | None = None,
) -> tuple[dict[str, float], list[float]]:
    """The paper's metrics of a split's pools (`pool_summary`) and the best@k curve (`pool_curve`).

    Args:
        env: The environment.
        tasks: The T tasks.
        rewards: Pools, shape (T, n, m, d): n completions of m candidates per task.
        mode: ``"multi"`` uses the chain estimator.
        num_weights: Weight points of E_w[best@k] (`NUM_WEIGHTS`).
        ks: The k of best@k, pass@k and E_w[best@k] (the paper's tables: 1, 3, 5, 10, 30, the default,
            each where the pools allow; its goal-conditioned table: 3, 6); a k asked for must fit the
            pools (`pool_summary`).

    Returns:
        The metrics (mean reward per dimension and of w*, best@k, pass@k, E_w[best@k], best@k of
        each of ``env.profile.report_dims``, diversity, collinearity) and the best@k curve for
        k = 1..n·m.
    """
    pools = list(rewards)
    metrics = pool_summary(env, tasks, pools, mode=mode, num_weights=num_weights, ks=ks)
    return metrics, pool_curve(env, tasks, pools, mode=mode)


class TableRow(Protocol):
    """What `markdown_table` reads of an evaluated policy (an `EvalResult`)."""

    name: str
    mode: str
    m: int
    metrics: dict[str, float]


def markdown_table(results: Sequence[TableRow], *, ks: Sequence[int] = KS, ew_ks: Sequence[int] = (5,)) -> str:
    """One table in the paper's layout.

    Columns: best@k for `ks`, best@30 of each report dimension, E_w[best@k] for `ew_ks`, pass@5,
    diversity, collinearity ρ̄, the mean w*-reward, the share of tasks with no valid candidate
    (``no_valid``) and the largest best@k over the tasks reached and not; a column is shown when every
    row has it.
    """
    columns = [f"best@{k}" for k in ks if all(f"best@{k}" in r.metrics for r in results)]
    dims = [key for r in results for key in r.metrics if re.fullmatch(r"best@30\[.+\]", key)]
    wanted = [f"E_w[best@{k}]" for k in ew_ks] + ["pass@5", "diversity", "collinearity", "mean_w_star", "no_valid"]
    wanted += [f"{c}|{part}" for c in columns[-1:] for part in REACH_SPLIT]
    extra = [c for c in [*dict.fromkeys(dims), *wanted] if all(c in r.metrics for r in results)]
    header = "| checkpoint | mode, m | " + " | ".join(columns + extra) + " |"
    lines = [header, "|" + "---|" * (2 + len(columns) + len(extra))]
    for r in results:
        cells = [f"{r.metrics[c]:.3f}" for c in columns + extra]
        lines.append(f"| {r.name} | {r.mode}, {r.m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
