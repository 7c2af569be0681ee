"""Evaluation of a policy on an env split: candidate pools and the paper's metrics.

Pools follow the paper's protocol (estimators.md §10.3): a multi-answer policy writes chains of m
candidates and best@k uses ⌈k/m⌉ chains in generation order (the exact chain estimator); a
single-answer policy samples iid candidates (the order-statistic estimator).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from vpo_core.env import TextEnv
from vpo_core.metrics import (
    best_at_k,
    best_at_k_chains,
    best_at_k_curve,
    collinearity,
    expected_best_at_k,
    reward_diversity,
)
from vpo_core.types import Message, Task

__all__ = ["EvalResult", "Sampler", "evaluate_policy", "markdown_table", "pool_metrics"]


class Sampler(Protocol):
    """What evaluation samples from: `policy.Policy` (transformers) or `vllm_sampler.VllmSampler`."""

    def prompt_text(self, messages: Sequence[Message]) -> str:
        """Chat messages rendered as the model's prompt text."""
        ...

    def sample(
        self,
        prompts: Sequence[str],
        *,
        num_samples: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[str]:
        """P·num_samples completion texts, prompt-major."""
        ...


KS = (1, 3, 5, 10, 30)


@dataclass
class EvalResult:
    """Pools and metrics of one policy.

    Attributes:
        name: Label of the policy (a checkpoint name).
        mode: Prompt mode of its pools.
        m: Candidates per completion.
        rewards: Pools, shape (T tasks, n completions, m, d).
        metrics: Summary metrics (see `pool_metrics`).
        curve: best@k for k = 1..n·m, averaged over tasks (w*-scores).
    """

    name: str
    mode: str
    m: int
    rewards: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    curve: list[float] = field(default_factory=list)


def pool_metrics(
    env: TextEnv[Any, Any], tasks: Sequence[Task[Any]], rewards: np.ndarray, *, mode: str, num_weights: int = 100
) -> tuple[dict[str, float], list[float]]:
    """The paper's metrics of candidate pools.

    Args:
        env: The environment.
        tasks: The T tasks.
        rewards: Pools, shape (T, n, m, d): n completions of m candidates per task.
        mode: ``"multi"`` uses the chain estimator.
        num_weights: Weight draws of E_w[best@k] (100, as in the authors' evaluation; estimators.md §10.4).

    Returns:
        The metrics (mean reward per dimension and of w*, best@k, E_w[best@k], success@k — which is
        pass@k where success means solving the task, as in LiveCodeBench —, F1@k for envs with an
        ``answer_f1`` dimension, diversity, collinearity) and the best@k curve for k = 1..n·m.
    """
    n_tasks, n, m, d = rewards.shape
    names = env.reward_spec.names
    flat = rewards.reshape(n_tasks, n * m, d)
    metrics: dict[str, float] = {f"mean_{name}": float(flat[..., i].mean()) for i, name in enumerate(names)}
    scores = np.stack([env.spec_for(t).scalarize(rewards[i]) for i, t in enumerate(tasks)])  # (T, n, m)
    success = np.stack([env.is_success(rewards[i], t) for i, t in enumerate(tasks)]).astype(float)  # (T, n, m)
    metrics["mean_w_star"] = float(scores.mean())
    size = n * m
    for k in KS:
        if k > size:
            continue
        if mode == "multi":
            metrics[f"best@{k}"] = float(np.mean(best_at_k_chains(scores, k)))
            metrics[f"success@{k}"] = float(np.mean(best_at_k_chains(success, k)))
            metrics[f"E_w[best@{k}]"] = float(
                np.mean([expected_best_at_k(r, k, num_weights=num_weights, chains=True) for r in rewards])
            )
        else:
            metrics[f"best@{k}"] = float(np.mean(best_at_k(scores[:, :, 0], k)))
            metrics[f"success@{k}"] = float(np.mean(best_at_k(success[:, :, 0], k)))
            metrics[f"E_w[best@{k}]"] = float(
                np.mean([expected_best_at_k(r[:, 0], k, num_weights=num_weights) for r in rewards])
            )
    if "answer_f1" in names:  # MuSiQue's F1@k: best answer F1 among k candidates
        f1 = rewards[..., names.index("answer_f1")]  # (T, n, m)
        k = min(30, size)
        chains_f1 = best_at_k_chains(f1, k) if mode == "multi" else best_at_k(f1[:, :, 0], k)
        metrics[f"F1@{k}"] = float(np.mean(chains_f1))
    metrics["diversity"] = reward_diversity(flat)
    metrics["collinearity"] = collinearity(flat.reshape(-1, d))
    if mode == "multi":
        curve = [float(np.mean(best_at_k_chains(scores, k))) for k in range(1, size + 1)]
    else:
        curve = best_at_k_curve(scores[:, :, 0]).mean(axis=0).tolist()
    return metrics, curve


def evaluate_policy(
    policy: Sampler,
    env: TextEnv[Any, Any],
    tasks: Sequence[Task[Any]],
    *,
    name: str,
    mode: str,
    m: int,
    samples: int,
    temperature: float,
    top_p: float,
    seeds: int,
    max_new_tokens: int,
    prompts_per_batch: int = 16,
) -> EvalResult:
    """Sample pools on `tasks` and compute the metrics.

    Args:
        policy: The policy, or any `Sampler` of it (vLLM).
        env: The environment.
        tasks: Tasks to evaluate on.
        name: Label for tables and plots.
        mode: Prompt mode (the policy's training mode).
        m: Candidates per completion.
        samples: Candidates per task and seed (``samples // m`` chains in multi mode).
        temperature: Sampling temperature (the paper: 0.7).
        top_p: Nucleus sampling (the paper: 1.0 maze/MuSiQue, 0.95 EUREQA/ToolRL).
        seeds: Evaluation seeds; their pools are concatenated.
        max_new_tokens: Longest completion.
        prompts_per_batch: Prompts sampled together.

    Returns:
        The pools and metrics.
    """
    completions_per_task = max(1, samples // m)
    prompts = [policy.prompt_text(env.render_prompt(t, mode=mode, m=m)) for t in tasks]  # type: ignore[arg-type]
    pools = np.zeros((len(tasks), completions_per_task * seeds, m, env.reward_spec.dim))
    for seed in range(seeds):
        for start in range(0, len(tasks), prompts_per_batch):
            chunk = prompts[start : start + prompts_per_batch]
            texts = policy.sample(
                chunk,
                num_samples=completions_per_task,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=10_000 * seed + start,
            )
            for j, text in enumerate(texts):
                t = start + j // completions_per_task
                c = seed * completions_per_task + j % completions_per_task
                pools[t, c] = env.score(tasks[t], text, mode=mode, m=m)  # type: ignore[arg-type]
    metrics, curve = pool_metrics(env, tasks, pools, mode=mode)
    return EvalResult(name=name, mode=mode, m=m, rewards=pools, metrics=metrics, curve=curve)


def markdown_table(results: Sequence[EvalResult]) -> str:
    """One table in the paper's layout: best@k columns, diversity, E_w[best@k], collinearity."""
    columns = [c for c in ("best@1", "best@3", "best@5", "best@10", "best@30") if all(c in r.metrics for r in results)]
    extra = [
        c
        for c in ("E_w[best@5]", "success@5", "diversity", "collinearity", "mean_w_star")
        if all(c in r.metrics for r in results)
    ]
    header = "| checkpoint | mode, m | " + " | ".join(columns + extra) + " |"
    lines = [header, "|" + "---|" * (2 + len(columns) + len(extra))]
    for r in results:
        cells = [f"{r.metrics[c]:.3f}" for c in columns + extra]
        lines.append(f"| {r.name} | {r.mode}, {r.m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)
