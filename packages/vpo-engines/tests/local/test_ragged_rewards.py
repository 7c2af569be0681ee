"""The local engine keeps each task's reward spec (issue 39): a step that draws tasks with different numbers
of reward dimensions (env-lcb: one per test) trains, each group's advantage under its own spec."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from vpo_core import Candidate, RewardSpec, Task, TextEnv
from vpo_core.advantages import AdvantageConfig, compute_advantages, normalize_scalars, rollout_scalars
from vpo_core.batch import RolloutBatch, score_groups
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.rl import Rollouts, rl_step, rollout_advantages, sample_rollouts, score_rollouts
from vpo_engines.models.policy import ModelSpec, new_policy

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
        texts * 4,
        ModelSpec(vocab_size=300, hidden_size=16, layers=1, heads=2, max_positions=positions),
        seed=0,
        device="cpu",
    )


def _config(*extra):
    return parse_overrides(["method=vpo", "m=2", "group_size=3", "threads=1", "num_weights=8", *extra])


def test_groups_of_different_d_get_the_advantages_of_their_own_spec():
    """On today's main this step fails with a numpy broadcast error (the first task's d for every group)."""
    env = RaggedEnv()
    tasks = list(env.tasks("train"))
    policy = _policy([env.render_prompt(t, mode="multi", m=2)[0]["content"] for t in tasks])
    config = _config(f"prompts_per_step={len(tasks)}")
    rollouts = sample_rollouts(
        policy, env, tasks, config, SamplingSettings(1.0, 1.0, 6), step=0, rng=np.random.default_rng(1)
    )
    batch = score_rollouts(env, rollouts, config.advantage, step=0)
    assert [r.shape for r in batch.rewards] == [(3, 2, t.payload) for t in rollouts.tasks]
    assert any(np.ptp(r) > 0 for r in batch.rewards)  # rewards vary, so the advantages below are not all zero
    scalars, advantages = rollout_advantages(batch, config.advantage)
    assert scalars.shape == advantages.shape == (len(tasks), 3)
    assert np.abs(advantages).max() > 0
    alone_config = AdvantageConfig.parse("vpo", m=2, seed=config.seed, num_weights=8)
    for b, task in enumerate(rollouts.tasks):  # each group alone, under its own spec, gives the same numbers
        one = RolloutBatch.of(batch.training_rewards[b][None], w_star=env.spec_for(task).w_star, keys=[f"0:{task.id}"])
        alone = rollout_scalars(one, alone_config)
        np.testing.assert_allclose(scalars[b], alone[0], rtol=0, atol=1e-12)
        np.testing.assert_allclose(advantages[b], normalize_scalars(alone, alone_config)[0], rtol=0, atol=1e-12)


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


# ---------------------------------------------------------------- lcb-v1's shapes through every engine's path
def _lcb():
    pytest.importorskip("env_lcb")
    import vpo_core

    env = vpo_core.make("lcb-v1", data_dir=str(LCB_DATA))
    tasks = list(env.tasks("train"))
    assert len({env.spec_for(t).dim for t in tasks}) > 1  # the fixture's tasks have 2, 2, 2 and 32 tests
    return env, tasks


def _lcb_texts(env, tasks, mode, m):
    """Two completions per task: its reference solution (passes its tests; another task's where it has none, the
    fixture's 32-test task) and one that parses but fails them."""
    first = env.reference_completion(tasks[0], mode=mode, m=m)
    wrong = first.replace("print(max(", "print(min(")
    return [text for t in tasks for text in (env.reference_completion(t, mode=mode, m=m) or first, wrong)]


def _alone(batch, b, config):
    """Group b's advantages computed alone, under its own spec."""
    one = RolloutBatch.of(
        batch.training_rewards[b][None],
        w_star=batch.w_star[b],
        keys=[batch.keys[b]],
        goal_weights=None if batch.goal_weights is None else [batch.goal_weights[b]],
    )
    return compute_advantages(one, config)[0]


@pytest.mark.parametrize("method", ["vpo", "goal_cond"])
def test_lcb_shapes_through_score_groups_and_trls_advantage_function(method):
    pytest.importorskip("trl")
    from vpo_engines.trl.trainer import EnvScorer, group_advantages

    env, tasks = _lcb()
    config = AdvantageConfig.parse(method, m=2 if method == "vpo" else None, num_weights=6)
    mode, m = config.method.mode, config.m
    texts = _lcb_texts(env, tasks, mode, m)
    scorer = EnvScorer(env, tasks, mode=mode, m=m)
    order = [i for i in range(len(tasks)) for _ in range(2)]
    half = len(texts) // 2  # two calls, as two processes' shares would arrive
    logged = scorer(None, texts[:half], order[:half]) + scorer(None, texts[half:], order[half:])
    assert len(logged) == len(texts)
    assert max(logged) > 0
    goal = [config.method.prompt_goal_weights(env.spec_for(t).dim, seed=0, task_id=t.id) for t in tasks]
    batch, advantages = group_advantages(
        scorer.scored,
        config,
        group_size=2,
        step=5,
        lengths=[10.0] * len(texts),
        goal_weights=goal if config.method.goal_prompt else None,
        task_index=order,
    )
    assert batch.dims == tuple(env.spec_for(t).dim for t in tasks)
    assert batch.keys[0] == f"5:0:{tasks[0].id}"
    assert advantages.shape == (len(texts),)
    assert np.abs(advantages).max() > 0
    for b in range(len(tasks)):
        np.testing.assert_array_equal(advantages[2 * b : 2 * b + 2], _alone(batch, b, config))


@pytest.mark.parametrize("method", ["vpo", "grpo"])
def test_lcb_shapes_through_verls_reward_function(method):
    pytest.importorskip("pandas")
    from vpo_engines.verl.export import rows_for
    from vpo_engines.verl.reward import score_trajectory

    env, tasks = _lcb()
    rows = rows_for("lcb-v1", "train", method, env_config={"data_dir": str(LCB_DATA)})
    vpo = {"seed": 3, "num_weights": 6}
    config = AdvantageConfig.parse(method, seed=3, num_weights=6)
    texts = _lcb_texts(env, tasks, config.method.mode, config.m)
    extras_keys = set()
    for b, task in enumerate(tasks):
        out = score_trajectory(texts[2 * b], rows[b]["extra_info"], f"uid-{b}", vpo)
        extras_keys.add(frozenset(out["reward_extra_info"]))
        one = score_groups(env, [task], [texts[2 * b]], mode=config.method.mode, m=config.m, keys=[f"uid-{b}"])
        assert one.dims == (env.spec_for(task).dim,)
        assert out["reward_score"] == float(rollout_scalars(one, config)[0, 0])
    assert len(extras_keys) == 1  # veRL needs the same extra keys for every trajectory, whatever the task's d


def test_lcb_shapes_through_the_local_engines_scoring_and_advantage():
    env, tasks = _lcb()
    config = parse_overrides(["env=lcb-v1", "method=vpo", "m=2", "group_size=2", "threads=1", "num_weights=4"])
    texts = _lcb_texts(env, tasks, "multi", 2)
    rollouts = Rollouts(
        tasks, None, texts, torch.zeros(len(texts), 1), torch.ones(len(texts), 3), torch.ones(len(texts), 3)
    )
    batch = score_rollouts(env, rollouts, config.advantage, step=2)
    _scalars, advantages = rollout_advantages(batch, config.advantage)
    assert batch.dims == tuple(env.spec_for(t).dim for t in tasks)
    assert advantages.shape == (len(tasks), 2)
    assert np.abs(advantages).max() > 0
    for b in range(len(tasks)):
        np.testing.assert_array_equal(advantages[b], _alone(batch, b, config.advantage))
