"""TRL's GRPOTrainer with vpo-core's set-level advantages (every method of `vpo_core.METHODS`).

TRL 1.16 computes its advantage inline in ``GRPOTrainer._generate_and_score_completions`` from
scalar reward functions; it has no hook for a set-level advantage. `VPOGRPOTrainer` keeps all of
TRL's generation, reference model and loss, and replaces only that advantage:

1. `EnvScorer` is the trainer's one reward function: it scores each completion's whole assistant turn
   once (the template's pre-fill plus the generated text) with `vpo_core.batch.score_groups`, each
   completion a group of one (a process holds a share of the generation batch, not whole groups),
   keeps the scores (raw (m, d) and de-duplicated training rewards, each task's spec) and returns the
   best-of-m w*-score for TRL's reward logs.
2. After TRL's own scoring, the override gathers every process's scores, regroups them into the
   `vpo_core.batch.RolloutBatch` of G completions per prompt (`vpo_core.batch.regroup`; TRL puts the
   G completions of a prompt next to each other), runs `vpo_core.compute_advantages` on it with group
   keys ``(step, group, task)`` and the run's `AdvantageConfig`, and puts this process's slice into
   ``output["advantages"]``, the tensor TRL's loss reads. Groups keep their own spec, so tasks of
   different d (env-lcb) train side by side. TRL has
   already logged its own group-normalised advantages of the scalar reward by then (its completions
   table): the override replaces those too, so what is logged is what was trained on.
3. With ``stop_strings`` (the env's `TextEnv.answer_stop`), generation ends where a completion's last
   answer closes, as in the local engine; the tokens after the stop (TRL would keep the padding that
   follows it as completion tokens) are dropped before scoring and training.

The loss is TRL's (see the README's "Training with TRL" for how the paper's loss maps onto it).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
from trl.trainer.grpo_trainer import GRPOTrainer

from vpo_core.advantages import AdvantageConfig, compute_advantages
from vpo_core.batch import RolloutBatch, regroup, score_groups
from vpo_core.env import TextEnv
from vpo_core.types import Mode

__all__ = ["EnvScorer", "VPOGRPOTrainer", "group_advantages"]


class EnvScorer:
    """TRL reward function that scores completions with an env, once each, and keeps the reward matrices.

    Args:
        env: The environment.
        tasks: The tasks the dataset's ``task_index`` column points into.
        mode: ``"single"`` or ``"multi"``.
        m: Candidates per completion.
        prefill: Text the chat template writes at the start of the assistant turn (scored with it).
    """

    __name__ = "env_best_of_m"

    def __init__(self, env: TextEnv[Any, Any], tasks: Sequence[Any], *, mode: Mode, m: int, prefill: str = "") -> None:
        self.env, self.tasks, self.mode, self.m, self.prefill = env, list(tasks), mode, m, prefill
        self.scored: list[RolloutBatch] = []

    def clear(self) -> None:
        """Forget the previous batch's scores."""
        self.scored = []

    @property
    def count(self) -> int:
        """The completions scored since `clear`."""
        return sum(batch.n_groups for batch in self.scored)

    def __call__(self, prompts: list[Any], completions: list[Any], task_index: list[int], **_: Any) -> list[float]:
        """Score each completion (a group of one); returns its best-of-m w*-score (what TRL logs as the reward)."""
        tasks = [self.tasks[int(index)] for index in task_index]
        texts = [self.prefill + (c if isinstance(c, str) else str(c[-1]["content"])) for c in completions]
        batch = score_groups(self.env, tasks, texts, mode=self.mode, m=self.m)
        self.scored.append(batch)
        assert batch.specs is not None  # score_groups keeps each group's spec
        return [float(spec.scalarize(raw[0]).max()) for spec, raw in zip(batch.specs, batch.rewards, strict=True)]


def group_advantages(
    rows: Sequence[RolloutBatch],
    config: AdvantageConfig,
    *,
    group_size: int,
    step: int,
    lengths: Sequence[float],
    goal_weights: Sequence[np.ndarray] | None = None,
    task_index: Sequence[int] = (),
) -> tuple[RolloutBatch, np.ndarray]:
    """The advantages of a generation batch, from every process's scores in TRL's order.

    Args:
        rows: `EnvScorer`'s scores of every process, gathered in order (each completion a group of one).
        config: The run's advantage options.
        group_size: G, the completions per prompt.
        step: TRL's global step (keys the groups' weight draws: ``f"{step}:{group}:{task id}"``).
        lengths: Each completion's length in tokens, N values.
        goal_weights: goal-conditioned methods: each task's prompt weights by task index, (d_t,) each.
        task_index: Each completion's task index, N values (read with `goal_weights`).

    Returns:
        The batch of N / G groups and its advantages, shape (N,), in TRL's order.
    """
    every = [task for row in rows for task in row.tasks or ()]
    if group_size < 1 or len(every) % group_size or len(lengths) != len(every):
        raise ValueError(
            f"{len(every)} scored completions and {len(lengths)} lengths do not make groups of {group_size}."
        )
    tasks = every[::group_size]  # each group's task (regroup checks that its G completions share it)
    n_groups = len(tasks)
    goal = None
    if config.method.goal_prompt:
        if goal_weights is None:
            raise ValueError(f"method {config.method.name!r} writes weights into the prompt: pass goal_weights.")
        goal = [goal_weights[task_index[b * group_size]] for b in range(n_groups)]
    batch = regroup(
        rows,
        group_size,
        keys=[f"{step}:{b}:{task.id}" for b, task in enumerate(tasks)],
        goal_weights=goal,
        lengths=np.asarray(lengths, dtype=np.float64).reshape(n_groups, group_size),
    )
    return batch, compute_advantages(batch, config).reshape(-1)


class VPOGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantage is `vpo_core.compute_advantages` of the env's vector rewards.

    Args:
        *args: GRPOTrainer's arguments; ``reward_funcs`` must be one `EnvScorer`.
        advantage: The run's advantage options (method, seed, K, alpha, weight sampler, std).
        goal_weights: goal_cond only: each task's prompt weights by task index, (d_t,) each.
        stop_strings: Texts that end a completion besides EOS (the env's answer end); empty: EOS and the budget.
        **kwargs: GRPOTrainer's keyword arguments.

    Attributes:
        last_batch: The last generation batch's scores, all processes, as groups of G (`RolloutBatch`;
            its keys are ``f"{global_step}:{group}:{task id}"``).
        last_advantages: Its advantages, shape (B·G,), all processes, in TRL's order.
    """

    def __init__(
        self,
        *args: Any,
        advantage: AdvantageConfig,
        goal_weights: Sequence[np.ndarray] | None = None,
        stop_strings: Sequence[str] = (),
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.stop_strings = tuple(s for s in stop_strings if s)
        scorers = [f for f in self.reward_funcs if isinstance(f, EnvScorer)]
        if len(self.reward_funcs) != 1 or not scorers:
            raise ValueError(
                "VPOGRPOTrainer needs exactly one reward function, an EnvScorer (the env's vector rewards)."
            )
        self.scorer: EnvScorer = scorers[0]
        self.advantage = advantage
        if advantage.method.goal_prompt and goal_weights is None:
            raise ValueError(
                f"method {advantage.method.name!r} writes weights into the prompt: pass goal_weights (one per task)."
            )
        self.goal_weights = goal_weights
        self.last_batch: RolloutBatch | None = None
        self.last_advantages: np.ndarray | None = None

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        from accelerate.utils import gather_object

        self.scorer.clear()
        output = super()._generate_and_score_completions(inputs)
        if self.scorer.count != len(inputs):
            raise RuntimeError(f"the env scored {self.scorer.count} completions of a batch of {len(inputs)}.")
        mode = "train" if bool(getattr(self.model, "training", True)) else "eval"
        group_size: Any = self.num_generations if mode == "train" else self.num_generations_eval
        batch, advantages = group_advantages(
            gather_object(self.scorer.scored),
            self.advantage,
            group_size=int(group_size if group_size is not None else self.num_generations),  # type: ignore[arg-type]
            step=int(self.state.global_step),
            lengths=gather_object(output["completion_mask"].sum(dim=1).clamp(min=1).tolist()),
            goal_weights=self.goal_weights,
            task_index=gather_object([int(x["task_index"]) for x in inputs]),
        )
        self.last_batch, self.last_advantages = batch, advantages
        start = self.accelerator.process_index * len(inputs)
        local = advantages[start : start + len(inputs)]
        output["advantages"] = torch.as_tensor(
            local, dtype=output["advantages"].dtype, device=output["advantages"].device
        )
        self._replace_logged_advantages(advantages)
        self._metrics[mode]["vpo/advantage_abs_mean"].append(float(np.abs(advantages).mean()))
        self._metrics[mode]["vpo/advantages/mean"].append(float(advantages.mean()))
        self._metrics[mode]["vpo/advantages/min"].append(float(advantages.min()))
        self._metrics[mode]["vpo/advantages/max"].append(float(advantages.max()))
        return output

    def _replace_logged_advantages(self, advantages: np.ndarray) -> None:
        """Put `advantages` (all processes, TRL's order) in place of the ones TRL logged for this batch.

        TRL appends its own group-normalised advantages of the scalar reward to ``_logs["advantages"]``
        (the completions table: printed, written to ``completions/*.parquet``, sent to trackers) before
        this override replaces the tensor its loss reads; the batch's entries are the last ones.
        """
        logged: Any = self._logs["advantages"]  # a deque
        for _ in range(min(len(advantages), len(logged))):
            logged.pop()
        logged.extend(float(a) for a in advantages)

    # ------------------------------------------------------------------------------ stop strings
    def _generate_single_turn(self, *args: Any, **kwargs: Any) -> tuple[list[list[int]], Any]:
        """TRL's generation, ending each completion at the first of `stop_strings` as well as at EOS."""
        if not self.stop_strings:
            return super()._generate_single_turn(*args, **kwargs)
        with self._generate_with_stop_strings():
            completion_ids, logprobs = super()._generate_single_turn(*args, **kwargs)
        cut = [self._cut_at_stop(list(ids)) for ids in completion_ids]
        if logprobs is not None:
            logprobs = [lp[: len(ids)] for lp, ids in zip(logprobs, cut, strict=True)]
        return cut, logprobs

    @contextmanager
    def _generate_with_stop_strings(self) -> Iterator[None]:
        """While the block runs, transformers' ``generate`` stops at `stop_strings` (it needs the tokenizer for them).

        TRL calls ``generate`` with its generation config only; the stop strings go into that config and
        the unwrapped model's ``generate`` gets the tokenizer (an instance attribute, removed afterwards).
        """
        model = self.accelerator.unwrap_model(self.model)
        config = self.generation_config
        previous = config.stop_strings
        config.stop_strings = list(self.stop_strings)
        model.generate = functools.partial(model.generate, tokenizer=self._tokenizer)
        try:
            yield
        finally:
            del model.generate
            config.stop_strings = previous

    def _cut_at_stop(self, ids: list[int]) -> list[int]:
        """`ids` up to the token whose text completes the first stop string (all of them if none does).

        The shortest prefix whose decoded text holds a stop string, found by bisection (holding one is
        monotone in the prefix length). What follows (padding after the stop, which TRL's EOS mask keeps
        unless the pad is an EOS, or text a sampler wrote past it) is neither scored nor trained on.
        """

        def holds(n: int) -> bool:
            text = self._tokenizer.decode(ids[:n], skip_special_tokens=True)
            return any(stop in text for stop in self.stop_strings)

        if not ids or not holds(len(ids)):
            return ids
        low, high = 1, len(ids)  # holds(high) is true; find the least such n
        while low < high:
            middle = (low + high) // 2
            if holds(middle):
                high = middle
            else:
                low = middle + 1
        return ids[:high]
