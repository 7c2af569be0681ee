"""The training methods of the paper (section 4.2 and appendix) as small records.

A method fixes the prompt mode and m, the rollout scalar (objective) and the group normaliser;
`vpo_core.compute_advantages` and both engines read these records, so a method is defined once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["METHODS", "Method", "get_method"]

Objective = Literal["w_star", "random_w", "goal_w", "per_dim", "multi_sum", "vpo"]
Normalizer = Literal["zscore", "gdpo", "max_at_k", "maxrl"]


@dataclass(frozen=True)
class Method:
    """One training method.

    Attributes:
        name: Method name (``"vpo"``, ``"grpo"``, ...).
        mode: Prompt mode: ``"single"`` or ``"multi"``.
        m: Default number of answers per completion (1 in single mode; the paper uses 3).
        objective: How a rollout's (m, d) rewards become its scalar(s).
        normalizer: How a group's scalars become advantages.
        goal_prompt: Whether the group's weights are written into the prompt (goal-conditioned GRPO).
        description: One line for help texts.
    """

    name: str
    mode: Literal["single", "multi"]
    m: int
    objective: Objective
    normalizer: Normalizer
    goal_prompt: bool
    description: str


METHODS: dict[str, Method] = {
    m.name: m
    for m in (
        Method("grpo", "single", 1, "w_star", "zscore", False, "GRPO on the fixed scalar w*·r"),
        Method("random_w", "single", 1, "random_w", "zscore", False, "GRPO on w·r, w ~ Dir(alpha) per group"),
        Method("goal_cond", "single", 1, "goal_w", "zscore", True, "GRPO on w·r, w ~ Dir(1) written into the prompt"),
        Method("gdpo", "single", 1, "per_dim", "gdpo", False, "per-dimension z-scores, summed, batch-whitened"),
        Method("max_at_k", "single", 1, "w_star", "max_at_k", False, "unbiased max@k transform of w*·r, z-scored"),
        Method("maxrl", "single", 1, "w_star", "maxrl", False, "(r - mean) / (mean + eps) on w*·r"),
        Method("multi_rlvr", "multi", 3, "multi_sum", "zscore", False, "sum of w*·r over de-duplicated answers"),
        Method("vpo", "multi", 3, "vpo", "zscore", False, "mean over K shared Dirichlet draws of best-of-m w·r"),
    )
}


def get_method(name: str) -> Method:
    """Look up a method by name.

    Raises:
        ValueError: If the name is unknown; the message lists the valid names.
    """
    try:
        return METHODS[name]
    except KeyError:
        raise ValueError(f"unknown method {name!r}; choose one of {sorted(METHODS)}.") from None
