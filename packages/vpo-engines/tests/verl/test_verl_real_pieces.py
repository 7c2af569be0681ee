"""veRL's own trainer pieces on CPU with the real SmolLM2 chat model: the ``main_ppo`` entry on the
adapter's config, the reward loop on a local Ray cluster with the ``vpo`` plugin, the advantage step,
the legacy trainer the GDPO route needs, and ``apps/train.py engine=verl`` on a machine without a GPU.

What still needs a GPU (vLLM rollouts, the FSDP actor, checkpoints) is not run here: the launcher stops
before it with one sentence (`test_train_py_engine_verl_without_a_gpu_stops_with_one_sentence`).
"""

from __future__ import annotations

import copy
import importlib
import inspect
import json
import os
import re
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
pytestmark = pytest.mark.verl

from omegaconf import OmegaConf  # noqa: E402
from verl import DataProto  # noqa: E402

import vpo_core  # noqa: E402
from vpo_core.layout import zscore_by_index  # noqa: E402
from vpo_core.normalizers import gdpo_advantages  # noqa: E402
from vpo_engines.verl import launch  # noqa: E402
from vpo_engines.verl.export import rows_for  # noqa: E402
from vpo_engines.verl.launch import (  # noqa: E402
    LEGACY_TRAINER,
    CannotLaunch,
    check_accelerators,
    check_rollout,
    check_trainer,
    plan,
    trainer_modules,
)
from vpo_engines.verl.reward import score_trajectory, template_prefill  # noqa: E402

ROOT = Path(__file__).resolve().parents[4]
ENV_CONFIG = {"train_size": 2, "test_size": 2}
SEED, NUM_WEIGHTS, G = 1, 32, 4


def _plan(method: str, model: str | Path, out: Path, *extra: str) -> Any:
    env = [f"env.{key}={value}" for key, value in ENV_CONFIG.items()]
    p, _ = plan(
        [
            "env=maze-v1",
            f"method={method}",
            f"model={model}",
            f"n={G}",
            f"seed={SEED}",
            f"num_weights={NUM_WEIGHTS}",
            f"out={out}",
            *env,
            *extra,
        ]
    )
    return p


def _record_run_ppo(monkeypatch: pytest.MonkeyPatch, main_ppo: Any) -> list[tuple[Any, Any]]:
    """Replace only the step that starts Ray and the GPU workers by a recorder of its call."""
    calls: list[tuple[Any, Any]] = []
    monkeypatch.setattr(
        main_ppo, "run_ppo", lambda config, task_runner_class: calls.append((config, task_runner_class))
    )
    return calls


def _responses(row: dict[str, Any]) -> list[str]:
    """G responses of differing rewards to one maze row: the env's reference, another valid route (single
    answer) or one route written m times (multi-answer), prose, and nothing."""
    env = vpo_core.make("maze-v1", **ENV_CONFIG)
    info = row["extra_info"]
    task = env.tasks(info["split"])[int(info["index"])]
    m = int(info["m"])
    routes = re.findall(r"<route_\d+>([A-Z ]*)</route_\d+>", env.reference_completion(task, mode="multi", m=3) or "")
    assert len(set(routes)) >= 2, "the maze's reference routes must differ"
    if info["mode"] == "multi":
        good = [
            env.reference_completion(task, mode="multi", m=m),
            "\n".join(f"<route_{i}>{routes[0]}</route_{i}>" for i in range(1, m + 1)),
        ]
    else:
        good = [env.reference_completion(task, mode="single", m=1), f"<answer>{routes[1]}</answer>"]
    assert all(good), "the env must have reference completions"
    return [*good, "I am not able to solve this maze.", ""]


# ---------------------------------------------------------------------------- main_ppo on our config
@pytest.mark.real_model
@pytest.mark.parametrize("method", ["vpo", "gdpo"])
def test_main_ppo_takes_the_adapters_config_up_to_its_trainer(smollm2, tmp_path, monkeypatch, method):
    """`python -m verl.trainer.main_ppo <our overrides>` runs veRL's own device set-up and validate_config
    on the composed config and hands it to the trainer of the route: v1 for VPO, legacy for GDPO."""
    main_ppo = importlib.import_module("verl.trainer.main_ppo")
    p = _plan(method, smollm2, tmp_path)
    calls = _record_run_ppo(monkeypatch, main_ppo)
    main_ppo.main(copy.deepcopy(p.config))  # hydra's main passes a given config straight to the task function
    ((config, runner),) = calls
    assert config.actor_rollout_ref.model.path == str(smollm2)
    assert config.reward.reward_manager.name == "vpo"
    if method == "gdpo":
        legacy = getattr(importlib.import_module(LEGACY_TRAINER[0]), LEGACY_TRAINER[1])
        assert runner is legacy
        assert config.algorithm.adv_estimator == "gdpo"
    else:
        assert runner is main_ppo.TaskRunnerV1
        assert config.algorithm.adv_estimator == "grpo_pop"
    # what the Ray task runner imports next: fails here (not minutes later in an actor) on a partial install
    check_trainer(p.config)
    assert all(module in sys.modules for module in trainer_modules(p.config))


# ------------------------------------------------------------------- the legacy trainer of GDPO
def test_the_legacy_trainer_the_gdpo_route_needs_keeps_its_call(tmp_path, monkeypatch):
    """GDPO runs veRL's built-in gdpo estimator, which gets the per-dimension reward extras only from the
    legacy trainer (trainer.use_v1=false): its task runner, trainer and advantage call must stay as used."""
    from verl.trainer.ppo import core_algos, ray_trainer

    p = _plan("gdpo", "Qwen/Qwen3-4B", tmp_path)  # composing needs no model files
    assert p.config.trainer.use_v1 is False
    keys = [f"r_{i}" for i in range(vpo_core.make("maze-v1", **ENV_CONFIG).reward_spec.dim)]
    assert list(p.config.algorithm.gdpo_reward_keys) == keys

    # main_ppo dispatches use_v1=false to the legacy task runner, whose run(config) builds a RayPPOTrainer
    main_ppo = importlib.import_module("verl.trainer.main_ppo")
    calls = _record_run_ppo(monkeypatch, main_ppo)
    main_ppo.main(copy.deepcopy(p.config))
    runner_cls = getattr(importlib.import_module(LEGACY_TRAINER[0]), LEGACY_TRAINER[1])
    assert calls[0][1] is runner_cls
    inspect.signature(runner_cls.__ray_actor_class__.run).bind(object(), p.config)  # run(self, config)
    assert callable(ray_trainer.RayPPOTrainer.fit)

    # RayPPOTrainer.fit's advantage call, with the arguments it passes
    signature = inspect.signature(ray_trainer.compute_advantage)
    algorithm = p.config.algorithm
    signature.bind(
        DataProto(),
        adv_estimator=algorithm.adv_estimator,
        gamma=algorithm.gamma,
        lam=algorithm.lam,
        num_repeat=p.config.actor_rollout_ref.rollout.n,
        norm_adv_by_std_in_grpo=algorithm.get("norm_adv_by_std_in_grpo", True),
        config=algorithm,
    )
    gdpo = core_algos.get_adv_estimator_fn(algorithm.adv_estimator)
    assert {"non_tensor_batch", "batch", "config", "index"} <= set(inspect.signature(gdpo).parameters)

    # and it hands our per-dimension extras to gdpo: the advantages are vpo-core's GDPO, not a scalar z-score
    rows = rows_for("maze-v1", "train", "gdpo", seed=SEED, env_config=ENV_CONFIG)
    texts = [_responses(row) for row in rows]
    lengths = np.array([[3, 5, 2, 1], [4, 1, 6, 2]])
    width = int(lengths.max())
    mask = (torch.arange(width)[None, :] < torch.as_tensor(lengths.reshape(-1))[:, None]).long()
    uids = [f"uid-{b}" for b in range(len(rows)) for _ in range(G)]
    scored = [
        score_trajectory(text, row["extra_info"], f"uid-{b}", {"seed": SEED, "num_weights": NUM_WEIGHTS, "alpha": 1.0})
        for b, (row, group) in enumerate(zip(rows, texts, strict=True))
        for text in group
    ]
    scores = torch.tensor([s["reward_score"] for s in scored], dtype=torch.float32)
    rewards = torch.zeros(len(scored), width)
    rewards[torch.arange(len(scored)), torch.as_tensor(lengths.reshape(-1)) - 1] = scores
    prompts = torch.zeros(len(scored), 2, dtype=torch.long)
    data = DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": torch.zeros(len(scored), width, dtype=torch.long),
            "attention_mask": torch.cat([torch.ones_like(prompts), mask], dim=1),
            "response_mask": mask,
            "token_level_rewards": rewards,
        },
        non_tensors={"uid": np.array(uids, dtype=object)},
    )
    data.non_tensor_batch.update({k: np.array([s["reward_extra_info"][k] for s in scored]) for k in keys})
    out = ray_trainer.compute_advantage(
        data,
        adv_estimator=algorithm.adv_estimator,
        num_repeat=G,
        norm_adv_by_std_in_grpo=True,
        config=algorithm,
    )
    per_dim = np.array([[s["reward_extra_info"][k] for k in keys] for s in scored]).reshape(len(rows), G, len(keys))
    assert np.ptp(per_dim, axis=1).max() > 0, "the responses must differ in some reward dimension"
    want = gdpo_advantages(per_dim, std="unbiased", response_lengths=lengths).reshape(-1)
    np.testing.assert_allclose(out.batch["advantages"][:, 0].numpy(), want, atol=2e-5)


# -------------------------------------------------------------------- the reward loop on Ray
def _rollouts(tokenizer: Any, rows: list[dict[str, Any]], chat_kwargs: dict[str, Any]) -> tuple[DataProto, list]:
    """A rollout batch as veRL's agent loop leaves it: G responses per prompt, prompts left-padded, responses
    right-padded and ended by the chat model's EOS (``<|im_end|>``), one uid per prompt.

    Returns:
        The DataProto (2 G rows) and, per row, (response text, extra_info, uid).
    """
    eos = tokenizer.convert_tokens_to_ids("<|im_end|>")
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else eos
    prompt_ids, response_ids, meta = [], [], []
    for b, row in enumerate(rows):
        text = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False, **chat_kwargs)
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        uid = str(uuid.UUID(int=b + 1, version=4))
        for response in _responses(row):
            prompt_ids.append(ids)
            response_ids.append([*tokenizer(response, add_special_tokens=False)["input_ids"], eos])
            meta.append((response, row, uid))
    width_p, width_r = max(map(len, prompt_ids)), max(map(len, response_ids))
    n = len(meta)
    prompts = torch.full((n, width_p), pad, dtype=torch.long)
    responses = torch.full((n, width_r), pad, dtype=torch.long)
    mask = torch.zeros(n, width_p + width_r, dtype=torch.long)
    for i, (p_ids, r_ids) in enumerate(zip(prompt_ids, response_ids, strict=True)):
        prompts[i, width_p - len(p_ids) :] = torch.tensor(p_ids)
        responses[i, : len(r_ids)] = torch.tensor(r_ids)
        mask[i, width_p - len(p_ids) : width_p + len(r_ids)] = 1
    data = DataProto.from_dict(
        tensors={
            "prompts": prompts,
            "responses": responses,
            "input_ids": torch.cat([prompts, responses], dim=1),
            "attention_mask": mask,
            "position_ids": torch.clamp(torch.cumsum(mask, dim=1) - 1, min=0),
        },
        non_tensors={
            "data_source": np.array([row["data_source"] for _, row, _ in meta], dtype=object),
            "reward_model": np.array([row["reward_model"] for _, row, _ in meta], dtype=object),
            "extra_info": np.array([row["extra_info"] for _, row, _ in meta], dtype=object),
            "uid": np.array([uid for *_, uid in meta], dtype=object),
        },
    )
    return data, [(text, row["extra_info"], uid) for text, row, uid in meta]


def _advantage_step(data: DataProto, scored: DataProto, config: Any) -> DataProto:
    """What RayPPOTrainer.fit does between the reward and the actor update (no KL in the reward)."""
    from verl.trainer.ppo import ray_trainer
    from verl.trainer.ppo.reward import extract_reward

    data = data.union(scored)
    reward_tensor, extras = extract_reward(data)
    data.batch["token_level_scores"] = reward_tensor
    data.non_tensor_batch.update({k: np.array(v) for k, v in extras.items()})
    assert config.algorithm.use_kl_in_reward is False
    data.batch["token_level_rewards"] = data.batch["token_level_scores"]
    algorithm = config.algorithm
    return ray_trainer.compute_advantage(
        data,
        adv_estimator=algorithm.adv_estimator,
        gamma=algorithm.gamma,
        lam=algorithm.lam,
        num_repeat=config.actor_rollout_ref.rollout.n,
        norm_adv_by_std_in_grpo=algorithm.get("norm_adv_by_std_in_grpo", True),
        config=algorithm,
    )


@pytest.mark.slow
@pytest.mark.real_model
def test_veRLs_reward_loop_on_ray_and_its_advantage_step_equal_in_process_scoring(smollm2, tmp_path):
    """RewardLoopManager starts 2 RewardLoopWorker actors on a 2-CPU Ray cluster; each loads the real tokenizer
    and resolves the ``vpo`` manager through the plugin in its own process. Scores, extras and advantages
    (VPO: grpo_pop; GDPO: veRL's gdpo on our r_i extras) equal in-process scoring."""
    import ray
    from transformers import AutoTokenizer
    from verl.experimental.reward_loop import RewardLoopManager
    from verl.trainer.constants_ppo import get_ppo_ray_runtime_env

    plans = {method: _plan(method, smollm2, tmp_path / method, "reward.num_workers=2") for method in ("vpo", "gdpo")}
    config = copy.deepcopy(plans["vpo"].config)
    OmegaConf.resolve(config)  # as veRL's task runner does before building the managers
    assert (config.reward.num_workers, config.reward.reward_manager.name) == (2, "vpo")
    tokenizer = AutoTokenizer.from_pretrained(smollm2)
    chat_kwargs = dict(config.data.apply_chat_template_kwargs)
    prefill = template_prefill(tokenizer, chat_kwargs)
    batches = {}
    for method in plans:
        rows = rows_for("maze-v1", "train", method, seed=SEED, env_config=ENV_CONFIG)
        batches[method] = _rollouts(tokenizer, rows, chat_kwargs)

    assert not ray.is_initialized()
    ray.init(num_cpus=2, runtime_env=get_ppo_ray_runtime_env(), include_dashboard=False, log_to_driver=False)
    try:
        manager = RewardLoopManager(config)
        workers = ray.get(
            [
                w.__ray_call__.remote(
                    lambda worker: (
                        os.getpid(),
                        f"{type(worker.reward_manager).__module__}.{type(worker.reward_manager).__name__}",
                        worker.input_tokenizer.name_or_path,
                        worker.input_tokenizer.chat_template is not None,
                    )
                )
                for w in manager.reward_loop_workers
            ]
        )
        scored = {method: manager.compute_rm_score(data) for method, (data, _) in batches.items()}
    finally:
        ray.shutdown()

    pids = {worker[0] for worker in workers}
    assert len(pids) == 2, "two reward workers, each in its own process"
    assert os.getpid() not in pids
    assert {worker[1:] for worker in workers} == {("vpo_engines.verl.reward.VPORewardManager", str(smollm2), True)}
    for method, (data, meta) in batches.items():
        expected = [
            score_trajectory(prefill + text, info, uid, {"seed": SEED, "num_weights": NUM_WEIGHTS, "alpha": 1.0})
            for text, info, uid in meta
        ]
        got = scored[method]
        want_scores = torch.tensor([e["reward_score"] for e in expected], dtype=torch.float32)
        assert torch.equal(got.batch["rm_scores"].sum(-1), want_scores), method  # rm_scores are float32
        rewards = {tuple(e["reward_extra_info"][f"r_{i}"] for i in range(4)) for e in expected}
        assert len(rewards) >= 3, "the responses must differ in their rewards"
        assert method == "gdpo" or len(set(want_scores.tolist())) >= 3  # GDPO's scalar is w*.r, equal for 2 routes
        for key in expected[0]["reward_extra_info"]:
            assert got.non_tensor_batch[key].tolist() == [e["reward_extra_info"][key] for e in expected], (method, key)
        algorithm_config = plans[method].config
        out = _advantage_step(data, scored[method], algorithm_config)
        mask = out.batch["response_mask"]
        uids = [uid for *_, uid in meta]
        if method == "vpo":
            want = zscore_by_index([e["reward_score"] for e in expected], uids)
        else:
            keys = list(algorithm_config.algorithm.gdpo_reward_keys)
            per_dim = np.array([[e["reward_extra_info"][k] for k in keys] for e in expected]).reshape(-1, G, len(keys))
            lengths = mask.sum(-1).numpy().reshape(-1, G)
            want = gdpo_advantages(per_dim, std="unbiased", response_lengths=lengths).reshape(-1)
        want_tokens = torch.as_tensor(want, dtype=torch.float32)[:, None] * mask
        torch.testing.assert_close(out.batch["advantages"], want_tokens, atol=1e-5, rtol=0)
        assert out.batch["advantages"].abs().sum() > 0


# ---------------------------------------------------------------------- apps/train.py without a GPU
@pytest.mark.slow
@pytest.mark.real_model
def test_train_py_engine_verl_without_a_gpu_stops_with_one_sentence(smollm2, tmp_path):
    out = tmp_path / "run"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}  # no GPU, even where the test machine has one
    env.pop("RAY_ADDRESS", None)
    args = ["engine=verl", f"model={smollm2}", "env=maze-v1", "method=vpo", f"out={out}", "limit=6"]
    proc = subprocess.run(
        [sys.executable, str(ROOT / "apps" / "train.py"), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 1, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr + proc.stdout
    last = proc.stderr.strip().splitlines()[-1]
    assert last == (
        "error: veRL needs 4 CUDA GPUs for its rollout (vLLM) and actor (FSDP) and this machine has none: everything "
        f"before that ran (composed and validated veRL's config into {out / 'verl_config.yaml'}, exported 6 train "
        f"and 6 test prompts to {out / 'data'}), so run the same command on a GPU machine, or train on CPU with "
        "engine=local or engine=trl."
    )
    assert "launching:" not in proc.stderr
    assert proc.stdout.startswith("veRL run: maze-v1 x vpo (n = 8)")
    config = OmegaConf.load(out / "verl_config.yaml")
    assert config.actor_rollout_ref.model.path == str(smollm2)
    import datasets

    for split in ("train", "test"):
        rows = datasets.Dataset.from_parquet(str(out / "data" / f"{split}.parquet")).to_list()
        assert [row["extra_info"]["index"] for row in rows] == list(range(6))
        assert json.loads((out / "data" / f"{split}_overlong.json").read_text())["total"] == 6


# ------------------------------------------------------------------------------ the launch checks
@pytest.fixture
def composed(tmp_path):
    return _plan("vpo", "Qwen/Qwen3-4B", tmp_path).config


def test_a_single_node_run_needs_its_gpus_here(composed, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(launch, "local_accelerators", lambda: ("CUDA GPU", 1))
    with pytest.raises(CannotLaunch, match=r"asked for 4 CUDA GPUs per node .* this machine has 1: everything before "):
        check_accelerators(composed, "X")
    monkeypatch.setattr(launch, "local_accelerators", lambda: ("CUDA GPU", 4))
    check_accelerators(composed, "X")


def test_a_run_on_an_existing_ray_cluster_or_several_nodes_is_not_checked_here(composed, monkeypatch):
    monkeypatch.setattr(launch, "local_accelerators", lambda: ("CUDA GPU", 0))
    monkeypatch.setenv("RAY_ADDRESS", "10.0.0.1:6379")
    check_accelerators(composed, "X")
    monkeypatch.delenv("RAY_ADDRESS")
    with pytest.raises(CannotLaunch, match="this machine has none"):
        check_accelerators(composed, "X")
    two_nodes = copy.deepcopy(composed)
    two_nodes.trainer.nnodes = 2
    check_accelerators(two_nodes, "X")


def test_check_accelerators_counts_this_machines_devices(composed, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    kind, found = launch.local_accelerators()
    if kind == "CUDA GPU":
        assert found == (torch.cuda.device_count() if torch.cuda.is_available() else 0)
    if found >= composed.trainer.n_gpus_per_node:
        check_accelerators(composed, "X")
    else:
        with pytest.raises(CannotLaunch, match="everything before that ran"):
            check_accelerators(composed, "X")


def test_a_partial_install_names_the_missing_module(composed, monkeypatch):
    monkeypatch.setattr(launch, "V1_TRAINER_MODULES", ("vpo_no_such_module_for_the_test",))
    with pytest.raises(CannotLaunch, match=r"v1 trainer does not import here .*'vpo_no_such_module_for_the_test'"):
        check_trainer(composed)


def test_a_missing_rollout_engine_is_named_before_launch(composed):
    import importlib.util

    assert composed.actor_rollout_ref.rollout.name == "vllm"
    if importlib.util.find_spec("vllm") is None:  # the verl group alone (CI): vLLM comes with the vllm group
        with pytest.raises(CannotLaunch, match=r"rollout engine vllm .* is not installed here.*uv sync --group vllm"):
            check_rollout(composed)
    else:
        check_rollout(composed)
    sglang = copy.deepcopy(composed)
    sglang.actor_rollout_ref.rollout.name = "sglang"
    if importlib.util.find_spec("sglang") is None:
        with pytest.raises(CannotLaunch, match=r"rollout engine sglang .*install sglang"):
            check_rollout(sglang)
