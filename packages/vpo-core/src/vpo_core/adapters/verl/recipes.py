"""The paper's training settings per (method × domain) as veRL overrides (appendix "Training Setup").

Shared by every cell: AdamW lr 1e-6 constant, weight decay 0.01, grad clip 1.0, PPO clip 0.2 with
dual clip 3.0, token-mean loss, ppo_epochs 1, no entropy bonus, low_var_kl KL loss 1e-3 against the
initial policy (no KL in the reward), n = 8 rollouts at temperature 1.0 (top-p 1.0; 0.8 for LiveCodeBench).
"""

from __future__ import annotations

from dataclasses import dataclass

from vpo_core.methods import METHODS, get_method

__all__ = ["DOMAINS", "ESTIMATOR", "Domain", "overrides"]


@dataclass(frozen=True)
class Domain:
    """Per-domain settings: model, batch sizes (by model size), lengths per mode, epochs."""

    model: str
    train_batch: int
    mini_batch: int
    micro_batch: int
    prompt_length: int
    response_single: int
    response_multi: int
    epochs: int
    temperature: float = 1.0


DOMAINS = {
    "maze-v1": Domain("Qwen/Qwen3-4B", 128, 64, 8, 1024, 512, 1536, 1),
    "musique-v1": Domain("Qwen/Qwen3-1.7B", 128, 64, 8, 4096, 512, 1536, 1),
    "eureqa-v1": Domain("Qwen/Qwen3-8B", 64, 32, 2, 2048, 512, 1536, 1),
    "toolrl-v1": Domain("Qwen/Qwen3-1.7B", 128, 64, 8, 2048, 1024, 2048, 1),
    # the LiveCodeBench case study: generation temperature 0.8, 4096 + 4096 tokens (appendix)
    "lcb-v1": Domain("Qwen/Qwen2.5-Coder-7B-Instruct", 64, 32, 2, 4096, 4096, 4096, 1, temperature=0.8),
}

# The group normaliser of each method as a veRL estimator name. veRL's built-in "grpo" is its unbiased
# z-score; the paper's appendix uses the population std, hence "grpo_pop" (registered by our plugin).
ESTIMATOR = {
    "grpo": "grpo_pop",
    "random_w": "grpo_pop",
    "goal_cond": "grpo_pop",
    "multi_rlvr": "grpo_pop",
    "vpo": "grpo_pop",
    "max_at_k": "max_at_k",
    "maxrl": "maxrl",
    "gdpo": "gdpo",
}


def overrides(
    env_id: str,
    method: str,
    *,
    model: str | None,
    train_files: str,
    val_files: str,
    n: int = 8,
    n_gpus: int = 8,
    d: int | None = None,
) -> list[str]:
    """Hydra overrides of veRL's ``ppo_trainer`` config for one paper cell.

    Args:
        env_id: The domain.
        method: The method.
        model: HF id or path (default: the paper's model of the domain).
        train_files: Parquet of the train split (from `export`).
        val_files: Parquet of the test split.
        n: Rollouts per prompt (8; the paper's ablation uses 24).
        n_gpus: GPUs per node.
        d: Reward dimensions (GDPO's reward keys r_0..r_{d-1}).
    """
    if env_id not in DOMAINS:
        raise ValueError(f"no paper settings for env {env_id!r}; domains: {sorted(DOMAINS)}.")
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {sorted(METHODS)}.")
    domain = DOMAINS[env_id]
    multi = get_method(method).mode == "multi"
    response = domain.response_multi if multi else domain.response_single
    actor = "actor_rollout_ref.actor"
    out = [
        f"data.train_files={train_files}",
        f"data.val_files={val_files}",
        f"data.train_batch_size={domain.train_batch}",
        f"data.max_prompt_length={domain.prompt_length}",
        f"data.max_response_length={response}",
        "data.filter_overlong_prompts=true",
        f"actor_rollout_ref.model.path={model or domain.model}",
        f"{actor}.optim.lr=1e-6",
        f"{actor}.optim.weight_decay=0.01",
        f"{actor}.optim.lr_warmup_steps_ratio=0.0",
        f"{actor}.grad_clip=1.0",
        f"{actor}.clip_ratio=0.2",
        f"{actor}.clip_ratio_c=3.0",
        f"{actor}.loss_agg_mode=token-mean",
        f"{actor}.ppo_epochs=1",
        f"{actor}.entropy_coeff=0",
        f"{actor}.use_kl_loss=true",
        f"{actor}.kl_loss_coef=0.001",
        f"{actor}.kl_loss_type=low_var_kl",
        f"{actor}.ppo_mini_batch_size={domain.mini_batch}",
        f"{actor}.ppo_micro_batch_size_per_gpu={domain.micro_batch}",
        f"actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu={domain.micro_batch}",
        f"actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={domain.micro_batch}",
        "actor_rollout_ref.rollout.name=vllm",
        f"actor_rollout_ref.rollout.n={n}",
        f"actor_rollout_ref.rollout.temperature={domain.temperature}",
        "actor_rollout_ref.rollout.top_p=1.0",
        f"algorithm.adv_estimator={ESTIMATOR[method]}",
        "algorithm.use_kl_in_reward=false",
        "reward.reward_manager.source=register",
        "reward.reward_manager.name=vpo",
        f"trainer.total_epochs={domain.epochs}",
        f"trainer.n_gpus_per_node={n_gpus}",
        "trainer.logger=[console]",
        "trainer.project_name=vpo",
        f"trainer.experiment_name={env_id}-{method}-n{n}",
    ]
    if method == "gdpo":
        if d is None:
            raise ValueError("gdpo needs d, the number of reward dimensions (its reward keys r_0..r_{d-1}).")
        keys = ",".join(f"r_{i}" for i in range(d))
        # the built-in gdpo estimator receives the per-dimension extras only in the legacy (v0) trainer
        out += ["trainer.use_v1=false", f"+algorithm.gdpo_reward_keys=[{keys}]"]
    return out
