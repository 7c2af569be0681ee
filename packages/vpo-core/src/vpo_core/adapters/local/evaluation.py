"""Evaluation of a policy on an env split: candidate pools and the paper's metrics.

Pools follow the paper's protocol (its appendix on best@k for multi-answer policies): a multi-answer policy writes chains of m
candidates and best@k uses ⌈k/m⌉ chains in generation order (the exact chain estimator); a
single-answer policy samples iid candidates (the order-statistic estimator). The metrics are
`vpo_core.pool`'s, the same as the env CLIs' ``score``.

A goal-conditioned policy (goal-conditioned GRPO) is evaluated with the goal suffix in its prompts,
conditioned either on w* or on one w ~ Dir(1) per task (`goal_weights_for_eval`); best@k still
scores every candidate with w*.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from vpo_core.env import TextEnv
from vpo_core.pool import KS, pool_curve, pool_summary
from vpo_core.types import Message, Task
from vpo_core.weights import dirichlet_weights

__all__ = [
    "CONDITIONINGS",
    "KS",
    "EvalResult",
    "Sampler",
    "evaluate_policy",
    "goal_weights_for_eval",
    "markdown_table",
    "pool_metrics",
]

CONDITIONINGS = ("w_star", "dirichlet")
"""How a goal-conditioned policy is conditioned at evaluation: on w*, or on w ~ Dir(1) per task."""


class Sampler(Protocol):
    """What evaluation samples from.

    `samplers.TransformersSampler`, `vllm_sampler.VllmSampler`, `openai_sampler.OpenAISampler` or
    `policy.Policy`.
    """

    def prompt_text(self, messages: Sequence[Message]) -> str:
        """The chat messages as `sample` takes them (the rendered prompt text)."""
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


@dataclass
class EvalResult:
    """Pools and metrics of one policy.

    Attributes:
        name: Label of the policy (a checkpoint name, with its goal conditioning if any).
        mode: Prompt mode of its pools.
        m: Candidates per completion.
        rewards: Pools, shape (T tasks, n completions, m, d); rows of a task with fewer dimensions
            than d (per-task specs) are zero-padded.
        metrics: Summary metrics (see `vpo_core.pool.pool_summary`).
        curve: best@k for k = 1..n·m, averaged over tasks (w*-scores).
        bad_completions: Completions that could not be scored (or were missing), counted as all-zero rows.
        settings: The sampling settings used (temperature, top_p, max_new_tokens, samples, seeds, conditioning).
    """

    name: str
    mode: str
    m: int
    rewards: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    curve: list[float] = field(default_factory=list)
    bad_completions: int = 0
    settings: dict[str, Any] = field(default_factory=dict)


def pool_metrics(
    env: TextEnv[Any, Any],
    tasks: Sequence[Task[Any]],
    rewards: np.ndarray,
    *,
    mode: str,
    num_weights: int = 100,
    ks: Sequence[int] = KS,
) -> tuple[dict[str, float], list[float]]:
    """The paper's metrics of candidate pools (`vpo_core.pool`) and the best@k curve.

    Args:
        env: The environment.
        tasks: The T tasks.
        rewards: Pools, shape (T, n, m, d): n completions of m candidates per task.
        mode: ``"multi"`` uses the chain estimator.
        num_weights: Weight draws of E_w[best@k] (100, as in the authors' evaluation).
        ks: The k of best@k, pass@k and E_w[best@k] (the paper's tables: 1, 3, 5, 10, 30; its
            goal-conditioned table: 3, 6).

    Returns:
        The metrics (mean reward per dimension and of w*, best@k, pass@k, E_w[best@k], best@k of
        each of ``env.profile.report_dims``, diversity, collinearity) and the best@k curve for
        k = 1..n·m.
    """
    pools = list(rewards)
    metrics = pool_summary(env, tasks, pools, mode=mode, num_weights=num_weights, ks=ks)
    return metrics, pool_curve(env, tasks, pools, mode=mode)


def goal_weights_for_eval(
    env: TextEnv[Any, Any], tasks: Sequence[Task[Any]], conditioning: str, *, seed: int = 0
) -> list[np.ndarray]:
    """The weights a goal-conditioned policy is conditioned on, one vector per task.

    Args:
        env: The environment.
        tasks: The tasks.
        conditioning: ``"w_star"`` (each task's w*) or ``"dirichlet"`` (one Dir(1) draw per task,
            keyed by ``("eval-goal", task.id)`` and `seed`, so every run and process draws the same
            weights, and they differ from the training draws).
        seed: Seed of the Dir(1) draws.

    Returns:
        T weight vectors, shape (d_t,) each.

    Raises:
        ValueError: For an unknown conditioning.
    """
    if conditioning not in CONDITIONINGS:
        raise ValueError(f"conditioning must be one of {CONDITIONINGS}, got {conditioning!r}.")
    out = []
    for task in tasks:
        spec = env.spec_for(task)
        if conditioning == "w_star":
            out.append(spec.w_star_array)
        else:
            out.append(dirichlet_weights(spec.dim, 1, seed=seed, key=("eval-goal", task.id))[0])
    return out


def _log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
    goal_weights: Sequence[np.ndarray] | None = None,
    progress: Callable[[int], None] | None = None,
    log: Callable[[str], None] = _log,
    ks: Sequence[int] = KS,
) -> EvalResult:
    """Sample pools on `tasks` and compute the metrics.

    One bad completion never stops an evaluation: a completion the sampler did not return as text,
    or one whose scoring raises, counts as an all-zero reward row (counted in ``bad_completions``).

    Args:
        policy: Any `Sampler`.
        env: The environment.
        tasks: Tasks to evaluate on.
        name: Label for tables and plots.
        mode: Prompt mode (the policy's training mode).
        m: Candidates per completion.
        samples: Candidates per task and seed (``samples // m`` chains in multi mode).
        temperature: Sampling temperature (the env's ``profile.eval.temperature``).
        top_p: Nucleus sampling (the env's ``profile.eval.top_p``).
        seeds: Evaluation seeds; their pools are concatenated.
        max_new_tokens: Longest completion.
        prompts_per_batch: Prompts sampled together.
        goal_weights: Per task, shape (d_t,): the goal-conditioning suffix written into its prompt
            (a goal-conditioned policy; see `goal_weights_for_eval`), or None.
        progress: Called with the number of tasks done after each batch (e.g. a tqdm bar's ``update``).
        log: Where the count of bad completions is reported.
        ks: The k of the metrics (see `pool_metrics`).

    Returns:
        The pools and metrics.
    """
    if goal_weights is not None and len(goal_weights) != len(tasks):
        raise ValueError(f"goal_weights has {len(goal_weights)} vectors for {len(tasks)} tasks; give one per task.")
    completions_per_task = max(1, samples // m)
    prompts = [
        policy.prompt_text(
            env.render_prompt(t, mode=mode, m=m, goal_weights=None if goal_weights is None else goal_weights[i])  # type: ignore[arg-type]
        )
        for i, t in enumerate(tasks)
    ]
    pools = np.zeros((len(tasks), completions_per_task * seeds, m, env.reward_spec.dim))
    bad = 0
    sampler_bad = int(getattr(policy, "bad_completions", 0) or 0)  # completions a sampler could not get as text
    for seed in range(seeds):
        for start in range(0, len(tasks), prompts_per_batch):
            chunk = prompts[start : start + prompts_per_batch]
            texts = list(
                policy.sample(
                    chunk,
                    num_samples=completions_per_task,
                    max_new_tokens=max_new_tokens,
                    temperature=temperature,
                    top_p=top_p,
                    seed=10_000 * seed + start,
                )
            )
            expected = len(chunk) * completions_per_task
            if len(texts) != expected:
                log(f"{name}: the sampler returned {len(texts)} completions for {expected}; missing ones score 0")
                bad += max(0, expected - len(texts))
            for j, text in enumerate(texts[:expected]):
                t = start + j // completions_per_task
                c = seed * completions_per_task + j % completions_per_task
                try:
                    row = env.score_completion(tasks[t], text, mode=mode, m=m).rewards  # type: ignore[arg-type]
                    pools[t, c, :, : row.shape[-1]] = row
                except Exception as exc:  # one bad completion (or env bug) must not stop the evaluation
                    bad += 1
                    log(f"{name}: completion {c} of {tasks[t].id} could not be scored ({type(exc).__name__}: {exc})")
            if progress is not None:
                progress(len(chunk))
    bad += int(getattr(policy, "bad_completions", 0) or 0) - sampler_bad
    if bad:
        log(f"{name}: {bad} completion(s) were missing or unscorable and count as all-zero reward rows")
    metrics, curve = pool_metrics(env, tasks, pools, mode=mode, ks=ks)
    settings = {
        "samples": samples,
        "seeds": seeds,
        "temperature": temperature,
        "top_p": top_p,
        "max_new_tokens": max_new_tokens,
    }
    return EvalResult(
        name=name, mode=mode, m=m, rewards=pools, metrics=metrics, curve=curve, bad_completions=bad, settings=settings
    )


def markdown_table(results: Sequence[EvalResult], *, ks: Sequence[int] = KS, ew_ks: Sequence[int] = (5,)) -> str:
    """One table in the paper's layout.

    Columns: best@k for `ks`, best@30 of each report dimension, E_w[best@k] for `ew_ks`, pass@5,
    diversity, collinearity ρ̄ and the mean w*-reward; a column is shown when every row has it.
    """
    columns = [f"best@{k}" for k in ks if all(f"best@{k}" in r.metrics for r in results)]
    dims = [
        f"best@30[{name}]"
        for name in dict.fromkeys(n for r in results for n in _report_dims(r))
        if all(f"best@30[{name}]" in r.metrics for r in results)
    ]
    wanted = [f"E_w[best@{k}]" for k in ew_ks] + ["pass@5", "diversity", "collinearity", "mean_w_star"]
    extra = dims + [c for c in wanted if all(c in r.metrics for r in results)]
    header = "| checkpoint | mode, m | " + " | ".join(columns + extra) + " |"
    lines = [header, "|" + "---|" * (2 + len(columns) + len(extra))]
    for r in results:
        cells = [f"{r.metrics[c]:.3f}" for c in columns + extra]
        lines.append(f"| {r.name} | {r.mode}, {r.m} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _report_dims(result: EvalResult) -> list[str]:
    return [key[len("best@30[") : -1] for key in result.metrics if key.startswith("best@30[")]
