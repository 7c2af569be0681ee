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
   and puts this process's slice into ``output["advantages"]``, the tensor TRL's loss reads.

The loss is TRL's (see the README's "Training with TRL" for how the paper's loss maps onto it).
"""

from __future__ import annotations

from collections.abc import Sequence
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
        weight_sampler: ``"dirichlet"`` or ``"sobol"``.
        std: z-score convention, ``"population"`` (the paper) or ``"unbiased"``.
        goal_weights: goal_cond only: each task's prompt weights by task index, shape (n_tasks, d).
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
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
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
        self._metrics[mode]["vpo/advantage_abs_mean"].append(float(np.abs(advantages).mean()))
        return output
