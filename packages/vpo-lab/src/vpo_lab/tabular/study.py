"""Methods × seeds × starts of a tabular mechanism study, with seed/task intervals and tables.

`run_study` trains one tabular policy per (start, arm, seed) on the same candidates, evaluates it at
the checkpoints (`evaluate_policy`) and keeps the per-(seed, task) values. An arm is a registered
method (`vpo_core.METHODS`, its m from the registry; the mechanism's controls are registered there too). `StudyResult`
turns them into seed-level intervals (`vpo_core.stats`: a t-interval over the per-seed means with a
shared-task term; differences paired by seed and task) and per-seed means for a JSON summary.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from vpo_core.methods import get_method
from vpo_core.stats import paired_seed_interval, seed_interval
from vpo_lab.tabular.evaluate import EXPECTED_KS, evaluate_policy
from vpo_lab.tabular.table import Candidates, Start
from vpo_lab.tabular.train import AdvantageFn, method_advantages, train_policy

__all__ = ["Arm", "StudyResult", "arm", "run_study"]


@dataclass(frozen=True)
class Arm:
    """One trained variant: a name, its answers per rollout and its advantage rule per seed."""

    name: str
    m: int
    advantages: Callable[[int], AdvantageFn]


def arm(name: str, *, w_star: NDArray[np.float64], task_ids: Sequence[str], num_weights: int = 100) -> Arm:
    """The arm of a registered method (the mechanism's controls, e.g. ``vpo_w_star_max``, are methods too).

    Raises:
        ValueError: For a name that is not registered.
    """
    spec = get_method(name)  # raises with the valid names
    return Arm(
        name,
        spec.resolve_m(),
        lambda seed: method_advantages(name, w_star=w_star, seed=seed, task_ids=task_ids, num_weights=num_weights),
    )


Values = dict[str, dict[str, dict[int, dict[str, NDArray[np.float64]]]]]
"""start -> arm -> step -> metric -> per-(seed, task) values, shape (S, T) (best_at_k: (S, T, 30))."""


@dataclass
class StudyResult:
    """Per-(seed, task) metrics of every (start, arm, checkpoint).

    Attributes:
        values: See `Values`.
        seeds: The seeds, in the order of the S axis.
        task_ids: The tasks, in the order of the T axis.
        config: What was run (for the JSON).
    """

    values: Values
    seeds: list[int]
    task_ids: list[str]
    config: dict[str, Any] = field(default_factory=dict)

    def metric(self, start: str, arm_name: str, step: int, name: str, k: int | None = None) -> NDArray[np.float64]:
        """Per-(seed, task) values of one metric, shape (S, T); best_at_k needs k (1..30)."""
        data = self.values[start][arm_name][step][name]
        if name == "best_at_k":
            if k is None:
                raise ValueError("best_at_k needs k.")
            return data[..., k - 1]
        return data

    def seed_means(self, start: str, arm_name: str, step: int, name: str, k: int | None = None) -> NDArray[np.float64]:
        """Per-seed means over tasks of one metric, shape (S,): what a seed-level interval is built from."""
        return self.metric(start, arm_name, step, name, k).mean(axis=1)

    def summary(self, replicates: int = 2000) -> dict[str, Any]:
        """JSON-ready intervals: start -> arm -> step -> metric -> {estimate, low, high} (best@k: one per k)."""
        out: dict[str, Any] = {}
        for start, arms in self.values.items():
            out[start] = {}
            for arm_name, steps in arms.items():
                out[start][arm_name] = {}
                for step, metrics in steps.items():
                    cell: dict[str, Any] = {}
                    for name, data in metrics.items():
                        if name == "best_at_k":
                            cell[name] = [_interval(data[..., k], replicates) for k in range(data.shape[-1])]
                        else:
                            cell[name] = _interval(data, replicates)
                    out[start][arm_name][str(step)] = cell
        return out

    def paired(
        self, reference: str, start: str, step: int, name: str, k: int | None = None, replicates: int = 2000
    ) -> dict[str, dict[str, float]]:
        """Reference − every other arm on one metric, paired by seed and task: arm -> interval."""
        base = self.metric(start, reference, step, name, k)
        return {
            other: _as_dict(paired_seed_interval(base, self.metric(start, other, step, name, k), replicates=replicates))
            for other in self.values[start]
            if other != reference and self.metric(start, other, step, name, k).shape == base.shape
        }


def _as_dict(interval: Any) -> dict[str, float]:
    return {"estimate": interval.estimate, "low": interval.low, "high": interval.high}


def _interval(data: NDArray[np.float64], replicates: int) -> dict[str, float]:
    return _as_dict(seed_interval(data, replicates=replicates))


def run_study(
    candidates: Candidates,
    *,
    w_star: NDArray[np.float64],
    starts: Sequence[Start],
    arms: Sequence[Arm],
    seeds: Sequence[int],
    steps: int,
    checkpoints: Sequence[int],
    group_size: int = 8,
    lr: float = 0.03,
    n_candidates: int = 300,
    progress: Callable[[str], None] | None = None,
) -> StudyResult:
    """Train and evaluate every (start, arm, seed).

    Args:
        candidates: The tasks' candidates.
        w_star: The fixed scalarisation, shape (d,).
        starts: Start priors.
        arms: Methods and controls (`arm`).
        seeds: Rollout seeds (also the seeds of each method's group-shared weights).
        steps: RL steps per run.
        checkpoints: Steps at which to evaluate (0 = the start).
        group_size: G.
        lr: Adam step size.
        n_candidates: Answers per task in an evaluation pool.
        progress: Called with one line per finished run.

    Returns:
        The per-(seed, task) metrics.
    """
    values: Values = {}
    for start in starts:
        prior = start.prior(candidates)
        values[start.name] = {}
        for a in arms:
            per_step: dict[int, dict[str, list[NDArray[np.float64]]]] = {}
            for seed in seeds:
                runs = train_policy(
                    candidates,
                    prior,
                    m=a.m,
                    advantage_fn=a.advantages(seed),
                    steps=steps,
                    checkpoints=checkpoints,
                    seed=seed,
                    group_size=group_size,
                    lr=lr,
                )
                for checkpoint in runs:
                    rng = np.random.default_rng([seed, checkpoint.step, 0xE7A1])
                    metrics = evaluate_policy(checkpoint.policy, candidates, w_star, rng=rng, n_candidates=n_candidates)
                    slot = per_step.setdefault(checkpoint.step, {})
                    for name, value in metrics.items():
                        slot.setdefault(name, []).append(value)
                if progress is not None:
                    progress(f"{start.name} {a.name} seed {seed} done")
            values[start.name][a.name] = {
                step: {name: np.stack(v) for name, v in metrics_.items()} for step, metrics_ in per_step.items()
            }
    config = {
        "tasks": len(candidates.task_ids),
        "variants": candidates.variants,
        "starts": [vars(s) for s in starts],
        "arms": [{"name": a.name, "m": a.m} for a in arms],
        "seeds": list(seeds),
        "steps": steps,
        "checkpoints": sorted(set(checkpoints)),
        "group_size": group_size,
        "lr": lr,
        "n_candidates": n_candidates,
        "expected_best_ks": list(EXPECTED_KS),
    }
    return StudyResult(values, list(seeds), list(candidates.task_ids), config)
