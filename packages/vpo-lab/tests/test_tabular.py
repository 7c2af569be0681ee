"""The tabular mechanism engine: gradient, de-duplication, priors, determinism, evaluation (no env needed)."""

import numpy as np
import pytest

from vpo_core.multi_answer import dedupe_reward_rows
from vpo_core.types import OutcomeTable
from vpo_lab.tabular import Start, TabularPolicy, evaluate_policy, stack_tables, train_policy
from vpo_lab.tabular.policy import Adam
from vpo_lab.tabular.study import arm, run_study
from vpo_lab.tabular.train import dedupe_rollouts, method_advantages

W = np.full(3, 1 / 3)


def _table(task_id: str, n_valid: int, n_invalid: int, seed: int) -> OutcomeTable:
    rng = np.random.default_rng(seed)
    valid_rewards = np.column_stack([np.ones(n_valid), rng.random((n_valid, 2))])
    rewards = np.concatenate([valid_rewards, np.zeros((n_invalid, 3))])
    pareto = np.zeros(n_valid + n_invalid, dtype=bool)
    pareto[np.argmax(valid_rewards[:, 1])] = pareto[np.argmax(valid_rewards[:, 2])] = True
    return OutcomeTable(
        task_id=task_id,
        rewards=rewards,
        valid=np.arange(n_valid + n_invalid) < n_valid,
        pareto=pareto,
        effort=np.concatenate([rng.integers(0, 4, n_valid).astype(float), np.zeros(n_invalid)]),
        texts=tuple(f"answer {i}" for i in range(n_valid + n_invalid)),
    )


def _candidates(variants: int = 1):
    return stack_tables([_table("t0", 5, 2, 0), _table("t1", 3, 1, 1)], variants=variants)


def _random_policy(m: int, seed: int) -> TabularPolicy:
    candidates = _candidates(variants=2)
    prior = Start("s", 0.5, 0.3).prior(candidates)
    policy = TabularPolicy(prior, candidates.real, m)
    rng = np.random.default_rng(seed)
    policy.a += rng.normal(size=policy.a.shape)
    policy.b += rng.normal(size=policy.b.shape)
    return policy


@pytest.mark.parametrize("m", [1, 3])
def test_reinforce_gradient_matches_finite_differences(m):
    policy = _random_policy(m, seed=m)
    rng = np.random.default_rng(7)
    choices = policy.sample(rng, 6)
    advantages = rng.normal(size=choices.shape[:2])
    g = choices.shape[1]

    def objective() -> float:
        return float(np.sum(advantages * policy.log_prob(choices)) / g)

    grad = policy.gradient(choices, advantages)
    dense_b = policy.dense_b_gradient(grad)
    h = 1e-6
    checked = 0
    for array, analytic in ((policy.a, grad.a), (policy.b, dense_b)):
        flat, flat_grad = array.reshape(-1), analytic.reshape(-1)
        real = np.broadcast_to(
            policy.real[:, None, None, :] if array.ndim == 4 else policy.real[:, None, :], array.shape
        )
        picks = np.flatnonzero(real.reshape(-1))
        for i in np.random.default_rng(0).choice(picks, size=min(60, picks.size), replace=False):
            old = flat[i]
            flat[i] = old + h
            up = objective()
            flat[i] = old - h
            down = objective()
            flat[i] = old
            assert (up - down) / (2 * h) == pytest.approx(flat_grad[i], abs=1e-7)
            checked += 1
    assert checked > 60 if m > 1 else checked > 0
    if m > 1:
        assert np.any(dense_b != 0)  # the pair tables do get a gradient


def test_sampling_follows_the_policy():
    policy = _random_policy(3, seed=4)
    choices = policy.sample(np.random.default_rng(0), 40_000)
    # slot 1 of task 0 is a plain softmax of a[0, 0]
    logits = np.where(policy.real[0], policy.a[0, 0], -np.inf)
    expected = np.exp(logits - logits.max())
    expected /= expected.sum()
    observed = np.bincount(choices[0, :, 0], minlength=expected.size) / choices.shape[1]
    assert np.abs(observed - expected).max() < 0.01
    assert policy.real[np.arange(2)[:, None, None], choices].all()  # padding is never drawn


def test_vectorised_dedup_equals_dedupe_reward_rows():
    rng = np.random.default_rng(3)
    keys = rng.integers(0, 3, size=(5, 7, 3))
    rewards = rng.random((5, 7, 3, 4))
    got = dedupe_rollouts(rewards, keys)
    for t in range(5):
        for g in range(7):
            want = dedupe_reward_rows(rewards[t, g], [int(k) for k in keys[t, g]])
            np.testing.assert_array_equal(got[t, g], want)


def test_variants_share_the_outcome_but_not_the_key():
    candidates = _candidates(variants=3)
    assert candidates.shape == (2, 21, 3)
    assert np.array_equal(candidates.outcome[0, :6], [0, 0, 0, 1, 1, 1])
    assert len(set(candidates.key[0, : 7 * 3].tolist())) == 21
    assert not candidates.real[1, 12:].any()
    assert candidates.real[1, :12].all()


def test_start_prior_masses():
    candidates = _candidates(variants=2)
    prior = Start("hard", 0.75, 0.7).prior(candidates)
    np.testing.assert_allclose(prior.sum(axis=1), 1.0)
    np.testing.assert_allclose((prior * (candidates.real & ~candidates.valid)).sum(axis=1), 0.75)
    assert np.all(prior[~candidates.real] == 0)
    valid = candidates.valid[0]
    efforts, masses = candidates.effort[0][valid], prior[0][valid]
    low, high = np.argmin(efforts), np.argmax(efforts)
    assert masses[low] / masses[high] == pytest.approx(np.exp(0.7 * (efforts[high] - efforts[low])))


def test_bad_tables_and_starts_are_refused():
    with pytest.raises(ValueError, match="no valid outcome"):
        OutcomeTable("x", np.zeros((2, 3)), np.zeros(2, bool), np.zeros(2, bool), np.zeros(2), ("a", "b"))
    with pytest.raises(ValueError, match="invalid_mass"):
        Start("s", 1.0)
    with pytest.raises(ValueError, match="same reward dimension"):
        stack_tables(
            [
                _table("a", 2, 1, 0),
                OutcomeTable("b", np.ones((1, 2)), np.ones(1, bool), np.ones(1, bool), np.zeros(1), ("x",)),
            ]
        )


def test_training_is_deterministic_and_moves_the_policy():
    candidates = _candidates(variants=2)
    prior = Start("s", 0.5).prior(candidates)

    def run():
        fn = method_advantages("vpo", w_star=W, seed=1, task_ids=candidates.task_ids)
        return list(train_policy(candidates, prior, m=3, advantage_fn=fn, steps=5, checkpoints=[0, 5], seed=1))

    first, second = run(), run()
    np.testing.assert_array_equal(first[1].policy.a, second[1].policy.a)
    np.testing.assert_array_equal(first[1].policy.b, second[1].policy.b)
    assert not np.array_equal(first[0].policy.a, first[1].policy.a)


def test_adam_ascends_the_objective():
    policy = _random_policy(1, seed=2)
    optimiser = Adam(policy, lr=0.05)
    target = np.zeros_like(policy.a)
    target[:, 0, 0] = 1.0  # push candidate 0 up
    before = policy.a[:, 0, 0] - policy.a[:, 0, 1]
    from vpo_lab.tabular.policy import Gradient

    optimiser.step(Gradient(target, np.zeros(0, dtype=np.int64), np.zeros((0, policy.a.shape[2]))))
    assert np.all(policy.a[:, 0, 0] - policy.a[:, 0, 1] > before)


def test_evaluation_of_a_deterministic_policy():
    candidates = _candidates()
    prior = np.where(candidates.real, 1e-12, 0.0)
    best = np.array([np.argmax(np.where(candidates.valid[t], candidates.rewards[t] @ W, -1)) for t in range(2)])
    prior[np.arange(2), best] = 1.0
    metrics = evaluate_policy(TabularPolicy(prior, candidates.real, 1), candidates, W, rng=np.random.default_rng(0))
    assert metrics["best_at_k"].shape == (2, 30)
    want = np.broadcast_to((candidates.rewards[np.arange(2), best] @ W)[:, None], (2, 30))
    np.testing.assert_allclose(metrics["best_at_k"], want, atol=1e-9)
    np.testing.assert_allclose(metrics["completion"], 1.0)
    np.testing.assert_allclose(metrics["diversity"], 0.0, atol=1e-9)
    np.testing.assert_allclose(metrics["distinct_valid"], 1.0)


def test_every_registered_method_runs_in_a_study():
    from vpo_core.methods import METHODS

    candidates = _candidates()
    arms = [arm(name, w_star=W, task_ids=candidates.task_ids) for name in METHODS]
    result = run_study(
        candidates, w_star=W, starts=[Start("s", 0.5)], arms=arms, seeds=[0, 1], steps=3, checkpoints=[0, 3],
        n_candidates=60,
    )  # fmt: skip
    summary = result.summary(replicates=200)
    assert set(summary["s"]) == set(METHODS) >= {"vpo_w_star_max", "vpo_k1", "vpo_unshared"}
    cell = summary["s"]["vpo"]["3"]
    assert len(cell["best_at_k"]) == 30
    assert cell["completion"]["low"] <= cell["completion"]["high"]
    assert set(result.paired("vpo", "s", 3, "best_at_k", k=3)) == set(METHODS) - {"vpo"}
    with pytest.raises(ValueError, match="unknown method"):
        arm("nope", w_star=W, task_ids=candidates.task_ids)


def test_text_env_hooks_default_to_none():
    from vpo_core import RewardSpec, Task, TextEnv

    class Plain(TextEnv):
        env_id = "plain-v0"
        reward_spec = RewardSpec.uniform(["a"], ["A"])

        def tasks(self, split):
            return [Task(id="plain/0", split=split, index=0, payload=None)]

        def _render_prompt(self, task, mode, m):
            return [{"role": "user", "content": "?"}]

        def _parse(self, task, completion, mode, m):
            return []

        def reward(self, task, candidate):
            return np.zeros(1)

    env = Plain()
    task = env.tasks("test")[0]
    assert env.pareto_front(task) is None
    assert env.outcome_table(task) is None


# ------------------------------------------------------------------ the mechanism's controls (issue 38)
CONTROLS = ("vpo_w_star_max", "vpo_k1", "vpo_unshared")


def test_controls_on_a_group_of_identical_rollouts():
    """VPO and its shared-weighting controls give a group of identical sets no advantage; the unshared
    control scores each rollout under its own weighting, so identical sets get non-zero advantages (by
    design: it is not permutation-equivariant), zero-mean in the group and fixed by (seed, key)."""
    rng = np.random.default_rng(5)
    one_set = rng.random((1, 1, 3, 3))
    rewards = np.broadcast_to(one_set, (2, 8, 3, 3)).copy()  # 2 groups of 8 copies of one set
    keys = ["0:t0", "0:t1"]
    for name in ("vpo", "vpo_w_star_max", "vpo_k1"):
        fn = method_advantages(name, w_star=W, seed=0, task_ids=["t0", "t1"])
        np.testing.assert_array_equal(fn(rewards, keys), 0.0)
    unshared = method_advantages("vpo_unshared", w_star=W, seed=0, task_ids=["t0", "t1"])
    advantages = unshared(rewards, keys)
    assert advantages.shape == (2, 8)
    assert np.all(np.abs(advantages).max(axis=1) > 0.5)  # z-scored noise, not zero
    np.testing.assert_allclose(advantages.mean(axis=1), 0.0, atol=1e-12)
    np.testing.assert_array_equal(advantages, unshared(rewards, keys))  # keyed, so reproducible
    assert not np.array_equal(advantages, unshared(rewards, ["1:t0", "1:t1"]))  # fresh draws every step
    other_seed = method_advantages("vpo_unshared", w_star=W, seed=1, task_ids=["t0", "t1"])
    assert not np.array_equal(advantages, other_seed(rewards, keys))


@pytest.mark.parametrize("name", CONTROLS)
def test_each_control_trains_deterministically_and_differs_from_vpo(name):
    candidates = _candidates(variants=2)
    prior = Start("s", 0.5).prior(candidates)

    def run(method: str):
        fn = method_advantages(method, w_star=W, seed=2, task_ids=candidates.task_ids)
        (last,) = train_policy(candidates, prior, m=3, advantage_fn=fn, steps=30, checkpoints=[30], seed=2)
        return last.policy

    first, second, vpo = run(name), run(name), run("vpo")
    np.testing.assert_array_equal(first.a, second.a)
    np.testing.assert_array_equal(first.b, second.b)
    assert not np.allclose(first.a, vpo.a)  # same rollout seed, another advantage rule


def test_seed_means_are_the_per_seed_task_means():
    candidates = _candidates()
    arms = [arm(name, w_star=W, task_ids=candidates.task_ids) for name in ("vpo", *CONTROLS)]
    result = run_study(
        candidates, w_star=W, starts=[Start("s", 0.5)], arms=arms, seeds=[0, 1, 2], steps=4, checkpoints=[4],
        n_candidates=60,
    )  # fmt: skip
    for name in ("vpo", *CONTROLS):
        means = result.seed_means("s", name, 4, "e_w_best_at_5")
        assert means.shape == (3,)
        np.testing.assert_allclose(means, result.metric("s", name, 4, "e_w_best_at_5").mean(axis=1))
    np.testing.assert_allclose(
        result.seed_means("s", "vpo_k1", 4, "best_at_k", k=3), result.metric("s", "vpo_k1", 4, "best_at_k", 3).mean(1)
    )
    paired = result.paired("vpo", "s", 4, "e_w_best_at_5")
    assert set(paired) == set(CONTROLS)
    for name, cell in paired.items():
        diff = result.seed_means("s", "vpo", 4, "e_w_best_at_5") - result.seed_means("s", name, 4, "e_w_best_at_5")
        assert cell["estimate"] == pytest.approx(diff.mean())
        assert cell["low"] <= cell["estimate"] <= cell["high"]
