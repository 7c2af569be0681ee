"""The paper's evaluation of a tabular policy, per task, with the project's metrics.

Each task gets a pool of `n_candidates` answers (300 by default): independent samples of a
single-answer policy, or n_candidates / m chains of a multi-answer one. best@k under w* is the exact
unbiased estimator of a pool (`vpo_core.evaluation.metrics.best_at_k_curve_of_pool`: iid samples or chains,
k = 1..30), E_w[best@k] is `expected_best_at_k` (its default weights: `EXPECTED_WEIGHTS` scrambled
Sobol points mapped onto Dir(1), `vpo_core.metrics.evaluation_weights`). The pool metrics are taken on
consecutive pools of 30 candidates (10 chains × 3, or 30 samples), as in the paper, and averaged:
`reward_diversity` over all candidates (an invalid answer is the env's floor vector) and over the valid
ones only, the fraction of the task's Pareto outcomes present, and the distinct valid outcomes present.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vpo_core.evaluation.metrics import best_at_k_curve_of_pool
from vpo_core.metrics import EXPECTED_WEIGHTS, expected_best_at_k, reward_diversity
from vpo_lab.tabular.policy import TabularPolicy
from vpo_lab.tabular.table import Candidates

__all__ = ["EXPECTED_KS", "METRICS", "POOL", "evaluate_policy"]

POOL = 30
"""Candidates per pool (the paper's 30)."""

EXPECTED_KS = (5,)
"""The k of the reported E_w[best@k]."""

METRICS: dict[str, str] = {
    "best_at_k": "best@k under w*, k = 1..30, shape (T, 30)",
    **{f"e_w_best_at_{k}": f"E_w[best@{k}] over {EXPECTED_WEIGHTS} quasi-random Dir(1) weights" for k in EXPECTED_KS},
    "diversity": "mean pairwise L1 of the 30 reward vectors of a pool (invalid answers included)",
    "diversity_valid": "the same among a pool's valid answers only (0 where no pool holds two)",
    "completion": "fraction of answers that are valid",
    "pareto_covered": "fraction of the task's Pareto outcomes present in a pool of 30",
    "distinct_valid": "distinct valid outcomes in a pool of 30",
    "distinct_valid_per_chain": "distinct valid outcomes among one rollout's m answers (m = 1: its validity)",
    "mean_w_star": "mean w*-score of an answer",
}
"""Every per-task metric `evaluate_policy` returns, with its meaning."""


def evaluate_policy(
    policy: TabularPolicy,
    candidates: Candidates,
    w_star: NDArray[np.float64],
    *,
    rng: np.random.Generator,
    n_candidates: int = 300,
) -> dict[str, NDArray[np.float64]]:
    """Sample each task's pool and compute every metric of `METRICS` per task.

    Args:
        policy: The policy (T tasks, m slots).
        candidates: Its candidates.
        w_star: The fixed scalarisation, shape (d,).
        rng: Source of the pool's samples.
        n_candidates: Answers per task; a multiple of 30 and of m.

    Returns:
        Metric name -> per-task values, shape (T,) (``best_at_k``: (T, 30)).
    """
    t, m, _ = policy.shape
    if n_candidates % POOL or n_candidates % m:
        raise ValueError(f"n_candidates must be a multiple of {POOL} and of m={m}, got {n_candidates}.")
    choices = policy.sample(rng, n_candidates // m)  # (T, chains, m)
    t_idx = np.arange(t)[:, None, None]
    rewards = candidates.rewards[t_idx, choices]  # (T, chains, m, d)
    valid = candidates.valid[t_idx, choices]
    outcome = candidates.outcome[t_idx, choices]
    scores = rewards @ w_star  # (T, chains, m)
    ks = np.arange(1, POOL + 1)
    best = best_at_k_curve_of_pool(scores, mode="multi" if m > 1 else "single", ks=ks)  # a policy of m slots: chains
    out: dict[str, NDArray[np.float64]] = {"best_at_k": best}
    for k in EXPECTED_KS:
        out[f"e_w_best_at_{k}"] = np.array(
            [expected_best_at_k(rewards[i] if m > 1 else rewards[i, :, 0], int(k), chains=m > 1) for i in range(t)]
        )
    flat_r = rewards.reshape(t, -1, POOL, rewards.shape[-1])  # (T, pools, 30, d), generation order
    flat_v = valid.reshape(t, -1, POOL)
    flat_o = outcome.reshape(t, -1, POOL)
    n_pools = flat_r.shape[1]
    out["diversity"] = np.array([reward_diversity(flat_r[i]) for i in range(t)])
    div_valid = np.zeros(t)
    pareto = np.zeros(t)
    distinct = np.zeros(t)
    for i in range(t):
        per_pool = [reward_diversity(flat_r[i, p][flat_v[i, p]]) for p in range(n_pools) if flat_v[i, p].sum() >= 2]
        div_valid[i] = float(np.mean(per_pool)) if per_pool else 0.0
        pareto_outcomes = set(np.unique(candidates.outcome[i][candidates.pareto[i]]).tolist())
        covered, seen = [], []
        for p in range(n_pools):
            present = set(flat_o[i, p][flat_v[i, p]].tolist())
            covered.append(len(present & pareto_outcomes) / len(pareto_outcomes))
            seen.append(len(present))
        pareto[i], distinct[i] = float(np.mean(covered)), float(np.mean(seen))
    out["diversity_valid"] = div_valid
    out["completion"] = valid.mean(axis=(1, 2))
    out["pareto_covered"] = pareto
    out["distinct_valid"] = distinct
    per_chain = np.zeros(choices.shape[:2])
    for j in range(m):
        new = valid[:, :, j] & np.all(outcome[:, :, :j] != outcome[:, :, j : j + 1], axis=-1)
        per_chain += new
    out["distinct_valid_per_chain"] = per_chain.mean(axis=1)
    out["mean_w_star"] = scores.mean(axis=(1, 2))
    return out
