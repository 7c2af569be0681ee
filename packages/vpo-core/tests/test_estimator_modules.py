"""The estimator modules after the split (issue 26): one implementation of each rule, names kept, records passed."""

from __future__ import annotations

import numpy as np
import pytest

from vpo_core import advantages, layout, normalizers
from vpo_core.advantages import AdvantageConfig, compute_advantages, normalize_scalars, rollout_scalars
from vpo_core.batch import RolloutBatch
from vpo_core.methods import OBJECTIVES, get_method, goal_weights, task_goal_weights
from vpo_core.objectives import linear_reward, multi_rlvr_reward, vpo_reward
from vpo_core.weights import group_weights

BUILDING_BLOCKS = {
    layout: ("GroupLayout", "group_layout", "zscore_by_index"),
    normalizers: ("gdpo_advantages", "group_zscore", "max_at_k_advantages", "max_at_k_transform", "maxrl_advantages"),
}


def test_each_building_block_has_one_home_and_advantages_exports_only_its_entry_points():
    # Issue 39: no re-exports kept for old call sites; engines import a block from the module that defines it.
    for home, names in BUILDING_BLOCKS.items():
        for name in names:
            assert getattr(home, name).__module__ == home.__name__, name
            assert name not in vars(advantages), name
    assert sorted(advantages.__all__) == [
        "AdvantageConfig",
        "RolloutBatch",
        "compute_advantages",
        "normalize_scalars",
        "rollout_scalars",
    ]


def _rewards(seed: int, shape: tuple[int, ...]) -> np.ndarray:
    return np.random.default_rng(seed).random(shape).round(3)


@pytest.mark.parametrize("seed", range(5))
def test_the_registered_objectives_are_the_checked_scalarisations_bit_for_bit(seed):
    w = np.random.default_rng(seed).dirichlet(np.ones(4))
    single, multi = _rewards(seed, (6, 5, 1, 4)), _rewards(seed + 10, (6, 5, 3, 4))
    assert np.array_equal(
        rollout_scalars(RolloutBatch.of(single, w_star=w), AdvantageConfig.parse("grpo")),
        linear_reward(single[:, :, 0], w),
    )
    assert np.array_equal(
        rollout_scalars(RolloutBatch.of(multi, w_star=w), AdvantageConfig.parse("multi_rlvr")),
        multi_rlvr_reward(multi, w),
    )
    draws = group_weights(4, 9, range(6), seed=seed)  # (B, K, d)
    vpo = rollout_scalars(RolloutBatch.of(multi, w_star=w), AdvantageConfig.parse("vpo", seed=seed, num_weights=9))
    assert np.array_equal(vpo, vpo_reward(multi, draws[:, None]))
    random_w = rollout_scalars(RolloutBatch.of(single, w_star=w), AdvantageConfig.parse("random_w", seed=seed))
    one = group_weights(4, 1, range(6), seed=seed)[:, 0]
    assert np.array_equal(random_w, linear_reward(single[:, :, 0], one[:, None, :]))


def test_every_objective_of_the_paper_lives_in_vpo_core_objectives():
    for name in ("w_star", "random_w", "goal_w", "per_dim", "multi_sum", "vpo"):
        assert OBJECTIVES[name].__module__ == "vpo_core.objectives", name


@pytest.mark.parametrize("std", ["population", "unbiased"])
@pytest.mark.parametrize("eps", [0.0, 1e-6, 0.3])
def test_the_grid_and_the_flat_batch_share_one_z_score_rule(std, eps):
    rng = np.random.default_rng(3)
    grid = rng.random((5, 4)) * np.array([[1.0], [1e-9], [1e300], [1.0], [2.0]])
    grid[3] = 0.25  # a constant group
    ids = np.repeat(np.arange(5), 4).astype(str).astype(object)
    flat = layout.zscore_by_index(grid.reshape(-1), ids, std=std, eps=eps).reshape(5, 4)
    np.testing.assert_allclose(flat, normalizers.group_zscore(grid, std=std, eps=eps), rtol=1e-12, atol=1e-15)
    assert np.all(flat[3] == 0)
    singleton = layout.zscore_by_index([2.0], ["solo"], std=std, eps=eps)
    assert np.array_equal(singleton, normalizers.group_zscore([[2.0]], std=std, eps=eps)[0])


def test_entry_points_take_a_method_record_or_its_name():
    record = get_method("max_at_k")
    assert get_method(record) is record
    rewards = _rewards(1, (3, 6, 1, 2))
    by_name = compute_advantages(
        RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse("max_at_k", options={"k": 3})
    )
    assert np.array_equal(
        compute_advantages(
            RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse(record, options={"k": 3})
        ),
        by_name,
    )
    scalars = rollout_scalars(RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse(record))
    assert np.array_equal(normalize_scalars(scalars, AdvantageConfig.parse(record, options={"k": 3})), by_name)


def test_the_option_checks_name_the_method_and_what_its_normaliser_reads():
    with pytest.raises(ValueError, match=r"option\(s\) \['k'\] do not apply to method 'vpo': its normaliser 'zscore'"):
        normalize_scalars(np.zeros((1, 2)), AdvantageConfig.parse(get_method("vpo"), options={"k": 2}))
    with pytest.raises(ValueError, match="std must be one of"):
        compute_advantages(
            RolloutBatch.of(np.zeros((1, 2, 1, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("grpo", std="sample")
        )  # type: ignore[arg-type]


def test_task_goal_weights_is_goal_weights_per_task():
    ids = ["a", "b", 7]
    stacked = task_goal_weights([3, 3, 3], ids, seed=5)
    assert np.array_equal(stacked, np.stack([goal_weights(3, seed=5, task_id=t) for t in ids]))
    assert np.array_equal(get_method("goal_cond").task_goal_weights([3] * 3, ids, seed=5), stacked)
    assert get_method("vpo").task_goal_weights([3] * 3, ids, seed=5) is None
    with pytest.raises(ValueError, match="one d per task"):
        task_goal_weights([3], ids, seed=5)
