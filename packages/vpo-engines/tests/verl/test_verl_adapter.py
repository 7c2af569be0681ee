"""The veRL adapter on CPU: plugin loading, config composition per paper cell, estimators and the
reward manager on DataProto batches, GDPO through the built-in estimator, exported parquet."""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path

import datasets
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
from vpo_core.advantages import AdvantageConfig, RolloutBatch, rollout_scalars  # noqa: E402
from vpo_core.errors import ConfigError  # noqa: E402
from vpo_core.layout import group_layout, zscore_by_index  # noqa: E402
from vpo_core.normalizers import gdpo_advantages, max_at_k_advantages, maxrl_advantages  # noqa: E402
from vpo_core.profile import EnvProfile  # noqa: E402
from vpo_core.registry import resolve_env_class  # noqa: E402
from vpo_core.weights import dirichlet_weights  # noqa: E402
from vpo_engines.models.policy import build_tokenizer  # noqa: E402
from vpo_engines.verl import plugin  # noqa: E402
from vpo_engines.verl.export import count_overlong, export_split, rows_for  # noqa: E402
from vpo_engines.verl.launch import LaunchConfig, compose, main, merge_command, parse_launch, validate  # noqa: E402
from vpo_engines.verl.recipes import GENERIC_MODEL, SHARED, cell, estimator_for, overrides  # noqa: E402
from vpo_engines.verl.reward import score_trajectory  # noqa: E402
from vpo_lab.qmc import sobol_weights  # noqa: E402


# ------------------------------------------------------------------------------------- plugin
def test_plugin_entry_point_loads_and_registers_in_a_fresh_process():
    (ep,) = [ep for ep in entry_points(group="verl.plugins") if ep.name == "vpo"]
    assert ep.value == "vpo_engines.verl.plugin"
    assert ep.load() is plugin
    plugin.check()
    code = (
        "import verl\n"  # veRL loads the verl.plugins entry points on import
        "from verl.trainer.ppo.core_algos import get_adv_estimator_fn\n"
        "from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls\n"
        "import vpo_engines.verl.plugin as p\n"
        "p.check()\n"
        "assert get_adv_estimator_fn('grpo_pop').__module__ == 'vpo_engines.verl.estimators'\n"
        "print(get_reward_manager_cls('vpo').__name__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("VPORewardManager")


# -------------------------------------------------------------------------------- composition
# The paper's values per domain, written out here (not read from the recipes) so that a changed recipe
# fails: model, GPUs, (train, mini, micro) batch, prompt length (single, multi, goal-conditioned),
# response length (single, multi at m = 3), epochs, rollout temperature, chat-template options, and the
# methods the paper trained on the domain.
QWEN3_NO_THINKING = {"enable_thinking": False}
PAPER = {
    "maze-v1": (
        "Qwen/Qwen3-4B", 4, (128, 64, 8), (512, 768, 768), (512, 1024), 2, 1.0, QWEN3_NO_THINKING,
        {"grpo", "random_w", "goal_cond", "max_at_k", "maxrl", "multi_rlvr", "vpo"},
    ),
    "musique-v1": (
        "Qwen/Qwen3-1.7B", 4, (128, 64, 8), (4096, 5120, 5120), (512, 1024), 1, 1.0, QWEN3_NO_THINKING,
        {"grpo", "random_w", "gdpo", "max_at_k", "maxrl", "multi_rlvr", "vpo"},
    ),
    "eureqa-v1": (
        "Qwen/Qwen3-8B", 4, (64, 32, 2), (1024, 1024, 1024), (512, 2048), 6, 1.0, QWEN3_NO_THINKING,
        {"grpo", "random_w", "max_at_k", "maxrl", "multi_rlvr", "vpo"},
    ),
    "toolrl-v1": (
        "Qwen/Qwen3-1.7B", 4, (128, 64, 8), (4096, 4352, 4352), (1024, 2048), 20, 1.0, QWEN3_NO_THINKING,
        {"grpo", "random_w", "max_at_k", "maxrl", "multi_rlvr", "vpo"},
    ),
    "lcb-v1": (
        "Qwen/Qwen2.5-Coder-7B-Instruct", 8, (64, 32, 2), (4096, 4096, 4096), (4096, 4096), 1, 0.8, {},
        {"grpo", "vpo"},
    ),
}  # fmt: skip
# (env, method, n): every cell the paper reports, the MuSiQue n = 24 ablation and the LCB two-arm study
CELLS = [(env_id, method, 8) for env_id, row in PAPER.items() for method in sorted(row[-1])] + [
    ("musique-v1", "grpo", 24),
    ("musique-v1", "gdpo", 24),
    ("musique-v1", "random_w", 24),
]


def _compose_cell(env_id, method, n=8, **kwargs):
    c = cell(env_id, method, n=n, **kwargs)
    cfg = compose(overrides(c, train_files="t.parquet", val_files="v.parquet", checkpoint_dir="ckpt"))
    validate(cfg)  # veRL's own checks: batch divisibility for the recipe's GPU count
    return c, cfg


def _assert_shared(cfg):
    actor = cfg.actor_rollout_ref.actor
    assert (actor.optim.lr, actor.optim.weight_decay, actor.grad_clip) == (1e-6, 0.01, 1.0)
    assert (actor.optim.lr_warmup_steps_ratio, actor.optim.lr_scheduler_type) == (0.0, "constant")
    assert list(actor.optim.betas) == [0.9, 0.999]
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
    assert cfg.algorithm.use_kl_in_reward is False
    rollout = cfg.actor_rollout_ref.rollout
    assert (rollout.name, rollout.top_k) == ("vllm", -1)
    assert (rollout.val_kwargs.do_sample, rollout.val_kwargs.temperature, rollout.val_kwargs.n) == (False, 0, 1)
    assert cfg.actor_rollout_ref.ref.fsdp_config.param_offload is True
    assert cfg.data.filter_overlong_prompts is True
    assert cfg.reward.reward_manager.name == "vpo"
    trainer = cfg.trainer
    assert (trainer.save_freq, trainer.test_freq, trainer.max_actor_ckpt_to_keep) == (10, 50, 2)
    assert (trainer.resume_mode, list(trainer.logger), trainer.nnodes) == ("auto", ["console"], 1)
    assert trainer.default_local_dir == "ckpt"


@pytest.mark.parametrize(("env_id", "method", "n"), CELLS, ids=[f"{e}-{m}-n{n}" for e, m, n in CELLS])
def test_every_paper_cell_composes_with_the_papers_values(env_id, method, n):
    model, gpus, batch, prompts, responses, epochs, temperature, chat, _ = PAPER[env_id]
    c, cfg = _compose_cell(env_id, method, n=n)
    _assert_shared(cfg)
    spec = vpo_core.get_method(method)
    assert cfg.actor_rollout_ref.model.path == model
    assert cfg.trainer.n_gpus_per_node == gpus
    actor = cfg.actor_rollout_ref.actor
    assert (cfg.data.train_batch_size, actor.ppo_mini_batch_size, actor.ppo_micro_batch_size_per_gpu) == batch
    assert cfg.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu == batch[2]
    assert cfg.actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu == batch[2]
    prompt = prompts[2] if spec.goal_prompt else prompts[1] if spec.mode == "multi" else prompts[0]
    assert cfg.data.max_prompt_length == prompt
    assert cfg.data.max_response_length == (responses[1] if spec.mode == "multi" else responses[0])
    assert cfg.trainer.total_epochs == epochs
    assert cfg.actor_rollout_ref.rollout.n == n
    assert cfg.actor_rollout_ref.rollout.temperature == temperature
    assert cfg.actor_rollout_ref.rollout.top_p == 1.0
    assert dict(cfg.data.apply_chat_template_kwargs) == chat
    assert cfg.algorithm.adv_estimator == estimator_for(method)
    assert cfg.algorithm.vpo.num_weights == 100
    assert c.m == (3 if spec.mode == "multi" else 1)
    if method == "gdpo":
        d = resolve_env_class(env_id).reward_spec.dim
        assert cfg.trainer.use_v1 is False
        assert list(cfg.algorithm.gdpo_reward_keys) == [f"r_{i}" for i in range(d)]
    else:
        assert cfg.trainer.use_v1 is True


def test_the_papers_methods_per_domain_are_the_recipes():
    for env_id, row in PAPER.items():
        recipe = resolve_env_class(env_id).profile.recipe
        assert set(recipe.methods) == row[-1]
        assert set(recipe.sources) >= {"model", "n_gpus", "train_batch", "prompt_length", "response_multi", "epochs"}


@pytest.mark.parametrize("method", sorted(vpo_core.METHODS))
def test_every_method_composes_on_every_domain(method):
    for env_id in PAPER:
        _, cfg = _compose_cell(env_id, method)
        assert cfg.algorithm.adv_estimator == estimator_for(method)


def test_the_estimator_follows_the_methods_normaliser():
    assert {name: estimator_for(name) for name in vpo_core.METHODS} == {
        "grpo": "grpo_pop",
        "random_w": "grpo_pop",
        "goal_cond": "grpo_pop",
        "multi_rlvr": "grpo_pop",
        "vpo": "grpo_pop",
        "max_at_k": "max_at_k",
        "maxrl": "maxrl",
        "gdpo": "gdpo",
        "vpo_w_star_max": "grpo_pop",
        "vpo_k1": "grpo_pop",
        "vpo_unshared": "grpo_pop",
    }


def test_m_scales_the_multi_answer_budget():
    c = cell("maze-v1", "vpo", m=6)
    assert (c.m, c.response_length) == (6, 2048)


# --------------------------------------------------------------------- an env without a recipe
@pytest.fixture
def toy_env_ref(monkeypatch):
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    return "toy_count_env:CountEnv"


@pytest.mark.parametrize("method", ["vpo", "grpo", "gdpo", "goal_cond"])
def test_an_env_without_a_recipe_gets_the_generic_defaults_and_composes(toy_env_ref, method):
    c, cfg = _compose_cell(toy_env_ref, method)
    _assert_shared(cfg)
    assert not c.paper_recipe
    assert cfg.actor_rollout_ref.model.path == GENERIC_MODEL
    assert (cfg.trainer.n_gpus_per_node, cfg.data.train_batch_size, cfg.trainer.total_epochs) == (4, 128, 1)
    assert cfg.data.max_prompt_length == 2048
    budgets = EnvProfile().train  # the toy env declares no profile: the generic generation settings
    multi = vpo_core.get_method(method).mode == "multi"
    assert cfg.data.max_response_length == (budgets.max_new_tokens_multi if multi else budgets.max_new_tokens_single)
    assert dict(cfg.data.apply_chat_template_kwargs) == {}
    assert cfg.trainer.experiment_name == f"count-v1-{method}-n8"


def test_an_env_without_a_recipe_runs_the_whole_cpu_path(toy_env_ref, tmp_path, tokenizer, capsys):
    out = tmp_path / "run"
    assert main([f"env={toy_env_ref}", "method=vpo", f"out={out}", "--dry-run"]) == 0
    assert "vpo-engines' generic defaults" in capsys.readouterr().out
    path = export_split(tmp_path / "train.parquet", toy_env_ref, "train", "vpo")
    row = datasets.Dataset.from_parquet(str(path))[3]
    text = "<answer_1>3</answer_1><answer_2>5</answer_2><answer_3>4</answer_3>"
    config = OmegaConf.create({"algorithm": {"vpo": {"seed": 1, "num_weights": 20}}})
    manager = get_reward_manager_cls("vpo")(config, tokenizer, None)
    result = asyncio.run(manager.run_single(_trajectory(tokenizer, row, text, "uid-1")))
    weights = dirichlet_weights(2, 20, seed=1, key="uid-1")
    rewards = np.array([[1.0, 1.0], [0.0, 0.8], [0.0, 0.9]])
    assert result["reward_score"] == pytest.approx(float(np.mean((rewards @ weights.T).max(axis=0))), rel=1e-6)
    assert set(result["reward_extra_info"]) >= {"r_0", "r_1", "best_of_m"}


# ------------------------------------------------------------------------------------ launcher
def test_dry_run_prints_the_summary_first_and_writes_the_full_yaml(tmp_path, capsys):
    out = tmp_path / "musique-grpo-n24"
    assert main(["env=musique-v1", "method=grpo", "n=24", f"out={out}", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    lines = printed.splitlines()
    assert lines[0].startswith("veRL run: musique-v1 x grpo (n = 24)")
    for label, value in [
        ("model", "Qwen/Qwen3-1.7B"),
        ("GPUs", "4 per node x 1 node(s) = 4"),
        ("batch", "128 prompts x 24 rollouts per step; mini-batch 64, micro-batch 8 per GPU"),
        ("lengths", "prompt <= 4096, response <= 512 tokens (chat template: enable_thinking=False)"),
        ("epochs", "1"),
        ("estimator", "grpo_pop (mode single, m = 1; K = 100"),
        ("checkpoints", f"{out / 'checkpoints'} (every 10 steps and the last; keep 2; resume auto)"),
        ("merge", "python -m verl.model_merger merge --backend fsdp --local_dir"),
        ("launch", "-m verl.trainer.main_ppo data.train_files="),
    ]:
        assert any(line.strip().startswith(label) and value in line for line in lines), (label, printed)
    config = OmegaConf.load(out / "verl_config.yaml")
    assert config.actor_rollout_ref.rollout.n == 24
    assert config.algorithm.vpo.num_weights == 100
    assert config.data.apply_chat_template_kwargs.enable_thinking is False
    assert not (out / "data").exists(), "a dry run exports nothing"


def test_trackers_write_inside_the_run_directory(tmp_path, capsys):
    out = tmp_path / "run"
    args = ["env=maze-v1", "method=vpo", f"out={out}", "logger=console,tensorboard,file", "--dry-run"]
    assert main(args) == 0
    capsys.readouterr()
    config = OmegaConf.load(out / "verl_config.yaml")
    assert list(config.trainer.logger) == ["console", "tensorboard", "file"]
    env_vars = config.ray_kwargs.ray_init.runtime_env.env_vars
    assert env_vars["TENSORBOARD_DIR"] == str(out / "tensorboard")
    assert env_vars["VERL_FILE_LOGGER_PATH"] == str(out / "metrics.jsonl")


def test_run_options_and_veRL_overrides_reach_the_config(tmp_path, capsys):
    out = tmp_path / "run"
    args = [
        "env=lcb-v1",
        "method=vpo",
        f"out={out}",
        "n_gpus=16",
        "nnodes=2",
        "save_freq=25",
        "test_freq=-1",
        "resume_mode=disable",
        "max_ckpt_to_keep=5",
        "seed=7",
        "trainer.val_before_train=false",
        "--dry-run",
    ]
    assert main(args) == 0
    capsys.readouterr()
    config = OmegaConf.load(out / "verl_config.yaml")
    trainer = config.trainer
    assert (trainer.n_gpus_per_node, trainer.nnodes, trainer.save_freq, trainer.test_freq) == (16, 2, 25, -1)
    assert (trainer.resume_mode, trainer.max_actor_ckpt_to_keep, trainer.val_before_train) == ("disable", 5, False)
    assert (config.data.seed, config.algorithm.vpo.seed) == (7, 7)
    assert dict(config.data.apply_chat_template_kwargs) == {}  # Qwen2.5-Coder has no thinking mode


def test_weight_sampler_reaches_the_reward_managers_options(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["env=maze-v1", "method=vpo", f"out={out}", "weight_sampler=sobol", "--dry-run"]) == 0
    assert "scrambled Sobol points per group" in capsys.readouterr().out
    assert OmegaConf.load(out / "verl_config.yaml").algorithm.vpo.weight_sampler == "sobol"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["env=maze-v9"], "unknown env id 'maze-v9'"),
        (["method=ppo"], "unknown method 'ppo'"),
        (["method=vpo", "m=1"], "m must be >= 2"),
        (["method=grpo", "m=3"], "single-answer, so m must be 1"),
        (["model=/no/such/model"], "does not exist"),
        (["trainer.no_such_key=1"], "rejected the overrides"),
        (["temperature=0.5"], "unknown option 'temperature'"),
        (["logger=console,neptune"], "unknown logger(s) ['neptune']"),
        (["n_gpus=3"], "validate_config rejected the cell"),
        (["n=three"], "option n expects an integer, got 'three'"),
        (["--n_gpus=2"], "write n_gpus=2, not '--n_gpus=2'"),
        (["temprature=0.5"], "unknown option 'temprature'; the options are: env, method, model, m, n, n_gpus,"),
        (["env=maze-v1", "env.train_size=abc"], "env.train_size of maze-v1 expects int, got 'abc'"),
        (["env=maze-v1", "env.trainsize=3"], "env.trainsize is not an option of maze-v1; did you mean env.train_size?"),
        (["env.data_dir=/x"], "pass env=ID (installed: "),
        (["weight_sampler=halton"], "weight_sampler must be one of ('dirichlet', 'sobol')"),
    ],
)
def test_bad_input_fails_before_launch(argv, message, capsys, tmp_path):
    env = [] if any(a.startswith("env") for a in argv) else ["env=maze-v1"]
    assert main([*env, *argv, f"out={tmp_path}", "--dry-run"]) == 2
    assert message in capsys.readouterr().err


def test_an_unexpected_value_error_is_a_traceback_not_a_one_line_message(monkeypatch, tmp_path):
    """Only the project's user-error types become ``error: ...`` lines; a bug's ValueError propagates."""
    from vpo_engines.verl import launch

    def broken(_config):
        raise ValueError("could not broadcast input array from shape (3,) into shape (2,)")

    monkeypatch.setattr(launch, "validate", broken)
    with pytest.raises(ValueError, match="could not broadcast"):
        main(["env=maze-v1", "method=vpo", f"out={tmp_path}", "--dry-run"])


def test_help_lists_every_own_key(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    assert text.startswith("usage: vpo train engine=verl [key=value ...] [section.key=value ...] [--dry-run]")
    rows = {line.split()[0] for line in text.splitlines() if line.startswith("  ") and not line.startswith("    ")}
    own = {f.name for f in dataclasses.fields(LaunchConfig)} - {"env_options", "verl_overrides", "dry_run"}
    assert own | {"--dry-run", "env.<key>", "section.key"} == rows
    assert "  nnodes            an integer [1]" in text  # the layer's one format: key, type [default], meaning


def test_launch_options_are_the_config_layers(tmp_path):
    config = parse_launch(
        [
            "env=maze-v1",
            "n=4",
            "alpha=0.5",
            "env.test_size=5",
            "trainer.total_epochs=2",
            "+algorithm.vpo.k=4",
            "--dry-run",
        ]
    )
    assert (config.env, config.n, config.alpha, config.dry_run) == ("maze-v1", 4, 0.5, True)
    assert config.env_options == {"test_size": 5}
    assert config.verl_overrides == ["trainer.total_epochs=2", "+algorithm.vpo.k=4"]
    assert parse_launch(["dry_run=true"]).dry_run
    assert not parse_launch([]).dry_run
    with pytest.raises(ConfigError, match=r"^unknown option 'nn'; did you mean n\? the options are: env, method,"):
        parse_launch(["nn=3"])


def test_merge_command_is_veRLs_model_merger(monkeypatch, capsys):
    command = merge_command("runs/x/checkpoints", "runs/x/hf", step=378)
    assert command == (
        "python -m verl.model_merger merge --backend fsdp --local_dir runs/x/checkpoints/global_step_378/actor "
        "--target_dir runs/x/hf"
    )
    from verl.model_merger.__main__ import main as merger_main  # the CLI exists with these flags

    monkeypatch.setattr(sys, "argv", ["verl.model_merger", "merge", "--help"])
    with pytest.raises(SystemExit) as info:
        merger_main()
    assert info.value.code == 0
    usage = capsys.readouterr().out
    assert all(flag in usage for flag in ("--backend", "--local_dir", "--target_dir"))


def test_overlong_prompts_are_counted_as_veRL_counts_them(tokenizer):
    rows = rows_for("maze-v1", "test", "vpo", env_config={"test_size": 6})
    texts = [tokenizer.apply_chat_template(r["prompt"], add_generation_prompt=True, tokenize=False) for r in rows]
    lengths = [len(tokenizer(text, add_special_tokens=False)["input_ids"]) for text in texts]
    limit = max(lengths) - 1
    report = count_overlong(rows, tokenizer, limit, {})
    assert (report.total, report.dropped, report.longest) == (6, sum(n > limit for n in lengths), max(lengths))
    assert report.dropped >= 1
    assert f"{report.dropped} of 6 prompts" in report.describe()
    assert count_overlong(rows, tokenizer, max(lengths), {}).dropped == 0


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
    train = env.score_completion(task, text, mode=mode, m=m).training_rewards
    goal = np.asarray(row["extra_info"]["goal_weights"])[None] if method == "goal_cond" else None
    expected = rollout_scalars(
        RolloutBatch.of(train[None, None], w_star=env.reward_spec.w_star, keys=["uid-7"], goal_weights=goal),
        AdvantageConfig.parse(method, seed=3, num_weights=50),
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


def test_reward_manager_draws_sobol_weights_when_asked(tokenizer):
    env = vpo_core.make("maze-v1", train_size=5, test_size=5)
    row = rows_for("maze-v1", "test", "vpo", env_config={"test_size": 5})[2]
    task = env.tasks("test")[2]
    text = env.reference_completion(task, mode="multi", m=3)
    config = OmegaConf.create({"algorithm": {"vpo": {"seed": 3, "num_weights": 16, "weight_sampler": "sobol"}}})
    manager = get_reward_manager_cls("vpo")(config, tokenizer, None)
    out = asyncio.run(manager.run_single(_trajectory(tokenizer, row, text, "uid-7")))
    train = env.score_completion(task, text, mode="multi", m=3).training_rewards
    weights = sobol_weights(4, 16, ["uid-7"], seed=3)[0]
    assert out["reward_score"] == pytest.approx(float(np.mean((train @ weights.T).max(axis=0))), rel=1e-9)


def test_group_weights_match_across_fresh_processes():
    row = rows_for("maze-v1", "test", "vpo", env_config={"test_size": 3})[1]
    code = (
        "import json, sys\n"
        "from vpo_engines.verl.reward import score_trajectory\n"
        "row = json.loads(sys.argv[1])\n"
        "print(repr(score_trajectory('<route_1>RIGHT DOWN</route_1><route_2>DOWN</route_2>', row, 'uid-x',"
        " {'seed': 5, 'num_weights': 100, 'alpha': 1.0})['reward_score']))\n"
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
        score_trajectory("<route_1>UP</route_1>", info, "u", {"seed": 0, "num_weights": 10, "alpha": 1.0})


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


# ---------------------------------------------------------------------------------- README table
README = Path(__file__).resolve().parents[2] / "README_verl.md"


@pytest.mark.parametrize("env_id", sorted(PAPER))
def test_the_readme_table_lists_every_recipe_value_with_its_source(env_id):
    text = README.read_text()
    section = text.split(f"### `{env_id}`", 1)[1].split("###", 1)[0]
    recipe = resolve_env_class(env_id).profile.recipe
    rows = {line.split("|")[1].strip(): line.split("|")[2:-1] for line in section.splitlines() if line.startswith("| ")}
    for name, label in [
        ("model", "`actor_rollout_ref.model.path`"),
        ("n_gpus", "`trainer.n_gpus_per_node`"),
        ("train_batch", "`data.train_batch_size`"),
        ("mini_batch", "`actor.ppo_mini_batch_size`"),
        ("prompt_length", "`data.max_prompt_length`, single-answer"),
        ("response_single", "`data.max_response_length`, single-answer"),
        ("response_multi", "`data.max_response_length`, multi-answer (m = 3)"),
        ("epochs", "`trainer.total_epochs`"),
    ]:
        value, source = (cell_text.strip() for cell_text in rows[label])
        assert value == str(getattr(recipe, name)), (env_id, name)
        assert source == recipe.sources[name], (env_id, name)


def test_the_readme_lists_every_shared_override():
    text = README.read_text()
    for override, source in SHARED:
        assert f"| `{override}` | {source} |" in text


# ------------------------------------------------------------------------- chat-template pre-fill
# A chat template that behaves like Qwen3's: with enable_thinking=false the assistant turn starts with an
# empty think block that is part of the prompt, not of the generated tokens.
QWEN3_LIKE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


def test_template_prefill_is_what_the_options_add_to_the_generation_prompt(tokenizer):
    from vpo_engines.verl.reward import template_prefill

    qwen3_like = copy.deepcopy(tokenizer)
    qwen3_like.chat_template = QWEN3_LIKE
    assert template_prefill(qwen3_like, {"enable_thinking": False}) == "<think>\n\n</think>\n\n"
    assert template_prefill(qwen3_like, {}) == ""
    assert template_prefill(tokenizer, {"enable_thinking": False}) == ""  # a template that ignores the option


def test_the_reward_manager_scores_the_prefilled_turn(tokenizer, monkeypatch):
    from vpo_engines.verl import reward

    qwen3_like = copy.deepcopy(tokenizer)
    qwen3_like.chat_template = QWEN3_LIKE
    row = rows_for("maze-v1", "test", "grpo", env_config={"test_size": 3})[0]
    seen = []
    monkeypatch.setattr(reward, "score_trajectory", lambda text, *args, **kwargs: seen.append(text) or {})
    thinking_off = {"algorithm": {"vpo": {}}, "data": {"apply_chat_template_kwargs": {"enable_thinking": False}}}
    for config in (thinking_off, {"algorithm": {"vpo": {}}}):
        manager = get_reward_manager_cls("vpo")(OmegaConf.create(config), qwen3_like, None)
        asyncio.run(manager.run_single(_trajectory(tokenizer, row, "<answer>RIGHT</answer>", "u")))
    assert seen == ["<think>\n\n</think>\n\n<answer>RIGHT</answer>", "<answer>RIGHT</answer>"]


def test_a_method_with_a_normaliser_veRL_cannot_run_gets_a_clear_error(monkeypatch, tmp_path, capsys):
    from vpo_core import methods

    monkeypatch.setitem(methods.NORMALIZERS, "rank", methods.Normalizer("rank", lambda s, **kw: s, ()))
    monkeypatch.setitem(
        methods.METHODS, "rank_grpo", methods.Method("rank_grpo", "single", 1, "w_star", "rank", False, "")
    )
    with pytest.raises(ValueError, match="normalises with 'rank', which the veRL adapter has no advantage estimator"):
        estimator_for("rank_grpo")
    assert main(["env=maze-v1", "method=rank_grpo", f"out={tmp_path / 'run'}", "--dry-run"]) == 2
    assert "train it with the local engine" in capsys.readouterr().err.lower()
