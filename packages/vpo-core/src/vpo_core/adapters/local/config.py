"""Configuration of a local training run, parsed from ``key=value`` arguments."""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.methods import METHODS, get_method

__all__ = ["TrainConfig", "parse_overrides"]


@dataclass
class TrainConfig:
    """Everything a local run depends on (saved as ``config.json`` in the run directory).

    The defaults are the embedded default run (maze, VPO, a small locally built model, CPU, well
    under 10 minutes on 2 cores). They differ from the paper's 4B-model recipe where a tiny model
    needs it: a larger learning rate (1e-4 vs 1e-6) and far fewer prompts per step (8 vs 128).
    """

    env: str = "maze-v1"
    method: str = "vpo"
    m: int | None = None  # answers per completion; default: the method's (3 for multi, 1 for single)
    model: str | None = None  # a local HF model dir; None = build the default small model
    out: str | None = None  # run directory; default runs/<env>-<method>-seed<seed>
    seed: int = 0
    device: str = "cpu"
    threads: int = 2
    # warm-up (supervised) on the env's demonstrations, for the default model
    warmup_steps: int = 500
    warmup_batch: int = 32
    warmup_lr: float = 2e-3
    # RL (the paper's loss: PPO-clip 0.2, dual clip 3.0, token-mean, low_var_kl 1e-3, AdamW, clip 1.0)
    steps: int = 50
    prompts_per_step: int = 8
    group_size: int = 8
    lr: float = 1e-4
    weight_decay: float = 0.01
    grad_clip: float = 1.0
    clip_ratio: float = 0.2
    clip_ratio_c: float = 3.0
    kl_coef: float = 1e-3
    mini_batches: int = 2
    temperature: float = 1.0
    num_weights: int = 100
    alpha: float = 1.0
    std: str = "population"
    max_new_tokens: int | None = None  # default: enough for m routes of the env's budget
    save_every: int = 10
    # evaluation on the test split after training (and of the warmed-up model before RL)
    eval_tasks: int = 100
    eval_samples: int = 12  # candidates per task: eval_samples // m chains in multi mode
    eval_temperature: float = 0.7
    eval_top_p: float = 1.0
    eval_seeds: int = 1
    # model size of the default model
    hidden_size: int = 128
    layers: int = 3
    heads: int = 4
    vocab_size: int = 1000

    def validate(self) -> TrainConfig:
        """Check the values and fill in method-dependent defaults.

        Raises:
            ValueError: Naming the bad key and the valid choices.
        """
        method = get_method(self.method) if self.method in METHODS else None
        if method is None:
            raise ValueError(f"unknown method {self.method!r}; choose one of {sorted(METHODS)} (e.g. method=vpo).")
        if self.m is None:
            self.m = method.m
        if method.mode == "single" and self.m != 1:
            raise ValueError(f"method={self.method} is single-answer, so m must be 1 (got m={self.m}).")
        if method.mode == "multi" and self.m < 2:
            raise ValueError(f"method={self.method} writes m answers per completion; use m>=2 (got m={self.m}).")
        for name in ("steps", "prompts_per_step", "group_size", "eval_samples", "save_every", "mini_batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be >= 1, got {getattr(self, name)}.")
        if self.warmup_steps < 0 or self.eval_tasks < 0:
            raise ValueError("warmup_steps and eval_tasks must be >= 0.")
        if self.group_size < 2:
            raise ValueError("group_size must be >= 2: advantages compare rollouts within a group.")
        if self.device not in ("cpu", "cuda") and not self.device.startswith("cuda:"):
            raise ValueError(f"device must be cpu or cuda[:i], got {self.device!r}.")
        if self.std not in ("population", "unbiased"):
            raise ValueError(f"std must be population or unbiased, got {self.std!r}.")
        return self

    @property
    def mode(self) -> str:
        """Prompt mode of the method."""
        return get_method(self.method).mode

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
        for key in ("out", "device", "threads", "steps", "save_every", "eval_tasks", "eval_samples", "eval_seeds"):
            data.pop(key)
        return data


def _coerce(raw: str, kind: Any, key: str) -> Any:
    """Parse one value by its field's type (``int``, ``float``, optionally ``| None``; otherwise a string)."""
    for number, noun in ((int, "an integer"), (float, "a number")):
        if kind in (number, number | None):
            try:
                return number(raw)
            except ValueError:
                raise ValueError(f"{key} expects {noun}, got {raw!r}.") from None
    return raw


def parse_overrides(argv: list[str]) -> TrainConfig:
    """Build a config from ``key=value`` arguments.

    Raises:
        ValueError: For an argument without ``=`` or an unknown key (the message lists the keys).
    """
    config = TrainConfig()
    kinds = typing.get_type_hints(TrainConfig)
    for arg in argv:
        key, sep, raw = arg.partition("=")
        key = key.lstrip("-").replace("-", "_")
        if not sep:
            raise ValueError(f"arguments are key=value pairs, got {arg!r} (e.g. method=grpo steps=20).")
        if key not in kinds:
            raise ValueError(f"unknown option {key!r}; valid options: {', '.join(sorted(kinds))}.")
        setattr(config, key, _coerce(raw, kinds[key], key))
    return config.validate()
