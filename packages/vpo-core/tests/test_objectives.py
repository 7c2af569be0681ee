import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_core.objectives import linear_reward, multi_rlvr_reward, vpo_reward


def test_tv5_vpo_scores():
    R = np.array([[[1, 0], [0, 1]], [[1, 0], [1, 0]], [[0.5, 0.5], [0, 0]]], float)
    W = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])
    assert np.allclose(vpo_reward(R, W), [11 / 15, 8 / 15, 0.5])


def _loop_vpo(R, W):
    out = []
    for rollout in R:
        total = 0.0
        for w in W:
            total += max(sum(wi * ri for wi, ri in zip(w, row, strict=True)) for row in rollout)
        out.append(total / len(W))
    return out


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 5), st.integers(1, 4), st.integers(1, 4), st.integers(1, 6), st.integers(0, 10**6))
def test_vpo_matches_python_loop(g, m, d, k, seed):
    rng = np.random.default_rng(seed)
    R = rng.random((g, m, d))
    W = rng.dirichlet(np.ones(d), size=k)
    assert np.allclose(vpo_reward(R, W), _loop_vpo(R, W))


def test_vpo_broadcast_per_group_weights():
    rng = np.random.default_rng(0)
    R = rng.random((2, 3, 4, 5))
    W = rng.random((2, 1, 7, 5))
    out = vpo_reward(R, W)
    assert out.shape == (2, 3)
    for b in range(2):
        assert np.allclose(out[b], _loop_vpo(R[b], W[b, 0]))


def test_linear_and_multi_rlvr():
    w = np.full(4, 0.25)
    assert linear_reward(np.array([1.0, 1, 0, 0]), w) == pytest.approx(0.5)
    rows = np.array([[1.0, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])  # TV11 after de-dup + pad
    assert multi_rlvr_reward(rows, w) == pytest.approx(0.5)
    assert np.allclose(multi_rlvr_reward(np.stack([rows, 2 * rows / 2]), w), [0.5, 0.5])


def test_bad_input():
    with pytest.raises(ValueError, match=r"(?i)finite|nan"):
        vpo_reward(np.full((2, 2, 2), np.nan), np.ones((1, 2)) / 2)
    with pytest.raises(ValueError, match=r"rewards have d=3 but weights have d=2"):
        vpo_reward(np.ones((2, 2, 3)), np.ones((1, 2)) / 2)
    with pytest.raises(ValueError, match=r"rewards have d=3 but w has d=2"):
        linear_reward(np.ones((2, 3)), np.ones(2))


# ------------------------------------------------------------------ the mechanism's controls (issue 38)
@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.integers(2, 6), st.integers(2, 4))
def test_vpo_with_a_huge_alpha_becomes_best_of_m_under_the_uniform_w_star(seed, n_groups, n_rollouts, d):
    from vpo_core.advantages import AdvantageConfig, RolloutBatch, rollout_scalars

    rng = np.random.default_rng(seed)
    rewards = rng.random((n_groups, n_rollouts, 3, d))
    w_star = np.full(d, 1.0 / d)  # Dir(alpha·1_d) concentrates on the uniform weighting as alpha grows
    huge = rollout_scalars(
        RolloutBatch.of(rewards, w_star=w_star), AdvantageConfig.parse("vpo", alpha=1e8, num_weights=16, seed=seed)
    )
    control = rollout_scalars(
        RolloutBatch.of(rewards, w_star=w_star), AdvantageConfig.parse("vpo_w_star_max", seed=seed)
    )
    np.testing.assert_allclose(control, (rewards @ w_star).max(axis=-1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(huge, control, rtol=0, atol=1e-3)
    # at alpha = 1 the draws spread over the simplex, and the set reward is not the control's
    spread = rollout_scalars(
        RolloutBatch.of(np.eye(d)[None, None, :3], w_star=w_star),
        AdvantageConfig.parse("vpo", alpha=1.0, num_weights=64, seed=seed),
    )
    assert abs(spread.item() - 1.0 / d) > 0.05


def test_vpo_k1_is_vpo_with_one_draw_and_vpo_unshared_scores_each_rollout_under_its_own_draw():
    from vpo_core.advantages import AdvantageConfig, RolloutBatch, rollout_scalars
    from vpo_core.weights import group_weights

    rng = np.random.default_rng(3)
    rewards = rng.random((3, 4, 3, 2))
    keys = ["a", "b", "c"]
    w_star = np.array([0.5, 0.5])
    k1 = rollout_scalars(
        RolloutBatch.of(rewards, w_star=w_star, keys=keys), AdvantageConfig.parse("vpo_k1", seed=7, num_weights=100)
    )
    np.testing.assert_array_equal(
        k1,
        rollout_scalars(
            RolloutBatch.of(rewards, w_star=w_star, keys=keys), AdvantageConfig.parse("vpo", seed=7, num_weights=1)
        ),
    )
    unshared = rollout_scalars(
        RolloutBatch.of(rewards, w_star=w_star, keys=keys), AdvantageConfig.parse("vpo_unshared", seed=7)
    )
    for b, key in enumerate(keys):
        weights = group_weights(2, 1, [(key, "rollout", g) for g in range(4)], seed=7)[:, 0]  # (G, d)
        assert len({tuple(w) for w in weights}) == 4  # every rollout of the group has its own weighting
        np.testing.assert_allclose(unshared[b], (rewards[b] * weights[:, None, :]).sum(-1).max(-1), atol=1e-12)
