"""Pool metrics (vpo_core.evaluation.metrics): the same numbers as the evaluation code they replaced, report dims, padding."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_core import EnvProfile, RewardSpec, Task, TextEnv
from vpo_core.envcli import score_pools
from vpo_core.evaluation.metrics import KS, pool_curve, pool_summary, task_pool_metrics
from vpo_core.metrics import (
    best_at_k,
    best_at_k_chains,
    best_at_k_curve,
    collinearity,
    expected_best_at_k,
    pass_at_k,
    reward_diversity,
)

SPEC = RewardSpec.uniform(["hop", "gold", "answer_f1"])


class ToyEnv(TextEnv[int, float]):
    """Three dimensions; the completion's characters '0'..'9' give its candidates' rewards (tenths)."""

    env_id = "toy-pool-v0"
    reward_spec = SPEC
    profile = EnvProfile(report_dims=("answer_f1",))

    def tasks(self, split):
        return [Task(id=f"toy/{split}/{i}", split=split, index=i, payload=i) for i in range(5)]

    def _render_prompt(self, task, mode, m):
        return [{"role": "user", "content": f"task {task.index}"}]

    def _parse(self, task, completion, mode, m):
        from vpo_core import Candidate

        return [
            Candidate(index=i, text=c, answer=int(c) / 9 if c.isdigit() else None) for i, c in enumerate(completion)
        ]

    def reward(self, task, candidate):
        if candidate.answer is None:
            return np.zeros(3)
        a = candidate.answer
        return np.array([float(a > 0.5), a, a**2])


class RaggedEnv(ToyEnv):
    """Task i has i + 2 dimensions (like LiveCodeBench's per-problem tests); pools are zero-padded to 6."""

    env_id = "toy-ragged-v0"
    reward_spec = RewardSpec.uniform([f"t{i}" for i in range(6)])
    profile = EnvProfile()

    def spec_for(self, task):
        return RewardSpec.uniform([f"t{i}" for i in range(task.index + 2)])


def _subset_pass(success, k, limit=3000):
    """The fraction of k-subsets holding a success: every subset, or `limit` random ones (then approximately)."""
    n = len(success)
    if math.comb(n, k) <= limit:
        subsets = itertools.combinations(range(n), k)
        return float(np.mean([success[list(s)].any() for s in subsets]))
    rng = np.random.default_rng(k)
    return float(np.mean([success[rng.choice(n, k, replace=False)].any() for _ in range(limit)]))


def _pareto(r):
    dominated = [any(np.all(r[j] >= r[i]) and np.any(r[j] > r[i]) for j in range(len(r))) for i in range(len(r))]
    return 1.0 - float(np.mean(dominated))


def _legacy(env, tasks, rewards, mode, num_weights=100):
    """The evaluation's pool metrics before they moved to core (vectorised over tasks), as the oracle."""
    n_tasks, n, m, d = rewards.shape
    names = env.reward_spec.names
    flat = rewards.reshape(n_tasks, n * m, d)
    out = {f"mean_{name}": float(flat[..., i].mean()) for i, name in enumerate(names)}
    scores = np.stack([env.spec_for(t).scalarize(rewards[i]) for i, t in enumerate(tasks)])
    success = np.stack([env.is_success(rewards[i], t) for i, t in enumerate(tasks)]).astype(float)
    out["mean_w_star"] = float(scores.mean())
    for k in KS:
        if k > n * m:
            continue
        if mode == "multi":
            out[f"best@{k}"] = float(np.mean(best_at_k_chains(scores, k)))
            out[f"pass@{k}"] = float(np.mean(best_at_k_chains(success, k)))
            out[f"E_w[best@{k}]"] = float(np.mean([expected_best_at_k(r, k, chains=True) for r in rewards]))
            out[f"best@{k}[answer_f1]"] = float(np.mean(best_at_k_chains(rewards[..., 2], k)))
        else:
            out[f"best@{k}"] = float(np.mean(best_at_k(scores[:, :, 0], k)))
            out[f"pass@{k}"] = float(np.mean(best_at_k(success[:, :, 0], k)))
            out[f"E_w[best@{k}]"] = float(np.mean([expected_best_at_k(r[:, 0], k) for r in rewards]))
            out[f"best@{k}[answer_f1]"] = float(np.mean(best_at_k(rewards[:, :, 0, 2], k)))
    out["diversity"] = reward_diversity(flat)
    out["collinearity"] = collinearity(flat.reshape(-1, d))
    valid_rows = [[tuple(row) for row in pool if any(row)] for pool in flat.tolist()]  # plain-Python validity
    out["valid"] = float(np.mean([len(rows) / (n * m) for rows in valid_rows]))
    out["distinct_valid"] = float(np.mean([len(set(rows)) for rows in valid_rows]))
    out["diversity_valid"] = float(
        np.mean([reward_diversity(np.array(rows)) if len(rows) >= 2 else 0.0 for rows in valid_rows])
    )
    # where the pool fails: tasks without a valid candidate, and best@k split over reached / unreached tasks
    reached = [bool(rows) for rows in valid_rows]
    out["no_valid"] = reached.count(False) / n_tasks
    for k in KS:
        if f"best@{k}" not in out:
            continue
        per_task = best_at_k_chains(scores, k) if mode == "multi" else best_at_k(scores[:, :, 0], k)
        for part, wanted in (("reached", True), ("unreached", False)):
            chosen = [v for v, r in zip(per_task, reached, strict=True) if r is wanted]
            if chosen:
                out[f"best@{k}|{part}"] = float(np.mean(chosen))
    # the pool metrics added later, by brute force: enumerate k-subsets of chains / candidates, compare pairs
    for k in KS:
        if k <= n:
            out[f"chain_pass@{k}"] = float(
                np.mean([_subset_pass(s_, k) for s_ in success.reshape(n_tasks, n, m).any(axis=2)])
            )
        if k <= n * m:
            out[f"solution_pass@{k}"] = float(np.mean([_subset_pass(s_, k) for s_ in success.reshape(n_tasks, -1)]))
    out["pareto_fraction"] = float(np.mean([_pareto(f) for f in flat]))
    if mode == "multi":
        curve = [float(np.mean(best_at_k_chains(scores, k))) for k in range(1, n * m + 1)]
    else:
        curve = best_at_k_curve(scores[:, :, 0]).mean(axis=0).tolist()
    return out, curve


@pytest.mark.parametrize(("mode", "m", "n"), [("single", 1, 30), ("multi", 3, 10), ("multi", 3, 4), ("single", 1, 7)])
def test_pool_summary_matches_the_replaced_evaluation_code(mode, m, n):
    env = ToyEnv()
    tasks = env.tasks("test")
    rng = np.random.default_rng(n)
    rewards = rng.integers(0, 3, size=(len(tasks), n, m, 3)) / 2.0
    rewards[..., 0] = rng.integers(0, 2, size=rewards.shape[:-1])
    expected, expected_curve = _legacy(env, tasks, rewards, mode)
    got = pool_summary(env, tasks, list(rewards), mode=mode)
    assert set(got) == set(expected)
    for key, value in expected.items():  # equal up to float summation order (a few ulp)
        if "pass@" in key and key.split("@")[0] in ("chain_pass", "solution_pass"):
            continue
        assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
    for key in (k for k in expected if k.startswith(("chain_pass@", "solution_pass@"))):
        # exact where every subset was enumerated; within Monte Carlo error (3000 subsets) otherwise
        assert got[key] == pytest.approx(expected[key], abs=0.03), key
    np.testing.assert_allclose(pool_curve(env, tasks, list(rewards), mode=mode), expected_curve, rtol=1e-12)


def test_pass_at_k_is_chens_estimator_for_iid_pools():
    env = ToyEnv()
    task = env.tasks("test")[0]
    rewards = np.zeros((10, 1, 3))
    rewards[:3] = 1.0  # three of ten solve the task
    metrics = task_pool_metrics(env, task, rewards, mode="single")
    for k in (1, 3, 5, 10):
        assert metrics[f"pass@{k}"] == pytest.approx(pass_at_k(10, 3, k), rel=1e-12)
    assert "best@30" not in metrics  # larger than the pool


def test_report_dims_come_from_the_profile_and_must_exist():
    env = ToyEnv()
    task = env.tasks("test")[0]
    rewards = np.random.default_rng(0).random((6, 3, 3))
    metrics = task_pool_metrics(env, task, rewards, mode="multi")
    assert metrics["best@3[answer_f1]"] == pytest.approx(best_at_k_chains(rewards[..., 2], 3))
    assert not any("[hop]" in key for key in metrics)
    with pytest.raises(ValueError, match=r"report_dims \['f2'\] are not reward dimensions"):
        task_pool_metrics(env, task, rewards, mode="multi", report_dims=("f2",))


def test_zero_padded_pools_of_tasks_with_different_dims():
    env = RaggedEnv()
    tasks = env.tasks("test")[:3]  # 2, 3 and 4 dims
    rng = np.random.default_rng(3)
    pools = []
    for t in tasks:
        pool = np.zeros((8, 1, 6))
        pool[..., : t.index + 2] = rng.integers(0, 2, size=(8, 1, t.index + 2))
        pools.append(pool)
    got = pool_summary(env, tasks, pools, mode="single")
    own = [p[..., : t.index + 2] for p, t in zip(pools, tasks, strict=True)]
    assert got["best@5"] == pytest.approx(np.mean([best_at_k(p[:, 0].mean(-1), 5) for p in own]))
    assert not any(key.startswith("mean_t") for key in got)  # dimensions differ between tasks
    rhos = [collinearity(p.reshape(-1, p.shape[-1])) for p in own]
    assert got["collinearity"] == pytest.approx(np.nanmean(rhos))
    with pytest.raises(ValueError, match="has 1 reward dims"):
        task_pool_metrics(env, tasks[0], np.zeros((4, 1, 1)), mode="single")


def test_envcli_score_uses_the_same_metrics():
    env = ToyEnv()
    tasks = env.tasks("test")
    pools = {0: ["9", "0", "5", "7"], 1: ["1", "8", "8", "2"], 3: ["0", "0", "0", "9"]}
    summary = score_pools(env, tasks, pools, mode="single", m=1)
    rewards = [np.stack([env.score(tasks[i], c) for c in pools[i]]) for i in sorted(pools)]
    metrics = pool_summary(env, [tasks[i] for i in sorted(pools)], rewards, mode="single")
    assert summary["best_at_k"] == {"best@1": round(metrics["best@1"], 6), "best@3": round(metrics["best@3"], 6)}
    assert summary["pass_at_k"]["pass@3"] == round(metrics["pass@3"], 6)
    assert summary["expected_best_at_k"]["E_w[best@3]"] == round(metrics["E_w[best@3]"], 6)
    assert summary["best_at_k[answer_f1]"]["best@3"] == round(metrics["best@3[answer_f1]"], 6)
    assert summary["reward_diversity"] == round(float(np.mean([reward_diversity(r[:, 0]) for r in rewards])), 6)
    assert summary["chain_pass_at_k"]["chain_pass@3"] == round(metrics["chain_pass@3"], 6)
    assert summary["solution_pass_at_k"]["solution_pass@3"] == round(metrics["solution_pass@3"], 6)
    assert summary["pareto_fraction"] == round(metrics["pareto_fraction"], 6)
    assert summary["mean_reward"]["gold"] == round(float(np.mean([r[..., 1].mean() for r in rewards])), 6)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from([0.0, 0.5, 1.0]), st.sampled_from([0.0, 1.0]), st.sampled_from([0.0, 0.25])),
        min_size=0,
        max_size=12,
    )
)
def test_validity_metrics_match_a_plain_count(rows):
    from vpo_core.evaluation.metrics import validity_metrics
    from vpo_core.metrics import reward_diversity

    rewards = np.array(rows, dtype=np.float64).reshape(-1, 3)
    pareto = np.array([[1.0, 1.0, 0.25], [0.5, 0.0, 0.0]])
    out = validity_metrics(rewards, pareto)
    valid = [r for r in rows if any(v != 0.0 for v in r)]
    assert out["valid"] == (len(valid) / len(rows) if rows else 0.0)
    assert out["distinct_valid"] == len(set(valid))
    pairs = [sum(abs(a - b) for a, b in zip(x, y, strict=True)) for i, x in enumerate(valid) for y in valid[i + 1 :]]
    expected = float(np.mean(pairs)) if pairs else 0.0
    assert np.isclose(out["diversity_valid"], expected)
    if len(valid) >= 2:
        assert np.isclose(out["diversity_valid"], reward_diversity(np.array(valid)))
    assert out["pareto_covered"] == sum(tuple(p) in set(valid) for p in pareto.tolist()) / 2
    assert "pareto_covered" not in validity_metrics(rewards, None)


def test_maze_pool_reports_validity_and_pareto_coverage():
    import vpo_core
    from vpo_core.evaluation.metrics import task_pool_metrics

    env = vpo_core.make("maze-v1")
    task = env.tasks("test")[0]
    front = env.pareto_front(task)
    assert front.shape[1] == 4
    assert len(front) >= 2
    # a pool holding the first Pareto point twice, one failed route and one dominated valid vector
    pool = np.stack([front[0], front[0], np.zeros(4), np.array([1.0, 0.0, 0.0, 1.0])])[:, None, :]
    out = task_pool_metrics(env, task, pool, mode="single", ks=(1,))
    assert out["valid"] == 0.75
    assert out["distinct_valid"] == 2.0
    assert out["pareto_covered"] == 1 / len(front)


def test_a_k_larger_than_the_pool_is_refused_when_asked_and_named_by_default(caplog):
    from vpo_core.errors import ConfigError

    env = ToyEnv()
    tasks = env.tasks("test")
    rewards = np.random.default_rng(0).integers(0, 2, size=(len(tasks), 7, 1, 3)).astype(float)
    with pytest.raises(ConfigError, match=r"k = 10, 30 is larger than the pools: task toy/test/0 has 7 candidates"):
        pool_summary(env, tasks, list(rewards), mode="single", ks=(1, 5, 10, 30))
    with pytest.raises(ConfigError, match="k = 8 is larger"):
        pool_summary(env, tasks, list(rewards), mode="single", ks=(8,))
    with pytest.raises(ConfigError, match="integers >= 1"):
        pool_summary(env, tasks, list(rewards), mode="single", ks=(0, 2))
    assert "best@7" in pool_summary(env, tasks, list(rewards), mode="single", ks=(7,))
    for default in (None, KS):  # the paper's k: each where the pools allow, the rest named
        caplog.clear()
        with caplog.at_level("WARNING", logger="vpo_core.evaluation.metrics"):
            got = pool_summary(env, tasks, list(rewards), mode="single", ks=default)
        assert "best@5" in got
        assert "best@10" not in got
        assert "k = 10, 30 are not reported: the smallest pool has 7 candidates" in caplog.text


def test_evaluate_policy_refuses_a_k_beyond_its_pools_before_sampling():
    from vpo_core.errors import ConfigError
    from vpo_core.evaluation import evaluate_policy
    from vpo_core.sampling_settings import SamplingSettings

    class Counting:
        calls = 0

        def prompt_text(self, messages):
            return messages[-1]["content"]

        def sample(self, prompts, **kwargs):
            Counting.calls += 1
            return ["5"] * len(prompts) * kwargs["num_samples"]

    env = ToyEnv()
    how = {"name": "x", "mode": "single", "m": 1, "samples": 4, "settings": SamplingSettings(1.0, 1.0, 4)}
    with pytest.raises(ConfigError, match=r"k = 10 is larger than the pools: 4 samples x 2 seed\(s\) give 8"):
        evaluate_policy(Counting(), env, env.tasks("test"), seeds=2, ks=(1, 10), **how)
    assert Counting.calls == 0
    result = evaluate_policy(Counting(), env, env.tasks("test"), seeds=2, ks=(1, 8), **how)
    assert "best@8" in result.metrics


def test_pareto_points_with_non_dyadic_coordinates_are_found_in_float32_pools():
    # Pools are saved in float32 and the solver's fronts are float64: 0.2 stored as float32 is 0.2 + 3e-9, which
    # an exact (1e-9) comparison never matched, so such Pareto points counted as missing.
    import vpo_core
    from vpo_core.evaluation.metrics import task_pool_metrics, validity_metrics

    env = vpo_core.make("maze-v1")
    task = next(t for t in env.tasks("test") if np.any(env.pareto_front(t).astype(np.float32) != env.pareto_front(t)))
    front = env.pareto_front(task)
    pool = front.astype(np.float32)[:, None, :]  # every Pareto point once, as a saved pool holds it
    assert task_pool_metrics(env, task, pool, mode="single", ks=(1,))["pareto_covered"] == 1.0
    point = np.array([[1.0, 0.4, 0.2, 1.0]])
    assert validity_metrics(point.astype(np.float32), point)["pareto_covered"] == 1.0
    assert validity_metrics(point.astype(np.float32) + 1e-4, point)["pareto_covered"] == 0.0  # a near miss is a miss
    assert validity_metrics(np.array([[3.0, 7.3]], dtype=np.float32), np.array([[3.0, 7.3]]))["pareto_covered"] == 1.0


def test_no_valid_and_best_at_k_split_by_reach():
    env = ToyEnv()
    tasks = env.tasks("test")
    rng = np.random.default_rng(8)
    rewards = rng.integers(1, 3, size=(len(tasks), 6, 1, 3)) / 2.0
    rewards[1] = 0.0  # task 1: no valid candidate
    rewards[3, :, :, :] = 0.0
    rewards[3, 0, 0] = [0.0, 0.5, 0.0]  # task 3: one valid candidate (not all-zero) is enough to reach it
    rows = [task_pool_metrics(env, t, p, mode="single", ks=(1, 5)) for t, p in zip(tasks, rewards, strict=True)]
    assert [row["no_valid"] for row in rows] == [0.0, 1.0, 0.0, 0.0, 0.0]
    got = pool_summary(env, tasks, list(rewards), per_task=rows, mode="single", ks=(1, 5))
    assert got["no_valid"] == pytest.approx(1 / 5)
    best5 = np.array([row["best@5"] for row in rows])
    assert got["best@5|reached"] == pytest.approx(best5[[0, 2, 3, 4]].mean())
    assert got["best@5|unreached"] == pytest.approx(best5[1])
    assert got["best@5"] == pytest.approx((4 * got["best@5|reached"] + got["best@5|unreached"]) / 5)
    all_reached = pool_summary(env, [tasks[0], tasks[2]], list(rewards[[0, 2]]), mode="single", ks=(1,))
    assert all_reached["no_valid"] == 0.0
    assert "best@1|unreached" not in all_reached  # no such task: left out, not NaN


def test_split_by_reach_parts_add_up_and_check_their_input():
    from vpo_core.evaluation.metrics import split_by_reach

    values = np.array([[0.5, -0.2, 0.1], [0.3, 0.0, 0.4]])
    reached = np.array([[True, False, True], [False, False, True]])
    parts = split_by_reach(values, reached)
    np.testing.assert_array_equal(parts["reached"], [[0.5, 0.0, 0.1], [0.0, 0.0, 0.4]])
    np.testing.assert_array_equal(parts["unreached"], [[0.0, -0.2, 0.0], [0.3, 0.0, 0.0]])
    np.testing.assert_allclose(parts["reached"] + parts["unreached"], values)
    with pytest.raises(ValueError, match="shape"):
        split_by_reach(values, reached[:1])
    with pytest.raises(ValueError, match="booleans"):
        split_by_reach(values, values)
