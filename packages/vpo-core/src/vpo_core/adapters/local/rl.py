"""One RL step of the local engine: sample groups, score them, compute advantages, update."""

from __future__ import annotations

import time
from typing import Any, cast

import numpy as np
import torch

from vpo_core.adapters.local.config import TrainConfig
from vpo_core.adapters.local.errors import NonFiniteLossError
from vpo_core.adapters.local.loss import actor_loss
from vpo_core.adapters.local.policy import Policy
from vpo_core.advantages import Std, normalize_scalars, rollout_scalars
from vpo_core.env import TextEnv
from vpo_core.methods import get_method, goal_weights
from vpo_core.metrics import reward_diversity
from vpo_core.weights import stable_seed

__all__ = ["NonFiniteLossError", "goal_weights_for", "rl_step"]


def goal_weights_for(env: TextEnv[Any, Any], task: Any, seed: int) -> np.ndarray:
    """The goal-conditioned baseline's weights of a task: one Dir(1) draw keyed by the task id."""
    return goal_weights(env.spec_for(task).dim, seed=seed, task_id=task.id)


def rl_step(
    policy: Policy,
    reference: Policy,
    optimizer: torch.optim.Optimizer,
    env: TextEnv[Any, Any],
    train_tasks: list[Any],
    config: TrainConfig,
    *,
    step: int,
    max_new_tokens: int,
    temperature: float = 1.0,
    top_p: float = 1.0,
) -> dict[str, Any]:
    """Sample G rollouts for each of `config.prompts_per_step` prompts, score, and take PPO steps.

    Returns:
        The step's metrics (named as veRL logs them where veRL has the quantity): reward per dimension, mean w*-score, set reward (the method's rollout
        scalar), best-of-m, reward-space diversity of the groups, KL, entropy, timing.
    """
    t_start = time.perf_counter()
    method = get_method(config.method)
    mode, m, group = method.mode, int(config.m or 1), config.group_size
    rng = np.random.default_rng([config.seed, 2, step])
    tasks = [train_tasks[int(i)] for i in rng.choice(len(train_tasks), size=config.prompts_per_step, replace=False)]
    spec = env.spec_for(tasks[0])
    goal = np.stack([goal_weights_for(env, t, config.seed) for t in tasks]) if method.goal_prompt else None
    prompts = [
        policy.prompt_text(env.render_prompt(t, mode=mode, m=m, goal_weights=None if goal is None else goal[i]))
        for i, t in enumerate(tasks)
    ]
    texts, prompt_ids, response = policy.generate(
        prompts,
        num_samples=group,
        max_new_tokens=max_new_tokens,
        temperature=temperature,
        top_p=top_p,
        seed=stable_seed(config.seed, ("rollout", step)) % (2**63),
    )
    t_sampled = time.perf_counter()

    raw = np.zeros((len(tasks), group, m, spec.dim))
    train = np.zeros_like(raw)
    for i, text in enumerate(texts):
        b, g = divmod(i, group)
        scored = env.score_completion(tasks[b], text, mode=mode, m=m)  # one parse, one `rewards` call
        raw[b, g] = scored.rewards
        train[b, g] = scored.training_rewards
    mask = policy.response_mask(response)
    lengths = mask.sum(dim=1).clamp(min=1).cpu().numpy().reshape(len(tasks), group)
    keys = [f"{step}:{t.id}" for t in tasks]
    # the rollout scalars are computed once: they are both logged and normalised into the advantages
    scalars = rollout_scalars(
        config.method,
        train,
        w_star=spec.w_star,
        seed=config.seed,
        group_keys=keys,
        num_weights=config.num_weights,
        alpha=config.alpha,
        goal_weights=goal,
        weight_sampler=config.weight_sampler,
    )
    # TrainConfig checks std is population or unbiased (OmegaConf has no Literal fields)
    advantages = normalize_scalars(
        config.method,
        scalars,
        std=cast("Std", config.std),
        response_lengths=lengths if method.normalizer == "gdpo" else None,
    )
    t_scored = time.perf_counter()

    adv = torch.as_tensor(advantages.reshape(-1), dtype=torch.float32, device=policy.device)
    policy.model.eval()
    with torch.no_grad():
        old_logp, _ = policy.log_probs(prompt_ids, response)
        ref_logp, _ = reference.log_probs(prompt_ids, response)
    policy.model.train()
    order = torch.as_tensor(rng.permutation(len(texts)), device=policy.device)
    stats: dict[str, list[float]] = {
        "actor/pg_loss": [],
        "actor/kl_loss": [],
        "actor/entropy": [],
        "actor/pg_clipfrac": [],
        "actor/grad_norm": [],
    }
    for chunk in torch.chunk(order, config.mini_batches):
        logp, entropy = policy.log_probs(prompt_ids[chunk], response[chunk], with_entropy=True)
        loss, loss_stats = actor_loss(
            logp,
            old_logp[chunk],
            ref_logp[chunk],
            adv[chunk],
            mask[chunk],
            clip_ratio=config.clip_ratio,
            clip_ratio_c=config.clip_ratio_c,
            kl_coef=config.kl_coef,
        )
        if not torch.isfinite(loss):
            raise NonFiniteLossError(
                f"RL step {step}: the loss is {float(loss.detach())}; stopped before updating the model, so the last good "
                "checkpoint is kept. Lower lr= or kl_coef=, or check the env's rewards."
            )
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), config.grad_clip)
        if not torch.isfinite(grad_norm):
            raise NonFiniteLossError(
                f"RL step {step}: the gradient norm is {float(grad_norm)}; stopped before updating the model, so the "
                "last good checkpoint is kept. Lower lr= or check the env's rewards."
            )
        optimizer.step()
        stats["actor/pg_loss"].append(loss_stats["pg_loss"])
        stats["actor/kl_loss"].append(loss_stats["kl"])
        stats["actor/pg_clipfrac"].append(loss_stats["pg_clipfrac"])
        stats["actor/grad_norm"].append(float(grad_norm))
        if entropy is not None:
            token_entropy = (entropy.detach() * mask[chunk]).sum() / mask[chunk].sum().clamp(min=1)
            stats["actor/entropy"].append(float(token_entropy))
    policy.model.eval()
    t_done = time.perf_counter()

    w_scores = spec.scalarize(raw)  # (P, G, m)
    record: dict[str, Any] = {"step": step}
    record.update({f"reward/{name}": float(raw[..., i].mean()) for i, name in enumerate(spec.names)})
    record["mean_w_star"] = float(w_scores.mean())
    record["set_reward"] = float(np.mean(scalars))
    record["best_of_m"] = float(w_scores.max(axis=-1).mean())
    record["diversity"] = float(np.mean([reward_diversity(raw[b].reshape(-1, spec.dim)) for b in range(len(tasks))]))
    record["critic/score/mean"] = float(np.mean(scalars))  # veRL's score: the rollout scalar the method trains on
    record["critic/advantages/mean"] = float(advantages.mean())
    record["critic/advantages/max"] = float(advantages.max())
    record["critic/advantages/min"] = float(advantages.min())
    record["response_length/mean"] = float(lengths.mean())
    record["response_length/max"] = float(lengths.max())
    record["response_length/clip_ratio"] = float(np.mean(lengths >= max_new_tokens))
    record.update({k: float(np.mean(v)) for k, v in stats.items() if v})
    record["timing_s/gen"] = round(t_sampled - t_start, 3)
    record["timing_s/reward"] = round(t_scored - t_sampled, 3)
    record["timing_s/update_actor"] = round(t_done - t_scored, 3)
    return record
