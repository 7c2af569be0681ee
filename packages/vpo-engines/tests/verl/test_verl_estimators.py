"""The veRL group estimators on bad or extreme input: options from ``algorithm.vpo``, never NaN."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
pytestmark = pytest.mark.verl

from omegaconf import OmegaConf  # noqa: E402

from vpo_core.layout import group_layout  # noqa: E402
from vpo_core.normalizers import max_at_k_advantages, maxrl_advantages  # noqa: E402
from vpo_engines.verl.estimators import grpo_pop, max_at_k, maxrl  # noqa: E402

ESTIMATORS = {"grpo_pop": grpo_pop, "maxrl": maxrl, "max_at_k": max_at_k}


def _batch(scores: np.ndarray, group_size: int = 4, width: int = 5):
    """Flat veRL inputs: the scalar at each rollout's last valid token, uids shared by `group_size` rollouts."""
    n = len(scores)
    lengths = torch.arange(n) % width + 1
    mask = (torch.arange(width)[None, :] < lengths[:, None]).float()
    rewards = torch.zeros(n, width)
    rewards[torch.arange(n), lengths - 1] = torch.as_tensor(scores, dtype=torch.float32)
    index = np.array([f"uid-{i // group_size}" for i in range(n)], dtype=object)
    return rewards, mask, index


def _call(name: str, scores: np.ndarray, vpo: dict | None = None):
    rewards, mask, index = _batch(scores)
    config = OmegaConf.create({"vpo": vpo or {}})
    return ESTIMATORS[name](token_level_rewards=rewards, response_mask=mask, index=index, config=config), mask


def test_each_estimator_reads_only_its_own_options_from_one_vpo_block():
    scores = np.array([0.1, 0.5, 0.3, 0.9, 0.0, 0.2, 0.2, 0.6])
    shared = {"k": 2, "divide_by_n": True, "eps": "1e-6"}  # YAML may give eps as text
    (adv, _), mask = _call("maxrl", scores, shared)
    grid = group_layout(_batch(scores)[2]).to_grid(scores.astype(np.float32).astype(np.float64))
    want = maxrl_advantages(grid, divide_by_n=True).reshape(-1)
    torch.testing.assert_close(adv, torch.as_tensor(want, dtype=torch.float32)[:, None] * mask)
    (adv, _), mask = _call("max_at_k", scores, shared)
    want = max_at_k_advantages(grid, 2).reshape(-1)
    torch.testing.assert_close(adv, torch.as_tensor(want, dtype=torch.float32)[:, None] * mask)


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("eps", ["nan", -1.0, "inf"])
def test_a_bad_eps_is_refused(name, eps):
    with pytest.raises(ValueError, match="eps must be a finite number >= 0"):
        _call(name, np.array([0.1, 0.5, 0.3, 0.9]), {"eps": eps})


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
@pytest.mark.parametrize("scale", [1e-30, 1.0, 3e38])
def test_advantages_are_finite_at_any_float32_scale(name, scale):
    scores = np.array([0.1, 0.5, 0.3, 0.9, 0.4, 0.4, 0.4, 0.4]) * scale
    (adv, returns), _ = _call(name, scores, {"eps": 0.0})
    assert torch.isfinite(adv).all()
    assert torch.equal(adv, returns)
    assert torch.all(adv[4:] == 0)  # the second group is constant


def test_maxrl_refuses_a_negative_group_mean():
    with pytest.raises(ValueError, match="maxrl divides by the group mean"):
        _call("maxrl", np.array([-1.0, 0.0, 0.0, 0.0]))


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_an_empty_batch_is_refused(name):
    rewards, mask = torch.zeros(0, 5), torch.zeros(0, 5)
    with pytest.raises(ValueError, match="at least one rollout"):
        ESTIMATORS[name](token_level_rewards=rewards, response_mask=mask, index=np.array([], dtype=object), config=None)


def test_one_advantage_config_is_read_from_the_block_for_the_reward_manager_and_each_estimator():
    from vpo_engines.verl.options import advantage_config, normalizer_config, vpo_block

    algorithm = OmegaConf.create({"vpo": {"seed": 3, "num_weights": 8, "alpha": 0.5, "k": 2, "std": "unbiased"}})
    block = vpo_block(algorithm)
    manager = advantage_config(block, method="vpo")  # what the reward manager scores with
    assert (manager.seed, manager.num_weights, manager.alpha, manager.std) == (3, 8, 0.5, "unbiased")
    assert advantage_config(block, method="vpo") is manager  # parsed once per (method, m, block)
    assert normalizer_config(block, "max_at_k").options == {"k": 2}
    assert normalizer_config(block, "zscore").std == "unbiased"
    scores = np.array([0.1, 0.5, 0.3, 0.9, 0.0, 0.2, 0.2, 0.6])
    (unbiased, _), _ = _call("grpo_pop", scores, {"std": "unbiased"})
    (population, _), _ = _call("grpo_pop", scores, {})
    torch.testing.assert_close(unbiased * np.sqrt(4 / 3), population)  # G = 4: the std the block names is used


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_a_bad_std_is_refused_by_every_estimator(name):
    with pytest.raises(ValueError, match="std must be one of"):
        _call(name, np.array([0.1, 0.5, 0.3, 0.9]), {"std": "sample"})
