"""The local engine keeps each task's reward spec (issue 39): a step that draws tasks with different numbers
of reward dimensions (env-lcb: one per test) trains, each group's advantage under its own spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vpo_core import Candidate, RewardSpec, Task, TextEnv
from vpo_core.adapters.local.config import parse_overrides
from vpo_core.adapters.local.rl import rl_step, rollout_advantages, sample_rollouts, score_rollouts
from vpo_core.advantages import normalize_scalars, rollout_scalars
from vpo_core.methods import get_method
from vpo_core.models.policy import new_policy
from vpo_core.models.settings import SamplingSettings

LCB_DATA = Path(__file__).resolve().parents[3] / "env-lcb" / "tests" / "data" / "deepcoder"
DIMS = (2, 5, 2, 3)  # the d of each task of the ragged test env


class RaggedEnv(TextEnv):
    """Task i has DIMS[i] reward dimensions (its own names and w*); a candidate's reward reads its text."""

    env_id = "ragged-v0"
    reward_spec = RewardSpec.uniform(["r_0", "r_1"])

    def tasks(self, split):
        return [Task(id=f"ragged/{split}/{i}", split=split, index=i, payload=d) for i, d in enumerate(DIMS)]

    def spec_for(self, task):
        d = task.payload
        return RewardSpec(
            names=tuple(f"r_{i}" for i in range(d)),
            w_star=tuple(np.arange(1.0, d + 1) / np.arange(1.0, d + 1).sum()),
            low=(0.0,) * d,
            high=(1.0,) * d,
            descriptions=tuple(f"part {i}" for i in range(d)),
        )

    def _render_prompt(self, task, mode, m):
        return [{"role": "user", "content": f"write {m} words about {task.payload} things"}]

    def _parse(self, task, completion, mode, m):
        words = completion.split()
        return [Candidate(index=j, text=w, answer=w) for j, w in enumerate((words + [""] * m)[:m])]

    def reward(self, task, candidate):
        text = candidate.text or ""
        return np.array([(len(text) * (i + 3) + sum(map(ord, text))) % 7 / 6 for i in range(task.payload)])


def _policy(texts, positions=512):
    return new_policy(
        texts * 4, vocab_size=300, hidden_size=16, layers=1, heads=2, seed=0, max_positions=positions, device="cpu"
    )


def _config(*extra):
    return parse_overrides(["method=vpo", "m=2", "group_size=3", "threads=1", "num_weights=8", *extra])


def test_groups_of_different_d_get_the_advantages_of_their_own_spec():
    """On today's main this step fails with a numpy broadcast error (the first task's d for every group)."""
    env = RaggedEnv()
    tasks = list(env.tasks("train"))
    policy = _policy([env.render_prompt(t, mode="multi", m=2)[0]["content"] for t in tasks])
    config = _config(f"prompts_per_step={len(tasks)}")
    method = get_method("vpo")
    rollouts = sample_rollouts(
        policy, env, tasks, config, method, SamplingSettings(1.0, 1.0, 6), step=0, rng=np.random.default_rng(1)
    )
    raw, train = score_rollouts(env, rollouts, mode="multi", m=2)
    assert [r.shape for r in raw] == [(3, 2, t.payload) for t in rollouts.tasks]
    assert any(np.ptp(r) > 0 for r in raw)  # rewards vary, so the advantages below are not all zero
    scalars, advantages = rollout_advantages(config, method, rollouts, train, step=0)
    assert scalars.shape == advantages.shape == (len(tasks), 3)
    assert np.abs(advantages).max() > 0
    for b, task in enumerate(rollouts.tasks):  # each group alone, under its own spec, gives the same numbers
        alone = rollout_scalars(
            "vpo",
            train[b][None],
            w_star=env.spec_for(task).w_star,
            seed=config.seed,
            group_keys=[f"0:{task.id}"],
            num_weights=8,
        )
        np.testing.assert_allclose(scalars[b], alone[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(advantages[b], normalize_scalars("vpo", alone)[0], rtol=0, atol=1e-12)


@pytest.mark.parametrize("method", ["goal_cond", "grpo"])
def test_a_whole_step_runs_with_ragged_d(method):
    env = RaggedEnv()
    tasks = list(env.tasks("train"))
    policy = _policy([env.render_prompt(t, mode="single", m=1)[0]["content"] for t in tasks])
    reference = _policy([env.render_prompt(t, mode="single", m=1)[0]["content"] for t in tasks])
    config = parse_overrides([f"method={method}", "group_size=2", "threads=1", f"prompts_per_step={len(tasks)}"])
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-4)
    record = rl_step(policy, reference, optimizer, env, tasks, config, step=0, sampling=SamplingSettings(1.0, 1.0, 4))
    assert {f"reward/r_{i}" for i in range(max(DIMS))} <= set(record)
    assert all(np.isfinite(v) for v in record.values() if isinstance(v, float))


def test_an_lcb_step_drawing_tasks_of_different_test_counts_trains():
    """lcb-v1's shapes: the fixture's train tasks have 2, 2, 2 and 32 tests (d = the task's number of tests)."""
    pytest.importorskip("env_lcb")
    import vpo_core

    env = vpo_core.make("lcb-v1", data_dir=str(LCB_DATA))
    tasks = list(env.tasks("train"))
    dims = [env.spec_for(t).dim for t in tasks]
    assert len(set(dims)) > 1
    texts = [env.render_prompt(t, mode="multi", m=2)[1]["content"] for t in tasks]
    policy, reference = _policy(texts, 2048), _policy(texts, 2048)
    config = parse_overrides(
        [
            "env=lcb-v1",
            "method=vpo",
            "m=2",
            "group_size=2",
            "threads=1",
            "num_weights=4",
            f"prompts_per_step={len(tasks)}",
        ]
    )
    optimizer = torch.optim.AdamW(policy.model.parameters(), lr=1e-4)
    record = rl_step(policy, reference, optimizer, env, tasks, config, step=0, sampling=SamplingSettings(1.0, 1.0, 6))
    assert {f"reward/tc_{i}" for i in range(max(dims))} <= set(record)
    assert np.isfinite(record["actor/grad_norm"])
