"""RL of a tabular policy with any registered method's advantages.

Every step, every task draws G rollouts; their reward matrices (T, G, m, d) are built as the LM
engines build them (multi-answer: duplicates by de-dup key zeroed and moved last, as
`vpo_core.multi_answer.dedupe_reward_rows` does); `vpo_core.compute_advantages` turns them into one
advantage per rollout with the group keys ``"<step>:<task id>"`` (fresh group-shared weights every
step); Adam takes one ascent step on ``(1/G) Σ_g A_g log π(y_g)`` per task.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vpo_core.advantages import AdvantageConfig, RolloutBatch, compute_advantages
from vpo_core.methods import get_method
from vpo_lab.tabular.policy import Adam, TabularPolicy
from vpo_lab.tabular.table import Candidates

__all__ = [
    "AdvantageFn",
    "Checkpoint",
    "dedupe_rollouts",
    "method_advantages",
    "train_policy",
]

AdvantageFn = Callable[[NDArray[np.float64], Sequence[str]], NDArray[np.float64]]
"""``fn(rewards (B, G, m, d), group_keys) -> advantages (B, G)``: a method's advantage rule."""


@dataclass(frozen=True)
class Checkpoint:
    """A copy of the policy after `step` RL steps."""

    step: int
    policy: TabularPolicy


def dedupe_rollouts(rewards: NDArray[np.float64], keys: NDArray[np.int64]) -> NDArray[np.float64]:
    """De-duplicate and zero-pad every rollout's answers at once (`dedupe_reward_rows`, vectorised).

    Args:
        rewards: Reward matrices, shape (T, G, m, d).
        keys: De-dup key of each answer, shape (T, G, m).

    Returns:
        Shape (T, G, m, d): the first answer of each key in order, then zero rows.
    """
    m = keys.shape[-1]
    earlier = np.tril(np.ones((m, m), dtype=bool), k=-1)  # earlier[j, i]: i < j
    duplicate = np.any((keys[..., :, None] == keys[..., None, :]) & earlier, axis=-1)
    kept = ~duplicate
    order = np.argsort(~kept, axis=-1, kind="stable")  # kept answers first, in their order
    out = np.take_along_axis(rewards * kept[..., None], order[..., None], axis=-2)
    return out


def method_advantages(
    method: str,
    *,
    w_star: NDArray[np.float64],
    seed: int,
    task_ids: Sequence[str],
    num_weights: int = 100,
) -> AdvantageFn:
    """The advantage rule of a registered method (`compute_advantages` with the LM engine's options).

    goal_cond writes one weight vector per task into its prompt (`vpo_core.methods.goal_weights`,
    fixed for the task); a tabular policy is that prompt's policy, so goal_cond trains each task on
    its own prompt's w (and is evaluated on it: it cannot be re-prompted with w*).
    """
    spec = get_method(method)
    goal = spec.task_goal_weights([len(w_star)] * len(task_ids), task_ids, seed=seed)

    def advantages(rewards: NDArray[np.float64], keys: Sequence[str]) -> NDArray[np.float64]:
        return compute_advantages(
            RolloutBatch.of(rewards, w_star=w_star, keys=list(keys), goal_weights=goal),
            AdvantageConfig.parse(spec, seed=seed, num_weights=num_weights),
        )

    return advantages


def train_policy(
    candidates: Candidates,
    prior: NDArray[np.float64],
    *,
    m: int,
    advantage_fn: AdvantageFn,
    steps: int,
    checkpoints: Sequence[int],
    seed: int,
    group_size: int = 8,
    lr: float = 0.03,
) -> Iterator[Checkpoint]:
    """Train a tabular policy from `prior`, yielding copies at the checkpoints.

    Args:
        candidates: The tasks' candidates (T, N).
        prior: Start distribution, shape (T, N).
        m: Answers per rollout (1: single-answer; rewards then have m = 1 and no de-dup).
        advantage_fn: The method's rule (`method_advantages`, or a control).
        steps: RL steps.
        checkpoints: Steps (0..steps) after which to yield the policy.
        seed: Seed of the rollouts (the method's own draws are seeded inside `advantage_fn`).
        group_size: G, rollouts per task and step.
        lr: Adam step size.

    Yields:
        One `Checkpoint` per requested step, in increasing order.
    """
    wanted = sorted({int(c) for c in checkpoints})
    if not wanted or wanted[0] < 0 or wanted[-1] > steps:
        raise ValueError(f"checkpoints must lie in [0, steps={steps}], got {list(checkpoints)}.")
    if group_size < 2:
        raise ValueError(f"group_size (G) must be >= 2 for group advantages, got {group_size}.")
    policy = TabularPolicy(prior, candidates.real, m)
    optimiser = Adam(policy, lr)
    rng = np.random.default_rng([seed, 0x7AB])
    t_idx = np.arange(len(candidates.task_ids))[:, None, None]
    for step in range(steps + 1):
        if step in wanted:
            yield Checkpoint(step, policy.copy())
        if step == steps:
            break
        choices = policy.sample(rng, group_size)  # (T, G, m)
        rewards = candidates.rewards[t_idx, choices]  # (T, G, m, d)
        if m > 1:
            rewards = dedupe_rollouts(rewards, candidates.key[t_idx, choices])
        adv = advantage_fn(rewards, [f"{step}:{task}" for task in candidates.task_ids])
        optimiser.step(policy.gradient(choices, adv))
