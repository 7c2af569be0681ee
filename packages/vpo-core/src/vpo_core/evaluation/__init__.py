"""Evaluation: sampling a policy's candidate pools, the saved pool, its metrics and plots.

- `vpo_core.evaluation.sampling`: `evaluate_policy` samples and scores pools of shape
  (T tasks, n completions, m candidates, d) from any `Sampler`;
- `vpo_core.evaluation.pool_file`: `SavedPool`, the one writer `save_pool` and the one reader
  `load_pool` (the pool with its env, mode, per-task specs, sampling settings and versions);
- `vpo_core.evaluation.metrics`: the paper's metrics of pools (one k-loop, one best@k estimator of a
  pool, `best_at_k_of_pool`) and the markdown table;
- `vpo_core.evaluation.reporting`: what makes evaluations comparable: bootstrap standard errors over
  tasks (`standard_errors`), the settings digest (`settings_digest`) and the results schema version;
  a training run's before/after comparison (`before_after`, in `sampling` beside `EvalResult`);
- `vpo_core.evaluation.plots`: best@k against k (needs matplotlib, imported when drawing).

The evaluation command (``vpo-eval``, ``vpo eval``) is `vpo_engines.evaluate` in the vpo-engines package: it
samples a model through the model floor's samplers and scores it with this package.
"""

from __future__ import annotations

from vpo_core.evaluation.metrics import (
    KS,
    best_at_k_curve_of_pool,
    best_at_k_of_pool,
    markdown_table,
    pool_curve,
    pool_metrics,
    pool_summary,
    split_by_reach,
    task_pool_metrics,
    validity_metrics,
)
from vpo_core.evaluation.pool_file import SavedPool, load_pool, new_pool, package_versions, save_pool
from vpo_core.evaluation.reporting import settings_digest, standard_errors
from vpo_core.evaluation.sampling import (
    CONDITIONINGS,
    EvalResult,
    Sampler,
    before_after,
    evaluate_policy,
    goal_weights_for_eval,
)

__all__ = [
    "CONDITIONINGS",
    "KS",
    "EvalResult",
    "Sampler",
    "SavedPool",
    "before_after",
    "best_at_k_curve_of_pool",
    "best_at_k_of_pool",
    "evaluate_policy",
    "goal_weights_for_eval",
    "load_pool",
    "markdown_table",
    "new_pool",
    "package_versions",
    "pool_curve",
    "pool_metrics",
    "pool_summary",
    "save_pool",
    "settings_digest",
    "split_by_reach",
    "standard_errors",
    "task_pool_metrics",
    "validity_metrics",
]
