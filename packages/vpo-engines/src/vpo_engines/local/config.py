"""Configuration of a local training run, parsed from ``key=value`` arguments."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.advantages import AdvantageConfig
from vpo_core.cli_config import option, parse_config
from vpo_core.methods import METHODS, get_method
from vpo_core.registry import DEFAULT_ENV
from vpo_core.types import Mode
from vpo_core.weights import weight_sampler_help

__all__ = ["LOGGERS", "TrainConfig", "parse_overrides"]

_INT_MIN = {
    "m": 1,
    "threads": 1,
    "sample_threads": 1,
    "warmup_steps": 0,
    "warmup_batch": 1,
    "warmup_demos": 1,
    "warmup_save_every": 1,
    "steps": 0,
    "prompts_per_step": 1,
    "group_size": 1,
    "mini_batches": 1,
    "num_weights": 1,
    "max_new_tokens": 1,
    "save_every": 1,
    "eval_tasks": 0,
    "eval_samples": 1,
    "eval_seeds": 1,
    "hidden_size": 1,
    "layers": 1,
    "heads": 1,
    "vocab_size": 300,
}
_POSITIVE: tuple[Callable[[float], bool], str] = (lambda v: v > 0, "> 0")
_FLOAT_RULES: dict[str, tuple[Callable[[float], bool], str]] = {
    "warmup_lr": _POSITIVE,
    "lr": _POSITIVE,
    "weight_decay": (lambda v: v >= 0, ">= 0"),
    "grad_clip": _POSITIVE,
    "clip_ratio": _POSITIVE,
    "clip_ratio_c": (lambda v: v > 1, "> 1"),
    "kl_coef": (lambda v: v >= 0, ">= 0"),
    "temperature": _POSITIVE,
    "top_p": (lambda v: 0 < v <= 1, "in (0, 1]"),
    "alpha": _POSITIVE,
    "eval_temperature": _POSITIVE,
    "eval_top_p": (lambda v: 0 < v <= 1, "in (0, 1]"),
}


LOGGERS = ("console", "tensorboard", "wandb")


@dataclass
class TrainConfig:
    """Everything a local run depends on (saved as ``config.json`` in the run directory).

    The defaults are the embedded default run (maze, VPO, a small locally built model of 2 layers,
    hidden size 128 and 0.63M parameters, CPU, under two minutes on 2 cores). They differ from the
    paper's 4B-model recipe where a tiny model needs it: a larger learning rate (2e-4 vs 1e-6) and far
    fewer prompts per step (12 vs 128). The warm-up (300 steps x 16 demonstrations from
    ``env.demonstration``; maze's default demonstrations are random valid routes) teaches the format and
    valid-looking answers, not a solver; 20 RL steps of 12 prompts x 8 rollouts follow. At threads=1 the test
    mean w*-reward went 0.140 (warm start) -> 0.330 on seed 0, 0.154 -> 0.334 on seed 1, 0.140 -> 0.307 on
    seed 2 and 0.111 -> 0.330 on seed 3 (BENCHMARKS.md: the recipe's check).
    Runs saved with an earlier default (3 layers, 50 RL steps of 8 prompts at lr 1e-4; or 28 steps of 8 at
    1.6e-4) keep those values in their ``config.json``, so replaying or resuming them is unchanged.
    Sampling settings left at None come from the env's profile (``env.profile``).
    """

    env: str = option(DEFAULT_ENV, "env id (vpo_core.make), e.g. maze-v1")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=dict, help="keyword arguments of the env's constructor, e.g. env.train_size=200"
    )
    method: str = option("vpo", f"training method, one of {sorted(METHODS)}")
    m: int | None = option(None, "answers per completion; default: the method's (3 for multi, 1 for single)")
    model: str | None = option(None, "a local HF model dir; default: build a small model from the env's text")
    out: str | None = option(None, "run directory; default runs/<env>-<method>-seed<seed>")
    seed: int = option(0, "seed of the model init, warm-up, task sampling and rollouts")
    device: str = option("cpu", "cpu or cuda[:i]")
    threads: int = option(2, "torch CPU threads for training steps (>= 1)")
    sample_threads: int = option(1, "torch CPU threads while sampling (a small model samples fastest on one)")
    logger: str = option("console", f"experiment trackers, comma-separated: {', '.join(LOGGERS)}")
    # warm-up (supervised) on the env's demonstrations, for the default model
    warmup_steps: int = option(300, "supervised warm-up steps on env.demonstration(...) (default model only)")
    warmup_batch: int = option(16, "warm-up batch size (examples)")
    warmup_demos: int = option(
        1,
        "demonstrations per task in a warm-up step (warmup_batch / warmup_demos tasks, each prompt run once for "
        "its demonstrations; 1: every example its own task). 2 or 4 cut the default warm-up's CPU time by a third "
        "or a half, but over 300 steps give a weaker warm start (fewer distinct mazes; BENCHMARKS.md)",
    )
    warmup_lr: float = option(2e-3, "warm-up learning rate (AdamW, linear warm-up and decay)")
    warmup_save_every: int = option(100, "save the warm-up every N steps (a stopped warm-up goes on from there)")
    # RL (the paper's loss: PPO-clip 0.2, dual clip 3.0, token-mean, low_var_kl 1e-3, AdamW, clip 1.0)
    steps: int = option(20, "RL steps (0: warm up, save init_model and stop, e.g. to share a warm start)")
    prompts_per_step: int = option(12, "prompts per RL step")
    group_size: int = option(8, "rollouts per prompt (G >= 2)")
    lr: float = option(2e-4, "RL learning rate (AdamW)")
    weight_decay: float = option(0.01, "AdamW weight decay")
    grad_clip: float = option(1.0, "gradient-norm clip")
    clip_ratio: float = option(0.2, "PPO clip ratio epsilon (> 0)")
    clip_ratio_c: float = option(3.0, "dual-clip constant (> 1)")
    kl_coef: float = option(1e-3, "low_var_kl coefficient against the warm-started reference (>= 0)")
    mini_batches: int = option(2, "PPO mini-batches per step")
    temperature: float | None = option(None, "rollout temperature; default: env.profile.train.temperature")
    top_p: float | None = option(None, "rollout top-p; default: env.profile.train.top_p")
    num_weights: int = option(100, "weight draws per group (VPO, random_w, E_w metrics)")
    alpha: float = option(1.0, "Dirichlet concentration of the weight draws")
    weight_sampler: str = option(
        "dirichlet",
        f"how VPO/random_w draw the group's weights: {weight_sampler_help()}",
    )
    std: str = option("population", "group std of the advantage normaliser: population or unbiased")
    max_new_tokens: int | None = option(
        None, "token budget per completion; default: the env profile's, capped at 1.25x its longest demonstration"
    )
    stop_at_answer: bool = option(
        True,
        "end each sample where the env's last answer closes (its closing tag, TextEnv.answer_stop), as well as "
        "at EOS; false: sample to EOS or the token budget (a small policy under RL can stop writing EOS)",
    )
    save_every: int = option(10, "checkpoint every N steps (and at the end)")
    keep_steps: str = option(
        "", "RL steps whose model is also kept in snapshots/step<N>/ (comma-separated, e.g. 50,150), for evaluation"
    )
    # evaluation on the test split after training (and of the warmed-up model before RL)
    eval_tasks: int = option(100, "test tasks evaluated before and after RL (0 = no evaluation)")
    eval_samples: int = option(
        12,
        "candidates per task (eval_samples // m chains in multi mode); a quick check, not the profile's "
        "paper-sized evaluation (env.profile.eval_samples, e.g. 30): use vpo eval for that",
    )
    eval_temperature: float | None = option(None, "evaluation temperature; default: env.profile.eval.temperature")
    eval_top_p: float | None = option(None, "evaluation top-p; default: env.profile.eval.top_p")
    eval_seeds: int = option(1, "evaluation seeds (pools concatenated)")
    # model size of the default model
    hidden_size: int = option(128, "hidden size of the default model")
    layers: int = option(2, "transformer layers of the default model")
    heads: int = option(4, "attention heads of the default model (divides hidden_size)")
    vocab_size: int = option(1000, "BPE vocabulary size of the default tokenizer")

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> TrainConfig:
        """Check every value and fill in method-dependent defaults (runs on construction).

        Raises:
            ValueError: One line naming the bad option, the value and what is accepted.
        """
        method = get_method(self.method)
        self.m = method.resolve_m(self.m)
        for name, low in _INT_MIN.items():
            value = getattr(self, name)
            if value is not None and value < low:
                raise ValueError(f"{name} must be >= {low}, got {name}={value}.")
        if self.group_size < 2:
            raise ValueError(
                f"group_size must be >= 2 (advantages compare rollouts within a group), got {self.group_size}."
            )
        for name, (check, rule) in _FLOAT_RULES.items():
            value = getattr(self, name)
            if value is None:
                continue
            if not (isinstance(value, (int, float)) and math.isfinite(value) and check(value)):
                raise ValueError(f"{name} must be a finite number {rule}, got {name}={value}.")
        if self.warmup_batch % self.warmup_demos:
            raise ValueError(
                f"warmup_batch must be a multiple of warmup_demos, got warmup_batch={self.warmup_batch} "
                f"warmup_demos={self.warmup_demos} (e.g. warmup_batch=16 warmup_demos=2)."
            )
        if self.hidden_size % self.heads:
            raise ValueError(f"heads must divide hidden_size, got hidden_size={self.hidden_size} heads={self.heads}.")
        if self.device not in ("cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device must be cpu or cuda[:i], got {self.device!r}.")
        self._advantage = AdvantageConfig.from_run(self)
        unknown = [name for name in self.loggers if name not in LOGGERS]
        if unknown or not self.loggers:
            raise ValueError(f"logger must be a comma-separated list of {', '.join(LOGGERS)}, got {self.logger!r}.")
        try:
            kept = self.kept_steps
        except ValueError:
            raise ValueError(
                f"keep_steps must be comma-separated step numbers >= 1, got {self.keep_steps!r}."
            ) from None
        if any(step < 1 for step in kept):
            raise ValueError(f"keep_steps must be comma-separated step numbers >= 1, got {self.keep_steps!r}.")
        if not isinstance(self.env_options, dict):
            raise ValueError(f"env_options must be a dict of the env's keyword arguments, got {self.env_options!r}.")
        return self

    @property
    def loggers(self) -> list[str]:
        """The experiment trackers asked for (``logger=console,tensorboard``)."""
        return [name.strip() for name in str(self.logger).strip("[]").split(",") if name.strip()]

    @property
    def kept_steps(self) -> list[int]:
        """The steps of ``keep_steps=``, sorted."""
        return sorted({int(part) for part in str(self.keep_steps).strip("[]").split(",") if part.strip()})

    @property
    def advantage(self) -> AdvantageConfig:
        """The advantage's options (method, m, seed, K, alpha, sampler, std), parsed and checked by `validate`."""
        return self._advantage

    @property
    def mode(self) -> Mode:
        """Prompt mode of the method."""
        return self._advantage.method.mode

    @property
    def run_dir(self) -> Path:
        """Where the run's files go."""
        return Path(self.out) if self.out else Path("runs") / f"{self.env}-{self.method}-seed{self.seed}"

    def to_json(self) -> dict[str, Any]:
        """The config as a JSON-ready dict."""
        return dataclasses.asdict(self)

    def identity(self) -> dict[str, Any]:
        """The fields that must match for a run directory to be resumed."""
        data = self.to_json()
        for key in _NOT_IDENTITY:
            data.pop(key)
        return data

    def conflicts(self, saved: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
        """The identity fields on which a run directory's saved config and this config differ.

        A field the saved config lacks (it was written before the option existed) counts as the value
        those runs used (`_IDENTITY_DEFAULTS`, e.g. ``weight_sampler=dirichlet``), else as missing; a
        run started with a non-default value is never resumed under the default.

        Args:
            saved: The run directory's ``config.json``.

        Returns:
            ``{field: (saved value, this config's value)}`` for each field that differs; empty to resume.
        """
        return {
            key: (saved.get(key, _IDENTITY_DEFAULTS.get(key)), value)
            for key, value in self.identity().items()
            if saved.get(key, _IDENTITY_DEFAULTS.get(key)) != value
        }


_NOT_IDENTITY = (
    "out",
    "device",
    "threads",
    "sample_threads",
    "logger",
    "steps",
    "save_every",
    "warmup_save_every",
    "keep_steps",
    "eval_tasks",
    "eval_samples",
    "eval_seeds",
)
"""Options a run may change when it is resumed (evaluations are keyed by their own settings)."""

_IDENTITY_DEFAULTS: dict[str, Any] = {"weight_sampler": "dirichlet", "warmup_demos": 1}
"""What a run saved before an identity option existed used (its config.json lacks the key)."""


def parse_overrides(argv: list[str]) -> TrainConfig:
    """Build a config from ``key=value`` arguments (``env.<key>=<value>`` goes to the env's constructor).

    ``config=runs/x/config.json`` replays a saved run's options; arguments after it override them.

    Raises:
        vpo_core.cli_config.HelpRequested: For ``--help``.
        vpo_core.cli_config.ConfigError: A one-line message naming the bad option and the fix.
    """
    return parse_config(
        TrainConfig,
        argv,
        prog="vpo train [engine=local]",
        description="Warm-up, RL and evaluation on one machine (the local engine).",
        passthrough={"env": "env_options"},
        replay_key="config",
        replay_ignore=("data_source",),
    )
