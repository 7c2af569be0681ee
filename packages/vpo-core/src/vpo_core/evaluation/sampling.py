"""Evaluation of a policy on an env split: candidate pools and the paper's metrics.

Pools follow the paper's protocol (its appendix on best@k for multi-answer policies): a multi-answer policy writes chains of m
candidates and best@k uses ⌈k/m⌉ chains in generation order (the exact chain estimator); a
single-answer policy samples iid candidates (the order-statistic estimator). The metrics are
`vpo_core.evaluation.metrics`', the same as the env CLIs' ``score``.

A goal-conditioned policy (goal-conditioned GRPO) is evaluated with the goal suffix in its prompts,
conditioned either on w* or on one w ~ Dir(1) per task (`goal_weights_for_eval`); best@k still
scores every candidate with w*.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from vpo_core.batch import score_groups
from vpo_core.errors import ConfigError
from vpo_core.evaluation.metrics import KS, pool_curve, pool_summary, task_pool_metrics
from vpo_core.evaluation.reporting import standard_errors
from vpo_core.methods import goal_weights
from vpo_core.sampling_settings import SamplingSettings
from vpo_core.types import Message, Task

if TYPE_CHECKING:
    from vpo_core.env import TextEnv

__all__ = [
    "CONDITIONINGS",
    "KS",
    "EvalResult",
    "Sampler",
    "before_after",
    "evaluate_policy",
    "goal_weights_for_eval",
]

CONDITIONINGS = ("w_star", "dirichlet")
"""How a goal-conditioned policy is conditioned at evaluation: on w*, or on w ~ Dir(1) per task."""


class Sampler(Protocol):
    """What evaluation samples from.

    `vpo_engines.models.policy.Policy`, `vpo_engines.models.vllm.VllmSampler` or `vpo_engines.models.openai.OpenAISampler`
    (the model floor, `vpo_engines.models`).
    """

    def prompt_text(self, messages: Sequence[Message]) -> str:
        """The chat messages as `sample` takes them (the rendered prompt text)."""
        ...

    def sample(
        self, prompts: Sequence[str], *, num_samples: int, settings: SamplingSettings, seed: int | None = None
    ) -> list[str]:
        """P·num_samples completion texts, prompt-major.

        Args:
            prompts: `prompt_text`'s prompts, P of them.
            num_samples: Completions per prompt.
            settings: Temperature, top-p and token budget.
            seed: The sampling seed (None: the sampler's default).
        """
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
        metrics: Summary metrics (see `vpo_core.evaluation.metrics.pool_summary`).
        curve: best@k for k = 1..n·m, averaged over tasks (w*-scores).
        bad_completions: Completions that could not be scored (or were missing), counted as all-zero rows.
        settings: The sampling settings used (temperature, top_p, max_new_tokens, samples, seeds, conditioning).
        standard_errors: The bootstrap standard error over tasks of each metric (`reporting.standard_errors`).
    """

    name: str
    mode: str
    m: int
    rewards: np.ndarray
    metrics: dict[str, float] = field(default_factory=dict)
    curve: list[float] = field(default_factory=list)
    bad_completions: int = 0
    settings: dict[str, Any] = field(default_factory=dict)
    standard_errors: dict[str, float] = field(default_factory=dict)


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
            out.append(goal_weights(spec.dim, seed=seed, task_id=task.id, namespace="eval-goal"))
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
    seeds: int,
    settings: SamplingSettings,
    prompts_per_batch: int = 16,
    goal_weights: Sequence[np.ndarray] | None = None,
    progress: Callable[[int], None] | None = None,
    log: Callable[[str], None] = _log,
    ks: Sequence[int] | None = None,
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
        seeds: Evaluation seeds; their pools are concatenated.
        settings: Temperature, top-p and token budget (the env's ``profile.eval`` unless overridden).
        prompts_per_batch: Prompts sampled together.
        goal_weights: Per task, shape (d_t,): the goal-conditioning suffix written into its prompt
            (a goal-conditioned policy; see `goal_weights_for_eval`), or None.
        progress: Called with the number of tasks done after each batch (e.g. a tqdm bar's ``update``).
        log: Where the count of bad completions is reported.
        ks: The k of the metrics (default: `KS` where the pools allow; see `pool_metrics`). A k asked for
            that the pools cannot hold is refused before anything is sampled.

    Returns:
        The pools and metrics.

    Raises:
        ConfigError: For a k asked for that is larger than the pools (samples, seeds and m decide their size).
    """
    per_task = _completions_per_task(
        tasks, mode=mode, m=m, samples=samples, seeds=seeds, goal_weights=goal_weights, ks=ks
    )
    prompts = [
        policy.prompt_text(
            env.render_prompt(t, mode=mode, m=m, goal_weights=None if goal_weights is None else goal_weights[i])  # type: ignore[arg-type]
        )
        for i, t in enumerate(tasks)
    ]
    pools = np.zeros((len(tasks), per_task * seeds, m, env.reward_spec.dim))
    sampler_bad = int(getattr(policy, "bad_completions", 0) or 0)  # completions a sampler could not get as text
    bad = 0
    for seed in range(seeds):
        for start in range(0, len(tasks), prompts_per_batch):
            chunk = prompts[start : start + prompts_per_batch]
            texts = list(policy.sample(chunk, num_samples=per_task, settings=settings, seed=10_000 * seed + start))
            part = slice(start, start + len(chunk))
            bad += _score_batch(
                env, tasks[part], texts, pools[part], seed=seed, per_task=per_task, name=name, mode=mode, log=log
            )
            if progress is not None:
                progress(len(chunk))
    bad += int(getattr(policy, "bad_completions", 0) or 0) - sampler_bad
    if bad:
        log(f"{name}: {bad} completion(s) were missing or unscorable and count as all-zero reward rows")
    result = EvalResult(name=name, mode=mode, m=m, rewards=pools, bad_completions=bad)
    result.settings = {"samples": samples, "seeds": seeds, **settings.as_kwargs()}
    _add_metrics(result, env, tasks, ks=ks)
    return result


def _completions_per_task(
    tasks: Sequence[Task[Any]],
    *,
    mode: str,
    m: int,
    samples: int,
    seeds: int,
    goal_weights: Sequence[np.ndarray] | None,
    ks: Sequence[int] | None,
) -> int:
    """The completions per task and seed, n = samples // m (at least 1), once the request is checked.

    Raises:
        ValueError: `goal_weights` without one vector per task.
        ConfigError: A k asked for that is larger than the pools (refused now, not after the sampling;
            `pool_summary` refuses it too).
    """
    if goal_weights is not None and len(goal_weights) != len(tasks):
        raise ValueError(f"goal_weights has {len(goal_weights)} vectors for {len(tasks)} tasks; give one per task.")
    per_task = max(1, samples // m)
    size = per_task * seeds * (m if mode == "multi" else 1)
    too_large = [k for k in ks or () if k > size] if ks is not None and tuple(ks) != KS else []
    if too_large:
        raise ConfigError(
            f"k = {', '.join(map(str, too_large))} is larger than the pools: {samples} samples x {seeds} seed(s) "
            f"give {size} candidates per task ({mode} mode, m={m}); raise samples/seeds or ask for k <= {size}."
        )
    return per_task


def _add_metrics(
    result: EvalResult, env: TextEnv[Any, Any], tasks: Sequence[Task[Any]], *, ks: Sequence[int] | None
) -> None:
    """Fill `result`'s metrics, best@k curve and standard errors from its pools (shape (T, n, m, d))."""
    task_pools = list(result.rewards)
    task_rows = [task_pool_metrics(env, t, p, mode=result.mode, ks=ks) for t, p in zip(tasks, task_pools, strict=True)]
    result.metrics = pool_summary(env, tasks, task_pools, task_rows, mode=result.mode, ks=ks)
    result.curve = pool_curve(env, tasks, task_pools, mode=result.mode)
    errors = standard_errors(env, tasks, task_pools, task_rows, result.metrics)
    result.standard_errors = {str(k): v for k, v in errors.items()}


def _score_batch(
    env: TextEnv[Any, Any],
    tasks: Sequence[Task[Any]],
    texts: list[str],
    pools: np.ndarray,
    *,
    seed: int,
    per_task: int,
    name: str,
    mode: str,
    log: Callable[[str], None],
) -> int:
    """Score one batch's completions (`vpo_core.batch.score_groups`) into its tasks' pools; returns how many were bad.

    Args:
        env: The environment.
        tasks: The batch's P tasks.
        texts: The batch's completions, prompt-major (n per task; missing ones at the end score 0).
        pools: The P tasks' pools, shape (P, n·seeds, m, d), written in place: this seed's n columns.
        seed: The evaluation seed (which n columns of the pools).
        per_task: n, the completions per task and seed.
        name: Label for the log.
        mode: Prompt mode.
        log: Where a bad completion is reported.

    Returns:
        The completions missing from `texts` or whose scoring raised (their rows are zero).
    """
    expected = len(tasks) * per_task
    if len(texts) != expected:
        log(f"{name}: the sampler returned {len(texts)} completions for {expected}; missing ones score 0")
    given: list[str | None] = list(texts[:expected])

    def report(b: int, g: int, exc: Exception) -> None:
        log(
            f"{name}: completion {seed * per_task + g} of {tasks[b].id} could not be scored ({type(exc).__name__}: {exc})"
        )

    batch = score_groups(
        env,
        tasks,
        given + [None] * (expected - len(given)),
        mode=mode,  # type: ignore[arg-type]  # evaluate_policy's mode is the policy's, single or multi
        m=pools.shape[2],
        on_error=report,
    )
    pools[:, seed * per_task : (seed + 1) * per_task] = batch.padded(pools.shape[-1])
    return batch.unscorable


def before_after(init: EvalResult, final: EvalResult) -> dict[str, object]:
    """The report's comparison of an evaluation before and after RL (every engine's ``report.json`` keys)."""
    return {
        "warm_started": init.metrics,
        "after_rl": final.metrics,
        "learned": final.metrics["mean_w_star"] > init.metrics["mean_w_star"],
    }
