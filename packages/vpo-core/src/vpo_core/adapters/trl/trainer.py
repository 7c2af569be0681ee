"""TRL's GRPOTrainer with vpo-core's set-level advantages (every method of `vpo_core.METHODS`).

TRL 1.16 computes its advantage inline in ``GRPOTrainer._generate_and_score_completions`` from
scalar reward functions; it has no hook for a set-level advantage. `VPOGRPOTrainer` keeps all of
TRL's generation, reference model and loss, and replaces only that advantage:

1. `EnvScorer` is the trainer's one reward function: for each completion it parses and scores the
   whole assistant turn once (the template's pre-fill plus the generated text) into the env's raw
   rewards (m, d) and the de-duplicated training rewards, keeps both, and returns the best-of-m
   w*-score for TRL's reward logs.
2. After TRL's own scoring, the override gathers every process's training rewards (TRL puts the
   G completions of a prompt next to each other in the generation batch), runs
   `vpo_core.compute_advantages` on the (B, G, m, d) batch with group keys ``(step, group, task)``,
   and puts this process's slice into ``output["advantages"]``, the tensor TRL's loss reads. TRL has
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

from vpo_core.advantages import compute_advantages
from vpo_core.env import TextEnv
from vpo_core.methods import get_method

__all__ = ["EnvScorer", "VPOGRPOTrainer"]


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

    def __init__(self, env: TextEnv[Any, Any], tasks: Sequence[Any], *, mode: str, m: int, prefill: str = "") -> None:
        self.env, self.tasks, self.mode, self.m, self.prefill = env, list(tasks), mode, m, prefill
        self.raw: list[np.ndarray] = []
        self.train: list[np.ndarray] = []
        self.task_ids: list[str] = []

    def clear(self) -> None:
        """Forget the previous batch's matrices."""
        self.raw, self.train, self.task_ids = [], [], []

    def __call__(self, prompts: list[Any], completions: list[Any], task_index: list[int], **_: Any) -> list[float]:
        """Score each completion; returns its best-of-m w*-score (what TRL logs as the reward)."""
        out = []
        for completion, index in zip(completions, task_index, strict=True):
            task = self.tasks[int(index)]
            text = completion if isinstance(completion, str) else str(completion[-1]["content"])
            scored = self.env.score_completion(task, self.prefill + text, mode=self.mode, m=self.m)  # type: ignore[arg-type]
            raw, train = scored.rewards, scored.training_rewards  # (m, d) each
            self.raw.append(raw)
            self.train.append(train)
            self.task_ids.append(str(task.id))
            out.append(float(self.env.spec_for(task).scalarize(raw).max()))
        return out


class VPOGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose advantage is `vpo_core.compute_advantages` of the env's vector rewards.

    Args:
        *args: GRPOTrainer's arguments; ``reward_funcs`` must be one `EnvScorer`.
        method: A name of `vpo_core.METHODS`.
        seed: Seed of the group-shared weights.
        num_weights: K (vpo).
        alpha: Dirichlet concentration (vpo, random_w).
        weight_sampler: A name of `vpo_core.weights.WEIGHT_SAMPLERS` (``"dirichlet"``, the paper's).
        std: z-score convention, ``"population"`` (the paper) or ``"unbiased"``.
        goal_weights: goal_cond only: each task's prompt weights by task index, shape (n_tasks, d).
        stop_strings: Texts that end a completion besides EOS (the env's answer end); empty: EOS and the budget.
        **kwargs: GRPOTrainer's keyword arguments.

    Attributes:
        last_rewards: The last generation batch's training rewards, (B, G, m, d) (a list of (G, m, d_b)
            when dimensions differ), all processes.
        last_advantages: Its advantages, shape (B·G,), all processes, in TRL's order.
        last_keys: Its group keys, ``f"{global_step}:{group}:{task id}"``.
    """

    def __init__(
        self,
        *args: Any,
        method: str,
        seed: int = 0,
        num_weights: int = 100,
        alpha: float = 1.0,
        weight_sampler: str = "dirichlet",
        std: str = "population",
        goal_weights: np.ndarray | None = None,
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
        self.method = get_method(method)
        if self.method.goal_prompt and goal_weights is None:
            raise ValueError(f"method {method!r} writes weights into the prompt: pass goal_weights (n_tasks, d).")
        self.vpo_options: dict[str, Any] = {
            "seed": seed,
            "num_weights": num_weights,
            "alpha": alpha,
            "weight_sampler": weight_sampler,
            "std": std,
        }
        self.goal_weights = goal_weights
        self.last_rewards: Any = None
        self.last_advantages: np.ndarray | None = None
        self.last_keys: list[str] = []

    def _generate_and_score_completions(self, inputs: list[dict[str, Any]]) -> dict[str, Any]:
        from accelerate.utils import gather_object

        self.scorer.clear()
        output = super()._generate_and_score_completions(inputs)
        if len(self.scorer.train) != len(inputs):
            raise RuntimeError(f"the env scored {len(self.scorer.train)} completions of a batch of {len(inputs)}.")
        train = gather_object(self.scorer.train)
        task_index = gather_object([int(x["task_index"]) for x in inputs])
        task_ids = gather_object(self.scorer.task_ids)
        lengths = gather_object(output["completion_mask"].sum(dim=1).clamp(min=1).tolist())
        mode = "train" if bool(getattr(self.model, "training", True)) else "eval"
        group_size: Any = self.num_generations if mode == "train" else self.num_generations_eval
        group = int(group_size if group_size is not None else self.num_generations)  # type: ignore[arg-type]
        n_groups = len(train) // group
        step = int(self.state.global_step)
        keys = [f"{step}:{b}:{task_ids[b * group]}" for b in range(n_groups)]
        groups = [np.stack(train[b * group : (b + 1) * group]) for b in range(n_groups)]
        rewards: Any = np.stack(groups) if len({g.shape for g in groups}) == 1 else groups
        goal = None
        if self.method.goal_prompt:
            assert self.goal_weights is not None
            goal = np.stack([self.goal_weights[task_index[b * group]] for b in range(n_groups)])
        task = self.scorer.tasks[task_index[0]]
        w_star = (
            self.scorer.env.spec_for(task).w_star
            if not isinstance(rewards, list)
            else [self.scorer.env.spec_for(self.scorer.tasks[task_index[b * group]]).w_star for b in range(n_groups)]
        )
        options = dict(self.vpo_options)
        std = options.pop("std")
        advantages = compute_advantages(
            self.method,
            rewards,
            w_star=w_star,
            group_keys=keys,
            std=std,
            goal_weights=goal,
            response_lengths=np.asarray(lengths, dtype=np.float64).reshape(n_groups, group)
            if self.method.normalizer == "gdpo"
            else None,
            **options,
        ).reshape(-1)
        self.last_rewards, self.last_advantages, self.last_keys = rewards, advantages, keys
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
