"""The veRL adapter on CPU: plugin loading, config composition per paper cell, estimators and the
reward manager on DataProto batches, GDPO through the built-in estimator, exported parquet."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from importlib.metadata import entry_points

import numpy as np
import pytest
import torch

pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
pytestmark = pytest.mark.verl

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402
from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls  # noqa: E402
from verl.trainer.ppo.core_algos import compute_gdpo_outcome_advantage, get_adv_estimator_fn  # noqa: E402

import vpo_core  # noqa: E402
from vpo_core.adapters.local.policy import build_tokenizer  # noqa: E402
from vpo_core.adapters.verl import plugin  # noqa: E402
from vpo_core.adapters.verl.export import export_split, rows_for  # noqa: E402
from vpo_core.adapters.verl.launch import compose, main  # noqa: E402
from vpo_core.adapters.verl.recipes import DOMAINS, ESTIMATOR, overrides  # noqa: E402
from vpo_core.adapters.verl.reward import score_trajectory  # noqa: E402
from vpo_core.advantages import (  # noqa: E402  # noqa: E402
    gdpo_advantages,
    group_layout,
    max_at_k_advantages,
    maxrl_advantages,
    rollout_scalars,
    zscore_by_index,
)
from vpo_core.weights import dirichlet_weights  # noqa: E402


# ------------------------------------------------------------------------------------- plugin
def test_plugin_entry_point_loads_and_registers_in_a_fresh_process():
    (ep,) = [ep for ep in entry_points(group="verl.plugins") if ep.name == "vpo"]
    assert ep.value == "vpo_core.adapters.verl.plugin"
    assert ep.load() is plugin
    plugin.check()
    code = (
        "import verl\n"  # veRL loads the verl.plugins entry points on import
        "from verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
        "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
        "import vpo_core.adapters.verl.plugin as p\n"
        "p.check()\n"
        "assert get_adv_estimator_fn('grpo_pop').__module__ == 'vpo_core.adapters.verl.estimators'\n"
        "print(get_reward_manager_cls('vpo').__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("VPORewardManager")


# -------------------------------------------------------------------------------- composition
@pytest.mark.parametrize("env_id", sorted(DOMAINS))
def test_every_paper_cell_composes_with_the_appendix_values(env_id):
    for method in sorted(vpo_core.METHODS):
        cfg = compose(overrides(env_id, method, model=None, train_files="t.parquet", val_files="v.parquet", d=4))
        actor = cfg.actor_rollout_ref.actor
        assert (actor.optim.lr, actor.optim.weight_decay, actor.grad_clip) == (1e-6, 0.01, 1.0)
        assert (actor.clip_ratio, actor.clip_ratio_c, actor.loss_agg_mode, actor.entropy_coeff) == (
            0.2,
            3.0,
            "token-mean",
            0,
        )
        assert (actor.use_kl_loss, actor.kl_loss_coef, actor.kl_loss_type, actor.ppo_epochs) == (
            True,
            0.001,
            "low_var_kl",
            1,
        )
        assert actor.optim.lr_scheduler_type == "constant"
        assert cfg.actor_rollout_ref.rollout.n == 8
        assert cfg.actor_rollout_ref.rollout.temperature == (0.8 if env_id == "lcb-v1" else 1.0)
        assert cfg.algorithm.adv_estimator == ESTIMATOR[method]
        assert cfg.algorithm.use_kl_in_reward is False
        assert cfg.reward.reward_manager.name == "vpo"
        assert cfg.data.train_batch_size == DOMAINS[env_id].train_batch
        assert cfg.actor_rollout_ref.model.path == DOMAINS[env_id].model
        multi = vpo_core.get_method(method).mode == "multi"
        assert cfg.data.max_response_length == (
            DOMAINS[env_id].response_multi if multi else DOMAINS[env_id].response_single
        )
        if method == "gdpo":
            assert cfg.trainer.use_v1 is False
            assert list(cfg.algorithm.gdpo_reward_keys) == ["r_0", "r_1", "r_2", "r_3"]


def test_dry_run_prints_yaml_and_the_n24_ablation(capsys):
    assert main(["env=maze-v1", "method=grpo", "n=24", "--dry-run"]) == 0
    config = OmegaConf.create(capsys.readouterr().out)
    assert config.actor_rollout_ref.rollout.n == 24
    assert config.algorithm.vpo.num_weights == 100


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["env=maze-v9"], "unknown env id 'maze-v9'"),
        (["method=ppo"], "unknown method 'ppo'"),
        (["method=vpo", "m=1"], "m must be >= 2"),
        (["method=grpo", "m=3"], "single-answer; m must be 1"),
        (["model=/no/such/model"], "does not exist"),
        (["trainer.no_such_key=1"], "rejected the overrides"),
        (["temperature=0.5"], "unknown option 'temperature'"),
    ],
)
def test_bad_input_fails_before_launch(argv, message, capsys):
    assert main([*argv, "--dry-run"]) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------------- estimators
def _batch(scores: np.ndarray, uids: list[str], lengths: list[int], width: int = 6):
    mask = (torch.arange(width)[None, :] < torch.tensor(lengths)[:, None]).float()
    rewards = torch.zeros(len(uids), width)
    rewards[torch.arange(len(uids)), torch.tensor(lengths) - 1] = torch.tensor(scores, dtype=torch.float32)
    return rewards, mask, np.array(uids, dtype=object)


@pytest.mark.parametrize("name", ["grpo_pop", "maxrl", "max_at_k"])
def test_estimators_agree_with_vpo_core(name):
    rng = np.random.default_rng(0)
    uids = [f"u{g}" for g in range(4) for _ in range(8)]
    order = rng.permutation(32)
    uids = [uids[i] for i in order]
    lengths = list(rng.integers(1, 7, size=32))
    rewards, mask, index = _batch(rng.random(32).round(3), uids, lengths)
    config = OmegaConf.create({"vpo": {"k": 3}})
    adv, returns = get_adv_estimator_fn(name)(
        token_level_rewards=rewards, response_mask=mask, index=index, config=config
    )
    scores = rewards.sum(-1).double().numpy()
    if name == "grpo_pop":
        expected = zscore_by_index(scores, index)
    else:
        layout = group_layout(index)
        grid = layout.to_grid(scores)
        expected = layout.to_flat(maxrl_advantages(grid) if name == "maxrl" else max_at_k_advantages(grid, 3))
    want = torch.as_tensor(expected, dtype=torch.float32)[:, None] * mask
    assert torch.equal(adv, want)
    assert torch.equal(returns, want)


def test_gdpo_runs_through_veRLs_builtin_with_our_extras():
    rng = np.random.default_rng(1)
    per_dim = rng.integers(0, 3, size=(3, 4, 4)) / 2.0  # (B, G, d)
    uids = [f"g{b}" for b in range(3) for _ in range(4)]
    lengths = list(rng.integers(1, 7, size=12))
    _, mask, index = _batch(per_dim.reshape(12, 4).mean(1), uids, lengths)
    prompts = torch.zeros(12, 3, dtype=torch.long)
    batch = {"prompts": prompts, "attention_mask": torch.cat([torch.ones(12, 3), mask], dim=1).long()}
    non_tensor = {f"r_{i}": per_dim.reshape(12, 4)[:, i] for i in range(4)}
    config = OmegaConf.create({"gdpo_reward_keys": [f"r_{i}" for i in range(4)]})
    adv, _ = compute_gdpo_outcome_advantage(
        token_level_rewards=torch.zeros(12, 6),
        response_mask=mask,
        index=index,
        config=config,
        non_tensor_batch=non_tensor,
        batch=batch,
    )
    ours = gdpo_advantages(per_dim, std="unbiased", response_lengths=np.array(lengths).reshape(3, 4))
    np.testing.assert_allclose(adv[:, 0].numpy(), ours.reshape(-1), atol=2e-5)


# ------------------------------------------------------------------------------ reward manager
@pytest.fixture(scope="module")
def tokenizer():
    env = vpo_core.make("maze-v1", train_size=5, test_size=5)
    texts = [env.reference_completion(t, mode="multi", m=3) for t in env.tasks("train")]
    return build_tokenizer(texts * 10, 400)


def _trajectory(tokenizer, row, text, uid):
    prompt_ids = torch.tensor([[5, 6, 7]])
    response = torch.tensor([tokenizer(text, add_special_tokens=False)["input_ids"]])
    return DataProto.from_dict(
        tensors={
            "prompts": prompt_ids,
            "responses": response,
            "attention_mask": torch.ones(1, prompt_ids.shape[1] + response.shape[1], dtype=torch.long),
            "input_ids": torch.cat([prompt_ids, response], dim=1),
        },
        non_tensors={
            "data_source": np.array([row["data_source"]], dtype=object),
            "reward_model": np.array([row["reward_model"]], dtype=object),
            "extra_info": np.array([row["extra_info"]], dtype=object),
            "uid": np.array([uid], dtype=object),
        },
    )


@pytest.mark.parametrize("method", ["vpo", "multi_rlvr", "grpo", "goal_cond", "gdpo"])
def test_reward_manager_returns_the_methods_rollout_scalar(tokenizer, method):
    env = vpo_core.make("maze-v1", train_size=5, test_size=5)
    row = rows_for("maze-v1", "test", method, env_config={"test_size": 5})[2]
    task = env.tasks("test")[2]
    mode, m = row["extra_info"]["mode"], row["extra_info"]["m"]
    text = env.reference_completion(task, mode=mode, m=m)
    config = OmegaConf.create({"algorithm": {"vpo": {"seed": 3, "num_weights": 50}}})
    manager = get_reward_manager_cls("vpo")(config, tokenizer, None)
    out = asyncio.run(manager.run_single(_trajectory(tokenizer, row, text, "uid-7")))
    train = env.training_rewards(task, env.parse(task, text, mode=mode, m=m))
    goal = np.asarray(row["extra_info"]["goal_weights"])[None] if method == "goal_cond" else None
    expected = rollout_scalars(
        method,
        train[None, None],
        w_star=env.reward_spec.w_star,
        seed=3,
        group_keys=["uid-7"],
        num_weights=50,
        goal_weights=goal,
    )
    if method == "gdpo":
        assert out["reward_score"] == pytest.approx(float(env.reward_spec.scalarize(train[0])), abs=1e-12)
    else:
        assert out["reward_score"] == pytest.approx(float(expected[0, 0]), abs=1e-12)
    extras = out["reward_extra_info"]
    assert {f"r_{i}" for i in range(4)} | {
        "best_of_m",
        "mean_w_star",
        "parsed",
        "reward_matrix",
        "candidate_diversity",
    } == set(extras)
    assert all(np.isscalar(v) or isinstance(v, str) for v in extras.values())
    if method == "vpo":
        weights = dirichlet_weights(4, 50, seed=3, key="uid-7")
        assert out["reward_score"] == pytest.approx(float(np.mean((train @ weights.T).max(axis=0))), rel=1e-6)


def test_group_weights_match_across_fresh_processes():
    row = rows_for("maze-v1", "test", "vpo", env_config={"test_size": 3})[1]
    code = (
        "import json, sys\n"
        "from vpo_core.adapters.verl.reward import score_trajectory\n"
        "row = json.loads(sys.argv[1])\n"
        "print(repr(score_trajectory('<route_1>RIGHT DOWN</route_1><route_2>DOWN</route_2>', row, 'uid-x', seed=5,"
        " num_weights=100, alpha=1.0)['reward_score']))\n"
    )
    scores = {
        subprocess.run(
            [sys.executable, "-c", code, json.dumps(row["extra_info"])],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": str(s)},
        ).stdout.strip()
        for s in (1, 2)
    }
    assert len(scores) == 1


def test_env_errors_are_loud_not_zero():
    row = rows_for("maze-v1", "test", "vpo", env_config={"test_size": 3})[0]
    info = dict(row["extra_info"], index=99)  # a task that does not exist
    with pytest.raises(IndexError):
        score_trajectory("<route_1>UP</route_1>", info, "u", seed=0, num_weights=10, alpha=1.0)


# -------------------------------------------------------------------------------------- export
@pytest.mark.parametrize("method", ["vpo", "grpo", "goal_cond"])
def test_exported_parquet_loads_through_RLHFDataset(tmp_path, tokenizer, method):
    from verl.utils.dataset.rl_dataset import RLHFDataset

    path = export_split(tmp_path / "test.parquet", "maze-v1", "test", method, env_config={"test_size": 4})
    data_config = OmegaConf.create(
        {
            "prompt_key": "prompt",
            "max_prompt_length": 4096,
            "truncation": "error",
            "filter_overlong_prompts": False,
            "cache_dir": str(tmp_path / "cache"),
        }
    )
    dataset = RLHFDataset(str(path), tokenizer, data_config)
    assert len(dataset) == 4
    item = dataset[1]
    assert item["data_source"] == "maze-v1"
    assert item["extra_info"]["index"] == 1
    assert item["raw_prompt"][-1]["role"] == "user"
    if method == "goal_cond":
        assert "Maximize your weighted score." in item["raw_prompt"][-1]["content"]
        assert len(item["extra_info"]["goal_weights"]) == 4
    if method == "vpo":
        assert "<route_3>" in item["raw_prompt"][-1]["content"]
    assert json.loads(item["reward_model"]["ground_truth"]) == {"task_id": "maze-v1/test/1"}
