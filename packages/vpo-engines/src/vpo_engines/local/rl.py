"""One RL step of the local engine, in named phases: sample, score, advantages, update, log.

`rl_step` runs the phases in order, each its own function: `sample_rollouts` (draw the tasks, sample
the groups into a `Rollouts`), `score_rollouts` (the env's rewards, a `vpo_core.batch.RolloutBatch`
from `vpo_core.batch.score_groups`), `rollout_advantages` (the method's scalars, normalised),
`update_policy` (PPO mini-batches) and `step_metrics` (the logged record).

Each group keeps its task's reward spec (`TextEnv.spec_for`), so a step that draws tasks of different
d (env-lcb: one dimension per test) trains, each group's advantage under its own spec.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from vpo_core.advantages import AdvantageConfig, normalize_scalars, rollout_scalars
from vpo_core.batch import RolloutBatch, score_groups
from vpo_core.env import TextEnv
from vpo_core.metrics import reward_diversity
from vpo_core.sampling_settings import SamplingSettings
from vpo_core.weights import stable_seed
from vpo_engines.local.config import TrainConfig
from vpo_engines.local.errors import NonFiniteLossError
from vpo_engines.local.loss import actor_loss
from vpo_engines.models.policy import Policy

__all__ = ["NonFiniteLossError", "Rollouts", "rl_step"]

_ACTOR_STATS = ("actor/pg_loss", "actor/kl_loss", "actor/entropy", "actor/pg_clipfrac", "actor/grad_norm")


@dataclass(frozen=True)
class Rollouts:
    """The groups one step sampled: P prompts, G completions each, prompt-major.

    Attributes:
        tasks: The P training tasks drawn.
        goal: The goal-conditioned baseline's weights written into each prompt, P arrays (d_b,); None for
            other methods.
        texts: The P·G whole assistant turns.
        prompt_ids: Prompt token ids, shape (P·G, L_prompt), left-padded.
        response: Response token ids, shape (P·G, L_response), right-padded.
        mask: 1 for response tokens, 0 for padding, shape (P·G, L_response).
        sample_log_probs: The sampler's log-prob of each response token, shape (P·G, L_response), where
            they are the policy's own (temperature 1, top-p 1, a sampler that gives them): the PPO ratio's
            old log-probs without another forward pass; else None, and `update_policy` computes them.
    """

    tasks: list[Any]
    goal: list[np.ndarray] | None
    texts: list[str]
    prompt_ids: torch.Tensor
    response: torch.Tensor
    mask: torch.Tensor
    sample_log_probs: torch.Tensor | None = None

    @property
    def group(self) -> int:
        """Completions per prompt (G)."""
        return len(self.texts) // len(self.tasks)

    def lengths(self) -> np.ndarray:
        """Response lengths in tokens (at least 1), shape (P, G)."""
        return self.mask.sum(dim=1).clamp(min=1).cpu().numpy().reshape(len(self.tasks), self.group)


def sample_rollouts(
    policy: Policy,
    env: TextEnv[Any, Any],
    train_tasks: list[Any],
    config: TrainConfig,
    sampling: SamplingSettings,
    *,
    step: int,
    rng: np.random.Generator,
) -> Rollouts:
    """Draw ``config.prompts_per_step`` tasks with `rng` and sample ``config.group_size`` completions of each."""
    advantage = config.advantage
    method, m = advantage.method, advantage.m
    tasks = [train_tasks[int(i)] for i in rng.choice(len(train_tasks), size=config.prompts_per_step, replace=False)]
    goal = None
    if method.goal_prompt:  # one (d_b,) row per task: the tasks' d may differ
        goal = [method.task_goal_weights([env.spec_for(t).dim], [t.id], seed=config.seed)[0] for t in tasks]  # type: ignore[index]  # goal-conditioned: not None
    prompts = [
        policy.prompt_text(env.render_prompt(t, mode=method.mode, m=m, goal_weights=None if goal is None else goal[i]))
        for i, t in enumerate(tasks)
    ]
    texts, prompt_ids, response, sample_log_probs = policy.generate_with_log_probs(
        prompts,
        num_samples=config.group_size,
        seed=stable_seed(config.seed, ("rollout", step)) % (2**63),
        **sampling.as_kwargs(),
    )
    if (sampling.temperature, sampling.top_p) != (1.0, 1.0):  # drawn from a reshaped distribution, not the policy's
        sample_log_probs = None
    return Rollouts(tasks, goal, texts, prompt_ids, response, policy.response_mask(response), sample_log_probs)


def score_rollouts(env: TextEnv[Any, Any], rollouts: Rollouts, config: AdvantageConfig, *, step: int) -> RolloutBatch:
    """The env's rewards of the step's groups (`vpo_core.batch.score_groups`), keyed ``f"{step}:{task id}"``.

    Returns:
        The batch: rewards and training rewards (duplicates zeroed in multi mode), P arrays (G, m, d_b)
        each, with each task's spec, the prompts' goal weights and the response lengths.
    """
    return score_groups(
        env,
        rollouts.tasks,
        rollouts.texts,
        mode=config.method.mode,
        m=config.m,
        keys=[f"{step}:{t.id}" for t in rollouts.tasks],
        goal_weights=rollouts.goal,
        lengths=rollouts.lengths(),
    )


def rollout_advantages(batch: RolloutBatch, config: AdvantageConfig) -> tuple[np.ndarray, np.ndarray]:
    """The method's rollout scalars and their normalised advantages.

    The scalars are computed once: they are both logged and normalised into the advantages.

    Args:
        batch: The step's scored groups (`score_rollouts`).
        config: The run's advantage options (`TrainConfig.advantage`).

    Returns:
        Scalars, shape (P, G) (gdpo: (P, G, D)), and advantages, shape (P, G).
    """
    scalars = rollout_scalars(batch, config)
    return scalars, normalize_scalars(scalars, config, lengths=batch.lengths)


def update_policy(
    policy: Policy,
    reference: Policy,
    optimizer: torch.optim.Optimizer,
    rollouts: Rollouts,
    advantages: np.ndarray,
    config: TrainConfig,
    *,
    step: int,
    rng: np.random.Generator,
    split_by_length: bool = True,
) -> dict[str, list[float]]:
    """PPO steps over ``config.mini_batches`` mini-batches of the rollouts, in an order drawn from `rng`.

    Args:
        policy: The model trained.
        reference: The warm-started model of the KL term.
        optimizer: The policy's optimizer.
        rollouts: The step's groups.
        advantages: Shape (P, G).
        config: The run's config (loss coefficients, mini-batches, gradient clip).
        step: The RL step (for messages).
        rng: The step's generator, after `sample_rollouts` drew the tasks.
        split_by_length: Run each forward pass in parts of similar response length (`length_buckets`):
            the same loss and gradients to float rounding, without padding every row to a rare long
            sample. False: one padded pass per mini-batch.

    Returns:
        Each actor statistic's value per mini-batch (``actor/entropy`` empty if the model gives none).

    Raises:
        NonFiniteLossError: If a loss or gradient norm is not finite; the model is not updated by it.
    """
    prompt_ids, response, mask = rollouts.prompt_ids, rollouts.response, rollouts.mask
    lengths = mask.sum(dim=1).long()
    adv = torch.as_tensor(advantages.reshape(-1), dtype=torch.float32, device=policy.device)
    policy.model.eval()
    with torch.no_grad():
        old_logp = rollouts.sample_log_probs
        if old_logp is None:
            old_logp = _log_probs_by_length(policy, prompt_ids, response, lengths, split=split_by_length)
        ref_logp = _log_probs_by_length(reference, prompt_ids, response, lengths, split=split_by_length)
    policy.model.train()
    order = torch.as_tensor(rng.permutation(len(rollouts.texts)), device=policy.device)
    stats: dict[str, list[float]] = {name: [] for name in _ACTOR_STATS}
    for chunk in torch.chunk(order, config.mini_batches):
        # the mini-batch's token-mean loss, as a sum over parts of similar length weighted by their tokens
        tokens = mask[chunk].sum().clamp(min=1)
        optimizer.zero_grad(set_to_none=True)
        totals = {"pg_loss": 0.0, "kl": 0.0, "pg_clipfrac": 0.0, "entropy": 0.0}
        for rows, width in _parts(lengths, chunk, split=split_by_length):
            part_mask = mask[rows, :width]
            logp, entropy = policy.log_probs(prompt_ids[rows], response[rows, :width], with_entropy=True)
            loss, loss_stats = actor_loss(
                logp,
                old_logp[rows, :width],
                ref_logp[rows, :width],
                adv[rows],
                part_mask,
                clip_ratio=config.clip_ratio,
                clip_ratio_c=config.clip_ratio_c,
                kl_coef=config.kl_coef,
            )
            if not torch.isfinite(loss):
                raise NonFiniteLossError(
                    f"RL step {step}: the loss is {float(loss.detach())}; stopped before updating the model, so the "
                    "last good checkpoint is kept. Lower lr= or kl_coef=, or check the env's rewards."
                )
            share = float(part_mask.sum()) / float(tokens)
            (loss * share).backward()
            for name in ("pg_loss", "kl", "pg_clipfrac"):
                totals[name] += loss_stats[name] * share
            if entropy is not None:
                totals["entropy"] += float((entropy.detach() * part_mask).sum()) / float(tokens)
        grad_norm = torch.nn.utils.clip_grad_norm_(policy.model.parameters(), config.grad_clip)
        if not torch.isfinite(grad_norm):
            raise NonFiniteLossError(
                f"RL step {step}: the gradient norm is {float(grad_norm)}; stopped before updating the model, so the "
                "last good checkpoint is kept. Lower lr= or check the env's rewards."
            )
        optimizer.step()
        stats["actor/pg_loss"].append(totals["pg_loss"])
        stats["actor/kl_loss"].append(totals["kl"])
        stats["actor/pg_clipfrac"].append(totals["pg_clipfrac"])
        stats["actor/grad_norm"].append(float(grad_norm))
        if entropy is not None:  # the model gives entropies for every part or for none
            stats["actor/entropy"].append(totals["entropy"])
    policy.model.eval()
    return stats


def length_buckets(lengths: torch.Tensor, rows: torch.Tensor, *, min_saving: float = 0.25) -> list[torch.Tensor]:
    """`rows` in at most two parts of similar response length, when that saves padded positions.

    A batch is padded to its longest response, so one sample at the token budget makes every row cost
    the budget. Splitting the rows sorted by length where ``k·len[k-1] + (n-k)·len[n-1]`` is least puts
    the long tail in a part of its own; the loss, summed over parts weighted by their tokens, is the
    same token-mean (`update_policy`).

    Args:
        lengths: Response lengths of every rollout, shape (N,).
        rows: The rows to split (indices into `lengths`), shape (n,).
        min_saving: Split only if it saves at least this share of the padded positions.

    Returns:
        One or two index tensors whose union is `rows`.
    """
    n = rows.numel()
    if n < 2:
        return [rows]
    sorted_lengths, position = torch.sort(lengths[rows].clamp(min=1), stable=True)
    longest = int(sorted_lengths[-1])
    k = torch.arange(1, n, device=rows.device)
    area = k * sorted_lengths[:-1] + (n - k) * longest
    best = int(torch.argmin(area))
    if float(area[best]) > (1.0 - min_saving) * n * longest:
        return [rows]
    split = best + 1
    return [rows[position[:split]], rows[position[split:]]]


def _parts(lengths: torch.Tensor, rows: torch.Tensor, *, split: bool) -> list[tuple[torch.Tensor, int]]:
    """`rows` as (part, width) pairs: the `length_buckets` parts (all rows if not `split`), each with its longest response."""
    parts = length_buckets(lengths, rows) if split else [rows]
    return [(part, max(int(lengths[part].max()), 1)) for part in parts]


def _log_probs_by_length(
    policy: Policy, prompt_ids: torch.Tensor, response: torch.Tensor, lengths: torch.Tensor, *, split: bool
) -> torch.Tensor:
    """`Policy.log_probs` of every row, computed per `_parts` part; shape (N, L_response), 0 past each part's width."""
    out: torch.Tensor | None = None
    for rows, width in _parts(lengths, torch.arange(response.shape[0], device=response.device), split=split):
        part = policy.log_probs(prompt_ids[rows], response[rows, :width])[0]
        if out is None:  # in the log-probs' dtype (float32, or float64 for a float64 model)
            out = torch.zeros(response.shape, dtype=part.dtype, device=response.device)
        out[rows, :width] = part
    assert out is not None  # _parts returns at least one part
    return out


def step_metrics(
    rollouts: Rollouts,
    batch: RolloutBatch,
    scalars: np.ndarray,
    advantages: np.ndarray,
    stats: dict[str, list[float]],
    sampling: SamplingSettings,
    *,
    step: int,
) -> dict[str, Any]:
    """The step's metrics record (timing added by `rl_step`).

    Args:
        rollouts: The step's groups.
        batch: Their scores (`score_rollouts`); a ``reward/<name>`` is the mean over the groups whose spec
            has that dimension.
        scalars: The method's rollout scalars, shape (P, G) (gdpo: (P, G, D)).
        advantages: Shape (P, G).
        stats: The actor statistics of `update_policy`.
        sampling: The rollouts' sampling settings (the token budget for the clip ratio).
        step: The RL step.
    """
    lengths = rollouts.lengths()
    record: dict[str, Any] = {"step": step}
    shared, specs = batch.shared_spec, batch.specs
    assert specs is not None  # score_groups keeps each group's spec
    raw = batch.stacked()
    if shared is not None and isinstance(raw, np.ndarray):
        w_scores = shared.scalarize(raw)  # (P, G, m)
        record.update({f"reward/{name}": float(raw[..., i].mean()) for i, name in enumerate(shared.names)})
    else:
        w_scores = np.stack([spec.scalarize(r) for spec, r in zip(specs, batch.rewards, strict=True)])
        by_name: dict[str, list[np.ndarray]] = {}
        for spec, r in zip(specs, batch.rewards, strict=True):
            for i, name in enumerate(spec.names):
                by_name.setdefault(name, []).append(r[..., i].reshape(-1))
        record.update({f"reward/{name}": float(np.concatenate(parts).mean()) for name, parts in by_name.items()})
    diversity = [reward_diversity(r.reshape(-1, spec.dim)) for r, spec in zip(batch.rewards, specs, strict=True)]
    record["mean_w_star"] = float(w_scores.mean())
    record["set_reward"] = float(np.mean(scalars))
    record["best_of_m"] = float(w_scores.max(axis=-1).mean())
    record["diversity"] = float(np.mean(diversity))
    record["critic/score/mean"] = float(np.mean(scalars))  # veRL's score: the rollout scalar the method trains on
    record["critic/advantages/mean"] = float(advantages.mean())
    record["critic/advantages/max"] = float(advantages.max())
    record["critic/advantages/min"] = float(advantages.min())
    record["response_length/mean"] = float(lengths.mean())
    record["response_length/max"] = float(lengths.max())
    record["response_length/clip_ratio"] = float(np.mean(lengths >= sampling.max_new_tokens))
    record.update({k: float(np.mean(v)) for k, v in stats.items() if v})
    return record


def rl_step(
    policy: Policy,
    reference: Policy,
    optimizer: torch.optim.Optimizer,
    env: TextEnv[Any, Any],
    train_tasks: list[Any],
    config: TrainConfig,
    *,
    step: int,
    sampling: SamplingSettings,
) -> dict[str, Any]:
    """Sample G rollouts for each of `config.prompts_per_step` prompts, score, and take PPO steps.

    Args:
        policy: The model trained.
        reference: The warm-started model of the KL term.
        optimizer: The policy's optimizer.
        env: The environment.
        train_tasks: The tasks the step's prompts are drawn from.
        config: The run's config.
        step: The RL step (seeds the draws, keys the groups).
        sampling: The rollouts' sampling settings.

    Returns:
        The step's metrics (named as veRL logs them where veRL has the quantity): reward per dimension,
        mean w*-score, set reward (the method's rollout scalar), best-of-m, reward-space diversity of the
        groups, KL, entropy, timing.
    """
    rng = np.random.default_rng([config.seed, 2, step])  # draws the tasks, then the mini-batch order
    t_start = time.perf_counter()
    rollouts = sample_rollouts(policy, env, train_tasks, config, sampling, step=step, rng=rng)
    t_sampled = time.perf_counter()
    batch = score_rollouts(env, rollouts, config.advantage, step=step)
    scalars, normalized = rollout_advantages(batch, config.advantage)
    t_scored = time.perf_counter()
    stats = update_policy(policy, reference, optimizer, rollouts, normalized, config, step=step, rng=rng)
    t_done = time.perf_counter()
    record = step_metrics(rollouts, batch, scalars, normalized, stats, sampling, step=step)
    record["timing_s/gen"] = round(t_sampled - t_start, 3)
    record["timing_s/reward"] = round(t_scored - t_sampled, 3)
    record["timing_s/update_actor"] = round(t_done - t_scored, 3)
    return record
