"""Advantages: the reference test vectors TV1-TV11, brute force, and properties."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from vpo_core import METHODS, AdvantageConfig, RolloutBatch, compute_advantages
from vpo_core.advantages import rollout_scalars
from vpo_core.layout import group_layout, zscore_by_index
from vpo_core.normalizers import (
    gdpo_advantages,
    group_zscore,
    max_at_k_advantages,
    max_at_k_transform,
    maxrl_advantages,
)
from vpo_core.objectives import linear_reward, multi_rlvr_reward, vpo_reward
from vpo_core.weights import dirichlet_weights, group_weights, stable_seed

X = np.array([[0.1, 0.5, 0.3, 0.9]])


def _goal(method: str, n_groups: int, d: int) -> dict:
    """The goal weights a goal-conditioned batch needs (uniform), or nothing for other methods."""
    return {"goal_weights": np.full((n_groups, d), 1.0 / d)} if METHODS[method].goal_prompt else {}


# ------------------------------------------------------------------------------ test vectors
def test_tv2_zscores():
    np.testing.assert_allclose(group_zscore(X, std="unbiased"), [[-1.024692, 0.146385, -0.439154, 1.317461]], atol=1e-6)
    np.testing.assert_allclose(group_zscore(X), [[-1.183212, 0.169030, -0.507091, 1.521273]], atol=1e-6)
    assert np.all(group_zscore(np.full((2, 5), 0.3)) == 0)
    assert np.all(group_zscore(np.full((2, 5), 0.3), std="unbiased") == 0)
    np.testing.assert_allclose(group_zscore([[0.7]], std="unbiased"), [[0.6999993]], atol=1e-7)
    assert group_zscore([[0.7]])[0, 0] == 0.0


@pytest.mark.parametrize(
    ("k", "s"),
    [
        (1, [1 / 40, 1 / 8, 3 / 40, 9 / 40]),
        (2, [17 / 60, 19 / 60, 17 / 60, 9 / 20]),
        (3, [23 / 40, 23 / 40, 23 / 40, 27 / 40]),
        (4, [9 / 10] * 4),
    ],
)
def test_tv1_max_at_k_weights(k, s):
    got = max_at_k_transform(X, k)[0]
    np.testing.assert_allclose(got, s, atol=1e-15)
    assert got.sum() == pytest.approx(k * {1: 9 / 20, 2: 2 / 3, 3: 4 / 5, 4: 9 / 10}[k])


def test_tv3_max_at_k_baseline():
    np.testing.assert_allclose(
        max_at_k_advantages(X, 2, std="unbiased"), [[-0.630118, -0.210039, -0.630118, 1.470276]], atol=1e-6
    )
    np.testing.assert_allclose(
        max_at_k_advantages(X, 2, std="unbiased", eps=0.0), [np.array([-3, -1, -3, 7]) / math.sqrt(68 / 3)], atol=1e-12
    )


def test_tv4_maxrl():
    b = np.array([[1, 0, 0, 1, 0, 0, 0, 0]], dtype=float)
    got = maxrl_advantages(b)[0]
    np.testing.assert_allclose(got[b[0] == 1], 2.999988, atol=1e-6)
    np.testing.assert_allclose(got[b[0] == 0], -0.999996, atol=1e-6)
    np.testing.assert_allclose(maxrl_advantages(b, divide_by_n=True)[0, 0], 0.374999, atol=1e-6)
    np.testing.assert_allclose(maxrl_advantages(b, eps=0.0)[0, :2], [3.0, -1.0])
    assert np.all(maxrl_advantages(np.zeros((1, 8))) == 0)


TV5_R = np.array([[[1, 0], [0, 1]], [[1, 0], [1, 0]], [[0.5, 0.5], [0, 0]]], dtype=float)
TV5_W = np.array([[0.9, 0.1], [0.5, 0.5], [0.2, 0.8]])


def test_tv5_vpo():
    scores = vpo_reward(TV5_R, TV5_W)
    np.testing.assert_allclose(scores, [11 / 15, 8 / 15, 1 / 2], atol=1e-15)
    np.testing.assert_allclose(group_zscore(scores[None])[0], [1.401812, -0.539159, -0.862654], atol=1e-6)
    np.testing.assert_allclose(
        group_zscore(scores[None], eps=0.0)[0], np.array([13, -5, -8]) / math.sqrt(86), atol=1e-12
    )
    empty = TV5_R.copy()
    empty[2] = 0.0
    np.testing.assert_allclose(
        group_zscore(vpo_reward(empty, TV5_W)[None], eps=0.0)[0], np.array([14, 5, -19]) / math.sqrt(194), atol=1e-12
    )


def test_tv10_gdpo():
    groups = np.array([[[1, 0], [0, 1], [1, 1]], [[0.5, 0.5], [0.5, 0.5], [0, 1]]], dtype=float)
    np.testing.assert_allclose(
        gdpo_advantages(groups, std="unbiased").ravel(), [-0.912871, -0.912871, 1.825742, 0, 0, 0], atol=1e-6
    )
    np.testing.assert_allclose(
        gdpo_advantages(groups, std="unbiased", response_lengths=[[2, 1, 1], [1, 1, 2]]).ravel(),
        [-0.882919, -0.882919, 2.144231, 0.126131, 0.126131, 0.126131],
        atol=1e-6,
    )
    np.testing.assert_allclose(
        compute_advantages(
            RolloutBatch.of(groups[:, :, None, :], w_star=[0.5, 0.5]), AdvantageConfig.parse("gdpo", std="unbiased")
        ).ravel(),
        [-0.912871, -0.912871, 1.825742, 0, 0, 0],
        atol=1e-6,
    )


def test_tv11_multi_rlvr():
    deduped = np.array([[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]], dtype=float)
    assert multi_rlvr_reward(deduped, np.full(4, 0.25)) == pytest.approx(0.5)
    np.testing.assert_allclose(
        group_zscore([[0.5, 1.75, 0.0]], std="unbiased"), [[-0.277350, 1.109399, -0.832049]], atol=1e-6
    )


# -------------------------------------------------------------------------------- brute force
def _brute_s(x: np.ndarray, k: int) -> np.ndarray:
    n = len(x)
    s = np.zeros(n)
    subsets = list(itertools.combinations(range(n), k))
    for subset in subsets:
        best = max(x[list(subset)])
        for i in subset:
            s[i] += best
    return s / len(subsets)


@settings(max_examples=60, deadline=None)
@given(hnp.arrays(np.float64, st.integers(1, 7), elements=st.sampled_from([0.0, 0.25, 0.5, 1.0, 0.3])), st.data())
def test_max_at_k_transform_equals_subset_enumeration(x, data):
    k = data.draw(st.integers(1, len(x)))
    np.testing.assert_allclose(max_at_k_transform(x[None], k)[0], _brute_s(x, k), atol=1e-12)


def test_vpo_scalars_equal_a_plain_loop():
    rng = np.random.default_rng(1)
    rewards = rng.random((5, 4, 3, 6))
    keys = [f"uid-{i}" for i in range(5)]
    got = rollout_scalars(
        RolloutBatch.of(rewards, w_star=np.full(6, 1 / 6), keys=keys),
        AdvantageConfig.parse("vpo", num_weights=17, seed=9),
    )
    for b in range(5):
        w = dirichlet_weights(6, 17, seed=9, key=keys[b])
        for g in range(4):
            expected = np.mean([max(float(w[k] @ rewards[b, g, j]) for j in range(3)) for k in range(17)])
            assert got[b, g] == pytest.approx(expected, rel=1e-5)


def test_vpo_scalar_converges_to_the_population_objective():
    # R(S) = E_w[max(w·r1, w·r2)] for r1 = e1, r2 = e2 in d = 2 is E[max(u, 1-u)] = 3/4
    rewards = np.array([[[[1.0, 0.0], [0.0, 1.0]]]])
    got = rollout_scalars(
        RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse("vpo", num_weights=200_000)
    )[0, 0]
    assert got == pytest.approx(0.75, abs=3e-3)


# --------------------------------------------------------------------------------- properties
# vpo_unshared keys each rollout's weighting by its position in the group: by design it does not permute
@settings(max_examples=40, deadline=None)
@given(st.sampled_from(sorted(set(METHODS) - {"vpo_unshared"})), st.integers(0, 2**31 - 1))
def test_advantages_permute_with_rollouts_and_groups(method, seed):
    rng = np.random.default_rng(seed)
    m = 1 if METHODS[method].mode == "single" else 3
    rewards = rng.integers(0, 3, size=(3, 6, m, 4)) / 2.0
    keys = ["a", "b", "c"]
    goal = rng.dirichlet(np.ones(4), size=3) if METHODS[method].goal_prompt else None
    base = compute_advantages(
        RolloutBatch.of(rewards, w_star=np.full(4, 0.25), keys=keys, goal_weights=goal),
        AdvantageConfig.parse(method, seed=seed),
    )
    perm = rng.permutation(6)
    shuffled = compute_advantages(
        RolloutBatch.of(rewards[:, perm], w_star=np.full(4, 0.25), keys=keys, goal_weights=goal),
        AdvantageConfig.parse(method, seed=seed),
    )
    np.testing.assert_allclose(shuffled, base[:, perm], atol=1e-12)
    order = [2, 0, 1]
    regrouped = compute_advantages(
        RolloutBatch.of(
            rewards[order],
            w_star=np.full(4, 0.25),
            keys=[keys[i] for i in order],
            goal_weights=None if goal is None else goal[order],
        ),
        AdvantageConfig.parse(method, seed=seed),
    )
    np.testing.assert_allclose(regrouped, base[order], atol=1e-12)
    assert np.all(np.isfinite(base))


@pytest.mark.parametrize("method", sorted(set(METHODS) - {"vpo_unshared"}))
def test_identical_rollouts_get_zero_advantage(method):
    # not vpo_unshared: it scores each rollout under a weighting of its own, so equal answers differ by design
    m = 1 if METHODS[method].mode == "single" else 3
    rewards = np.broadcast_to(np.array([0.2, 1.0, 0.0, 0.5]), (2, 8, m, 4)).copy()
    assert np.array_equal(
        compute_advantages(
            RolloutBatch.of(rewards, w_star=np.full(4, 0.25), **_goal(method, 2, 4)), AdvantageConfig.parse(method)
        ),
        np.zeros((2, 8)),
    )


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.integers(1, 40))
def test_vpo_copies_of_a_rollout_get_bit_identical_scalars(seed, m, d):
    # A rollout's position in the batch must not change its score (a (G·m, d) @ (d, K) product per group
    # may round rows differently by position; a float32 product did): copies sit at positions 0, 3 and 8,
    # on both sides of any kernel block edge, and group 2 is all copies, so its advantages must be exactly 0.
    rng = np.random.default_rng(seed)
    rewards = rng.random((3, 9, m, d)) * rng.choice([1.0, 10.0, 1000.0])
    rewards[:, 3] = rewards[:, 0]
    rewards[:, 8] = rewards[:, 0]
    rewards[2] = rewards[2, 5]  # group 2: every rollout the same
    scalars = rollout_scalars(
        RolloutBatch.of(rewards, w_star=np.full(d, 1 / d)), AdvantageConfig.parse("vpo", num_weights=37, seed=seed)
    )
    assert np.array_equal(scalars[:, 3], scalars[:, 0])
    assert np.array_equal(scalars[:, 8], scalars[:, 0])
    assert np.all(
        compute_advantages(
            RolloutBatch.of(rewards, w_star=np.full(d, 1 / d)), AdvantageConfig.parse("vpo", num_weights=37, seed=seed)
        )[2]
        == 0.0
    )
    reference = vpo_reward(rewards, group_weights(d, 37, range(3), seed=seed)[:, None])
    np.testing.assert_allclose(scalars, reference, rtol=1e-13)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**31 - 1), st.integers(1, 4), st.integers(1, 40), st.integers(1, 12))
def test_a_rollouts_vpo_scalar_is_the_same_alone_or_anywhere_in_the_batch(seed, m, d, group_size):
    # position independence, bit for bit: each rollout is scored as if it were the only one
    rng = np.random.default_rng(seed)
    rewards = rng.random((2, group_size, m, d))
    keys = ["p", "q"]
    batch = rollout_scalars(
        RolloutBatch.of(rewards, w_star=np.full(d, 1 / d), keys=keys),
        AdvantageConfig.parse("vpo", num_weights=23, seed=seed),
    )
    for b in range(2):
        for g in range(group_size):
            alone = rollout_scalars(
                RolloutBatch.of(rewards[b : b + 1, g : g + 1], w_star=np.full(d, 1 / d), keys=keys[b : b + 1]),
                AdvantageConfig.parse("vpo", num_weights=23, seed=seed),
            )
            assert alone[0, 0] == batch[b, g]


@pytest.mark.parametrize("scale", [1e-300, 1e-35, 1.0, 1e35, 1e300])
def test_vpo_is_one_float64_implementation_at_every_scale(scale):
    # one path for every magnitude (no float32 range guard): the scalars scale with the rewards
    rewards = np.random.default_rng(3).random((20, 4, 3, 5))
    got = rollout_scalars(
        RolloutBatch.of(rewards * scale, w_star=np.full(5, 0.2)), AdvantageConfig.parse("vpo", num_weights=11)
    )
    unit = rollout_scalars(
        RolloutBatch.of(rewards, w_star=np.full(5, 0.2)), AdvantageConfig.parse("vpo", num_weights=11)
    )
    np.testing.assert_allclose(got, unit * scale, rtol=1e-12)
    np.testing.assert_allclose(unit, vpo_reward(rewards, group_weights(5, 11, range(20))[:, None]), rtol=1e-13)


def test_vpo_scalars_do_not_depend_on_the_batch_around_a_group():
    # groups are evaluated in blocks; a group's scalars are the same alone, in a block, or across blocks
    rewards = np.random.default_rng(5).random((37, 6, 3, 4))
    keys = [f"g{b}" for b in range(37)]
    together = rollout_scalars(
        RolloutBatch.of(rewards, w_star=np.full(4, 0.25), keys=keys),
        AdvantageConfig.parse("vpo", num_weights=9, seed=4),
    )
    for b in (0, 15, 16, 36):
        alone = rollout_scalars(
            RolloutBatch.of(rewards[b : b + 1], w_star=np.full(4, 0.25), keys=keys[b : b + 1]),
            AdvantageConfig.parse("vpo", num_weights=9, seed=4),
        )
        assert np.array_equal(alone[0], together[b])


def test_degenerate_sizes_g1_m1_d1():
    one = np.array([[[[0.5]]]])
    for method in ("grpo", "vpo", "multi_rlvr", "maxrl", "random_w", "goal_cond"):
        assert compute_advantages(
            RolloutBatch.of(one, w_star=[1.0], **_goal(method, 1, 1)), AdvantageConfig.parse(method)
        ).shape == (1, 1)
    assert compute_advantages(RolloutBatch.of(one, w_star=[1.0]), AdvantageConfig.parse("grpo"))[0, 0] == 0.0
    assert compute_advantages(RolloutBatch.of(one, w_star=[1.0]), AdvantageConfig.parse("grpo", std="unbiased"))[
        0, 0
    ] == pytest.approx(0.5, rel=1e-5)
    # d = 1: every Dirichlet weight is 1, so VPO is best-of-m
    rewards = np.array([[[[0.1], [0.9]], [[0.3], [0.2]]]])
    np.testing.assert_allclose(
        rollout_scalars(RolloutBatch.of(rewards, w_star=[1.0]), AdvantageConfig.parse("vpo")), [[0.9, 0.3]]
    )


def test_goal_cond_uses_the_prompt_weights_and_random_w_the_group_draw():
    rewards = np.array([[[[1.0, 0.0]], [[0.0, 1.0]]]])
    np.testing.assert_allclose(
        rollout_scalars(
            RolloutBatch.of(rewards, w_star=[0.5, 0.5], goal_weights=[[0.8, 0.2]]), AdvantageConfig.parse("goal_cond")
        ),
        [[0.8, 0.2]],
    )
    w = group_weights(2, 1, ["k"], seed=3)[0, 0]
    np.testing.assert_allclose(
        rollout_scalars(
            RolloutBatch.of(rewards, w_star=[0.5, 0.5], keys=["k"]), AdvantageConfig.parse("random_w", seed=3)
        ),
        [w],
    )
    np.testing.assert_allclose(
        rollout_scalars(RolloutBatch.of(rewards, w_star=[0.25, 0.75]), AdvantageConfig.parse("grpo")), [[0.25, 0.75]]
    )
    np.testing.assert_allclose(linear_reward([[1.0, 2.0]], [[0.5, 0.25]]), [1.0])


def test_ragged_d_matches_per_group_calls():
    rng = np.random.default_rng(4)
    groups = [rng.integers(0, 2, size=(4, 3, d)).astype(float) for d in (5, 3, 5, 7)]
    w_stars = [np.full(g.shape[-1], 1 / g.shape[-1]) for g in groups]
    keys = ["p0", "p1", "p2", "p3"]
    got = compute_advantages(RolloutBatch.of(groups, w_star=w_stars, keys=keys), AdvantageConfig.parse("vpo", seed=2))
    for b, group in enumerate(groups):
        alone = compute_advantages(
            RolloutBatch.of(group[None], w_star=w_stars[b], keys=[keys[b]]), AdvantageConfig.parse("vpo", seed=2)
        )
        np.testing.assert_allclose(got[b], alone[0], atol=1e-12)


# ------------------------------------------------------------------------------- flat batches
def test_zscore_by_index_and_group_layout_match_the_grid():
    rng = np.random.default_rng(0)
    grid = rng.random((4, 5))
    uids = np.array([f"u{b}" for b in range(4) for _ in range(5)], dtype=object)
    perm = rng.permutation(20)
    flat, ids = grid.reshape(-1)[perm], uids[perm]
    for std in ("population", "unbiased"):
        expected = group_zscore(grid, std=std).reshape(-1)[perm]
        np.testing.assert_allclose(zscore_by_index(flat, ids, std=std), expected, atol=1e-12)
    layout = group_layout(ids)
    np.testing.assert_allclose(layout.to_flat(group_zscore(layout.to_grid(flat))), group_zscore(grid).reshape(-1)[perm])
    with pytest.raises(ValueError, match="same number of rollouts"):
        group_layout(["a", "a", "b"])


# -------------------------------------------------------------------------------- weights
def test_weights_are_on_the_simplex_and_keyed():
    w = dirichlet_weights(4, 1000, seed=1, key="uid")
    assert w.shape == (1000, 4)
    np.testing.assert_allclose(w.sum(axis=1), 1.0)
    assert np.all(w >= 0)
    np.testing.assert_allclose(w.mean(axis=0), 0.25, atol=0.02)
    np.testing.assert_allclose(w.var(axis=0), 0.0375, atol=0.006)  # Dir(1): (1/4)(3/4)/5
    assert np.array_equal(w, dirichlet_weights(4, 1000, seed=1, key="uid"))
    assert not np.array_equal(w, dirichlet_weights(4, 1000, seed=2, key="uid"))
    assert not np.array_equal(w, dirichlet_weights(4, 1000, seed=1, key="uid2"))
    sharp = dirichlet_weights(3, 20_000, alpha=0.5, key=7)
    np.testing.assert_allclose(sharp.var(axis=0), (1 / 3) * (2 / 3) / 2.5, rtol=0.05)
    assert stable_seed(0, ("step", 3)) == stable_seed(0, "step:3")


def test_weights_are_identical_in_a_fresh_process():
    code = "import json; from vpo_core.weights import dirichlet_weights as f; print(json.dumps(f(5, 3, seed=11, key='u-1').tolist()))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={"PYTHONHASHSEED": "123"}
    )
    assert np.array_equal(np.array(json.loads(out.stdout)), dirichlet_weights(5, 3, seed=11, key="u-1"))


# ------------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 1, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("ppo")
            ),
            "unknown method 'ppo'",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("grpo")
            ),
            "single-answer, so rewards must have m=1",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((2, 3, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("vpo")
            ),
            r"shape \(B groups, G rollouts, m candidates, d dims\)",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.full((1, 2, 3, 2), np.nan), w_star=[0.5, 0.5]), AdvantageConfig.parse("vpo")
            ),
            "NaN or inf",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[1.0]), AdvantageConfig.parse("vpo")
            ),
            r"w_star must have shape \(2,\)",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5], keys=["a", "b"]),
                AdvantageConfig.parse("vpo"),
            ),
            "one key per group",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 4, 1, 2)), w_star=[0.5, 0.5]),
                AdvantageConfig.parse("grpo", options={"k": 2}),
            ),
            r"option\(s\) \['k'\] do not apply to method 'grpo'",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 4, 3, 2)), w_star=[0.5, 0.5]),
                AdvantageConfig.parse("vpo", options={"divide_by_n": True}),
            ),
            r"\['divide_by_n'\] do not apply to method 'vpo'",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 1, 2)), w_star=[0.5, 0.5], goal_weights=[[1, 0]]),
                AdvantageConfig.parse("grpo"),
            ),
            "goal_weights apply to goal-conditioned methods only",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 1, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("goal_cond")
            ),
            r"goal_cond needs goal_weights \(B, d\)",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("vpo", std="sample")
            ),
            "std must be one of",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 4, 1, 2)), w_star=[0.5, 0.5]),
                AdvantageConfig.parse("max_at_k", options={"k": 4}),
            ),
            "1 <= k < G=4",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("vpo", num_weights=0)
            ),
            "num_weights",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("vpo", alpha=-1.0)
            ),
            "alpha",
        ),
        (
            lambda: compute_advantages(
                RolloutBatch.of(np.zeros((2, 2, 1, 2)), w_star=[0.5, 0.5], goal_weights=[[1, 0]]),
                AdvantageConfig.parse("goal_cond"),
            ),
            r"goal_weights must have one vector per group \(2\), got 1",
        ),
        (lambda: max_at_k_transform([[1.0, 2.0]], 3), "k must be an int in"),
    ],
)
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_options_are_explicit_keyword_arguments():
    with pytest.raises(TypeError, match="temperature"):
        AdvantageConfig.parse("vpo", temperature=1)  # type: ignore[call-arg]
    with pytest.raises(ValueError, match=r"option\(s\) \['temperature'\] do not apply to method 'vpo'"):
        AdvantageConfig.parse("vpo", options={"temperature": 1})


# ------------------------------------------------------------------ robustness (issue 15, estimators)
# The tests below turn numpy's RuntimeWarnings into errors: no NaN or inf may be made along the way.
pytestmark_robust = pytest.mark.filterwarnings("error::RuntimeWarning")


@pytestmark_robust
@pytest.mark.parametrize("eps", [float("nan"), -1e-6, float("inf"), "small"])
def test_eps_must_be_a_finite_non_negative_number(eps):
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        compute_advantages(
            RolloutBatch.of(np.zeros((1, 4, 1, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("grpo", eps=eps)
        )
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        group_zscore([[0.1, 0.2]], eps=eps)


@pytestmark_robust
@pytest.mark.parametrize("method", sorted(set(METHODS) - {"vpo_unshared"}))
@pytest.mark.parametrize("std", ["population", "unbiased"])
def test_eps_zero_on_a_constant_group_gives_zeros(method, std):
    m = 1 if METHODS[method].mode == "single" else 3
    rewards = np.broadcast_to(np.array([0.2, 1.0, 0.0, 0.5]), (2, 5, m, 4)).copy()
    got = compute_advantages(
        RolloutBatch.of(rewards, w_star=np.full(4, 0.25), **_goal(method, 2, 4)),
        AdvantageConfig.parse(method, eps=0.0, std=std),
    )
    assert np.array_equal(got, np.zeros((2, 5)))
    for n in (3, 5, 7):  # a mean that does not round-trip (3 * 0.1 / 3 != 0.1) must not leak through
        assert np.array_equal(group_zscore(np.full((1, n), 0.1), eps=0.0, std=std), np.zeros((1, n)))


@pytestmark_robust
@pytest.mark.parametrize("scale", [1e-300, 1e-150, 1e150, 1e200, 1e300, 1e308])
@pytest.mark.parametrize("std", ["population", "unbiased"])
def test_grpo_z_scores_do_not_depend_on_the_reward_scale(scale, std):
    rewards = (X[0] * scale)[None, :, None, None]  # (1, 4, 1, 1)
    got = compute_advantages(RolloutBatch.of(rewards, w_star=[1.0]), AdvantageConfig.parse("grpo", std=std, eps=0.0))
    np.testing.assert_allclose(got, group_zscore(X, std=std, eps=0.0), rtol=1e-12)
    with_eps = compute_advantages(RolloutBatch.of(rewards, w_star=[1.0]), AdvantageConfig.parse("grpo", std=std))
    assert np.all(np.isfinite(with_eps))
    if scale >= 1.0:  # eps is negligible against a large spread
        np.testing.assert_allclose(with_eps, group_zscore(X, std=std, eps=0.0), rtol=1e-12)


@pytestmark_robust
def test_z_score_of_values_at_the_float64_limit():
    big = np.finfo(np.float64).max
    np.testing.assert_allclose(group_zscore([[-big, big]]), [[-1.0, 1.0]])
    np.testing.assert_allclose(
        group_zscore([[big, big, 0.0, 0.0]], std="unbiased"), [[0.866025, 0.866025, -0.866025, -0.866025]], atol=1e-6
    )


@pytestmark_robust
@pytest.mark.parametrize("scores", [[[-2e-6, 0.0]], [[-1.0, 0.5]], [[-3.0, -1.0]]])
def test_maxrl_refuses_a_negative_group_mean(scores):
    with pytest.raises(ValueError, match="maxrl divides by the group mean"):
        maxrl_advantages(scores)


@pytestmark_robust
def test_maxrl_on_huge_rewards_equals_the_unit_scale():
    b = np.array([[1, 0, 0, 1, 0, 0, 0, 0]], dtype=float)
    np.testing.assert_allclose(maxrl_advantages(b * 1e308, eps=0.0), maxrl_advantages(b, eps=0.0), rtol=1e-12)


@pytestmark_robust
def test_an_empty_batch_is_refused():
    with pytest.raises(ValueError, match="at least one group"):
        compute_advantages(RolloutBatch.of(np.zeros((0, 4, 1, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("grpo"))
    with pytest.raises(ValueError, match="at least one group"):
        group_zscore(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="at least one rollout"):
        zscore_by_index(np.zeros(0), np.zeros(0))


@pytestmark_robust
def test_scalars_that_overflow_float64_are_refused():
    big = np.finfo(np.float64).max
    with pytest.raises(ValueError, match="overflow"):
        compute_advantages(
            RolloutBatch.of(np.full((1, 2, 3, 1), big), w_star=[1.0]), AdvantageConfig.parse("multi_rlvr")
        )


_FINITE = st.floats(allow_nan=False, allow_infinity=False, width=64)


@pytestmark_robust
@settings(max_examples=300, deadline=None)
@given(
    method=st.sampled_from(sorted(METHODS)),
    shape=st.tuples(st.integers(1, 3), st.integers(1, 5), st.integers(1, 3), st.integers(1, 3)),
    data=st.data(),
    std=st.sampled_from(["population", "unbiased"]),
    eps=st.one_of(st.just(1e-6), st.just(0.0), st.floats(min_value=0.0, max_value=1e300)),
)
def test_any_finite_input_gives_finite_advantages_or_a_clear_error(method, shape, data, std, eps):
    n_groups, group_size, m, d = shape
    if METHODS[method].mode == "single":
        m = 1
    rewards = data.draw(hnp.arrays(np.float64, (n_groups, group_size, m, d), elements=_FINITE))
    w_star = data.draw(hnp.arrays(np.float64, (d,), elements=_FINITE))
    options = {}
    if METHODS[method].goal_prompt:
        options["goal_weights"] = data.draw(hnp.arrays(np.float64, (n_groups, d), elements=_FINITE))
    if method == "max_at_k":
        options["k"] = data.draw(st.one_of(st.none(), st.integers(1, group_size)))
    if method == "maxrl":
        options["divide_by_n"] = data.draw(st.booleans())
    if method == "gdpo":
        options["gdpo_weights"] = data.draw(st.one_of(st.none(), hnp.arrays(np.float64, (d,), elements=_FINITE)))
        lengths = hnp.arrays(np.float64, (n_groups, group_size), elements=st.integers(1, 10**6).map(float))
        options["response_lengths"] = data.draw(st.one_of(st.none(), lengths))
    try:
        lengths, goal = options.pop("response_lengths", None), options.pop("goal_weights", None)
        batch = RolloutBatch.of(rewards, w_star=w_star, lengths=lengths, goal_weights=goal)
        got = compute_advantages(batch, AdvantageConfig.parse(method, std=std, eps=eps, options=options))
    except ValueError as error:  # refused: the message must be ours, naming the problem
        message = str(error)
        assert "zero-size array" not in message
        assert "invalid value" not in message
        assert any(word in message for word in ("overflow", "maxrl", "k ", "G=")), message
        return
    assert got.shape == (n_groups, group_size)
    assert np.all(np.isfinite(got)), (method, rewards, got)


@pytestmark_robust
@settings(max_examples=200, deadline=None)
@given(
    scores=hnp.arrays(np.float64, st.integers(1, 12), elements=_FINITE),
    data=st.data(),
    std=st.sampled_from(["population", "unbiased"]),
    eps=st.one_of(st.just(1e-6), st.just(0.0), st.floats(min_value=0.0, max_value=1e300)),
)
def test_flat_z_scores_are_finite_and_match_the_grid(scores, data, std, eps):
    ids = np.array(
        data.draw(st.lists(st.sampled_from("abc"), min_size=len(scores), max_size=len(scores))), dtype=object
    )
    got = zscore_by_index(scores, ids, std=std, eps=eps)
    assert np.all(np.isfinite(got))
    for uid in set(ids):
        members = ids == uid
        np.testing.assert_allclose(
            got[members], group_zscore(scores[members][None], std=std, eps=eps)[0], rtol=1e-9, atol=1e-12
        )
