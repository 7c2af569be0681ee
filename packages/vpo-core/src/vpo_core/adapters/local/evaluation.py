"""Evaluation of a policy on an env split, kept at this path for the local engine's imports.

The code is `vpo_core.evaluation`'s: `vpo_core.evaluation.sampling` samples and scores pools,
`vpo_core.evaluation.metrics` computes their metrics and tables.
"""

from __future__ import annotations

from vpo_core.evaluation.metrics import KS, markdown_table, pool_metrics
from vpo_core.evaluation.sampling import CONDITIONINGS, EvalResult, Sampler, evaluate_policy, goal_weights_for_eval

__all__ = [
    "CONDITIONINGS",
    "KS",
    "EvalResult",
    "Sampler",
    "before_after",
    "evaluate_policy",
    "goal_weights_for_eval",
    "markdown_table",
    "pool_metrics",
]


def before_after(init: EvalResult, final: EvalResult) -> dict[str, object]:
    """The report's comparison of an evaluation before and after RL (both engines' ``report.json`` keys)."""
    return {
        "warm_started": init.metrics,
        "after_rl": final.metrics,
        "learned": final.metrics["mean_w_star"] > init.metrics["mean_w_star"],
    }
