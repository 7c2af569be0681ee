"""``apps/train.py engine=trl``: RL with TRL's GRPOTrainer and vpo-core's advantages, on one node.

The env renders every training prompt (its chat template applied here, like the local engine), TRL
generates G completions per prompt and runs its loss, the env scores every completion into (m, d)
rewards and `vpo_core.compute_advantages` gives the advantage TRL's loss uses (`VPOGRPOTrainer`).
Without ``model=`` the local engine's small default model is built from the env's own text (no
warm-up: TRL has no supervised phase here; pass a warm-started ``model=`` for a real run).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.adapters.local.sampling import SamplingSettings
from vpo_core.cli_config import option, run_cli
from vpo_core.methods import METHODS, get_method
from vpo_core.qmc import check_weight_sampler
from vpo_core.registry import DEFAULT_ENV

__all__ = ["TRLTrainConfig", "build_trainer", "main"]


@dataclass
class TRLTrainConfig:
    """A TRL run's options.

    The loss options default to the paper's: PPO-clip 0.2, dual-clip 3.0 (TRL's ``delta``), token-mean
    (TRL's ``loss_type="dapo"``), k3 ("low-var") KL 1e-3 against the initial model.
    """

    env: str = option(DEFAULT_ENV, "env id (vpo_core.make), e.g. maze-v1")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=dict, help="keyword arguments of the env's constructor, e.g. env.train_size=200"
    )
    method: str = option("vpo", f"training method, one of {sorted(METHODS)}")
    m: int | None = option(None, "answers per completion; default: the method's (3 for multi, 1 for single)")
    model: str | None = option(None, "a local HF model dir; default: build the local engine's small model")
    out: str | None = option(None, "run directory; default runs/trl/<env>-<method>-seed<seed>")
    seed: int = option(0, "seed of the model init, data order, sampling and group-shared weights")
    steps: int = option(50, "RL steps (generation batches)")
    prompts_per_step: int = option(8, "prompts per RL step")
    group_size: int = option(8, "rollouts per prompt (G >= 2)")
    mini_batches: int = option(2, "optimizer steps per generation batch (PPO mini-batches)")
    lr: float = option(1e-6, "learning rate (the paper's)")
    clip_ratio: float = option(0.2, "PPO clip ratio epsilon")
    clip_ratio_c: float = option(3.0, "dual-clip constant (TRL's delta)")
    kl_coef: float = option(1e-3, "k3 KL coefficient against the initial model (TRL's beta)")
    num_weights: int = option(100, "weight draws per group (VPO, random_w)")
    alpha: float = option(1.0, "Dirichlet concentration of the weight draws")
    weight_sampler: str = option("dirichlet", "dirichlet (iid, the paper's) or sobol (quasi-Monte Carlo)")
    std: str = option("population", "group std of the advantage normaliser: population or unbiased")
    max_new_tokens: int | None = option(None, "token budget per completion; default: the env profile's")
    temperature: float | None = option(None, "rollout temperature; default: env.profile.train.temperature")
    top_p: float | None = option(None, "rollout top-p; default: env.profile.train.top_p")
    device: str = option("cpu", "cpu or cuda")
    vocab_size: int = option(2000, "default model: tokenizer vocabulary")
    hidden_size: int = option(128, "default model: hidden size")
    layers: int = option(2, "default model: layers")
    heads: int = option(4, "default model: attention heads")

    def __post_init__(self) -> None:
        get_method(self.method).resolve_m(self.m)
        for name in ("steps", "prompts_per_step", "mini_batches", "num_weights"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {name}={getattr(self, name)}.")
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be >= 2 (advantages compare rollouts within a group), got {self.group_size}."
            )
        if (self.prompts_per_step * self.group_size) % self.mini_batches:
            raise ValueError(
                f"mini_batches={self.mini_batches} must divide prompts_per_step x group_size = "
                f"{self.prompts_per_step * self.group_size}."
            )
        for name in ("lr", "clip_ratio", "alpha"):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be a finite number > 0, got {name}={value}.")
        if not (math.isfinite(self.clip_ratio_c) and self.clip_ratio_c > 1 + self.clip_ratio):
            raise ValueError(f"clip_ratio_c must be > 1 + clip_ratio, got clip_ratio_c={self.clip_ratio_c}.")
        if not (math.isfinite(self.kl_coef) and self.kl_coef >= 0):
            raise ValueError(f"kl_coef must be a finite number >= 0, got kl_coef={self.kl_coef}.")
        if self.std not in ("population", "unbiased"):
            raise ValueError(f"std must be population or unbiased, got {self.std!r}.")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda, got {self.device!r}.")
        check_weight_sampler(self.weight_sampler)

    @property
    def run_dir(self) -> Path:
        """Where the run's files go."""
        return Path(self.out) if self.out else Path("runs/trl") / f"{self.env}-{self.method}-seed{self.seed}"


def _default_model_dir(config: TRLTrainConfig, env: Any, tasks: list[Any], mode: str, m: int) -> Path:
    """Build the local engine's small default model from the env's text and save it (TRL loads its reference from disk)."""
    import numpy as np

    from vpo_core.adapters.local.policy import new_policy

    rng = np.random.default_rng([config.seed, 1])
    texts: list[str] = []
    for task in tasks[:300]:
        texts.extend(msg["content"] for msg in env.render_prompt(task, mode=mode, m=m))
        demo = env.demonstration(task, mode=mode, m=m, rng=rng)
        texts.extend([demo] if demo else [])
    policy = new_policy(
        texts,
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        layers=config.layers,
        heads=config.heads,
        seed=config.seed,
        max_positions=1024,
    )
    path = config.run_dir / "init_model"
    policy.save(path)
    return path


def _prompt_dataset(config: TRLTrainConfig, env: Any, tasks: list[Any], tokenizer: Any) -> tuple[Any, Any]:
    """The training prompts, rendered with the tokenizer's chat template, as TRL's dataset.

    Returns:
        The dataset (rows ``prompt``, ``task_index``) and, for a goal-conditioned method, the goal
        weights written into each task's prompt, shape (T, D) (else None).
    """
    from datasets import Dataset

    from vpo_core.adapters.local.samplers import render_chat

    method = get_method(config.method)
    m = method.resolve_m(config.m)
    goal = method.task_goal_weights([env.spec_for(t).dim for t in tasks], [t.id for t in tasks], seed=config.seed)
    template_kwargs = dict(env.profile.chat_template_kwargs)
    rows = [
        {
            "prompt": render_chat(
                tokenizer,
                env.render_prompt(t, mode=method.mode, m=m, goal_weights=None if goal is None else goal[i]),
                template_kwargs,
            ),
            "task_index": i,
        }
        for i, t in enumerate(tasks)
    ]
    return Dataset.from_list(rows), goal


def _grpo_config(config: TRLTrainConfig, sampling: SamplingSettings) -> Any:
    """TRL's ``GRPOConfig`` of the paper's loss: one generation batch per step, split into PPO mini-batches."""
    from trl.trainer.grpo_config import GRPOConfig

    batch = config.prompts_per_step * config.group_size
    return GRPOConfig(
        output_dir=str(config.run_dir),
        seed=config.seed,
        learning_rate=config.lr,
        lr_scheduler_type="constant",
        weight_decay=0.01,
        max_grad_norm=1.0,
        max_steps=config.steps * config.mini_batches,
        per_device_train_batch_size=batch // config.mini_batches,
        gradient_accumulation_steps=1,
        steps_per_generation=config.mini_batches,
        num_generations=config.group_size,
        max_completion_length=sampling.max_new_tokens,
        temperature=sampling.temperature,
        top_p=sampling.top_p,
        epsilon=config.clip_ratio,
        delta=config.clip_ratio_c,
        beta=config.kl_coef,
        loss_type="dapo",
        scale_rewards="none",
        use_cpu=config.device == "cpu",
        bf16=False,
        report_to="none",
        logging_steps=1,
        save_strategy="no",
        disable_tqdm=True,
    )


def build_trainer(config: TRLTrainConfig) -> Any:
    """The env, its prompts as a dataset, the model and a `VPOGRPOTrainer` configured like the paper's loss.

    Returns:
        The trainer (call ``.train()``).
    """
    import vpo_core
    from vpo_core.adapters.local.policy import load_policy
    from vpo_core.adapters.trl.trainer import EnvScorer, VPOGRPOTrainer
    from vpo_core.adapters.verl.reward import template_prefill

    env = vpo_core.make(config.env, **config.env_options)
    method = get_method(config.method)
    mode, m = method.mode, method.resolve_m(config.m)
    tasks = list(env.tasks("train"))
    model_dir = Path(config.model) if config.model else _default_model_dir(config, env, tasks, mode, m)
    policy = load_policy(model_dir, config.device)
    dataset, goal = _prompt_dataset(config, env, tasks, policy.tokenizer)
    sampling = SamplingSettings.resolve(
        env.profile.train,
        mode=mode,
        m=m,
        temperature=config.temperature,
        top_p=config.top_p,
        max_new_tokens=config.max_new_tokens or None,
    )
    prefill = template_prefill(policy.tokenizer, dict(env.profile.chat_template_kwargs))
    return VPOGRPOTrainer(
        model=policy.model,
        reward_funcs=[EnvScorer(env, tasks, mode=mode, m=m, prefill=prefill)],
        args=_grpo_config(config, sampling),
        train_dataset=dataset,
        processing_class=policy.tokenizer,
        method=config.method,
        seed=config.seed,
        num_weights=config.num_weights,
        alpha=config.alpha,
        weight_sampler=config.weight_sampler,
        std=config.std,
        goal_weights=goal,
    )


def main(argv: list[str]) -> int:
    """``apps/train.py engine=trl key=value ...``; returns the exit code."""
    config = run_cli(
        TRLTrainConfig,
        argv,
        prog="apps/train.py engine=trl",
        description="RL with TRL's GRPOTrainer and vpo-core's set-level advantages (one node, CPU or GPU).",
        passthrough={"env": "env_options"},
    )
    if isinstance(config, int):
        return config
    try:
        trainer = build_trainer(config)
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    trainer.train()
    trainer.save_model(str(config.run_dir / "final_model"))
    print(f"wrote {config.run_dir / 'final_model'}", file=sys.stderr)
    return 0
