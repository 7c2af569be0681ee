"""`EnvProfile`: what an env package declares about how it is trained and evaluated.

An env owns its domain facts: generation budgets and sampling settings (for training rollouts and for
the final evaluation), the chat-template options its prompts need, the extra metrics it wants
reported, its paper recipe for veRL and its row of the paper's collinearity table. Engines and apps read them from ``env.profile`` and hold no
env ids. An env that declares nothing gets `EnvProfile()`, the generic defaults documented below.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import KW_ONLY, dataclass, field, fields
from types import MappingProxyType
from typing import Any, Literal

from vpo_core.types import Mode

__all__ = ["OUTCOMES", "PAPER_M", "Citation", "CollinearityRow", "EnvProfile", "Generation", "VerlRecipe", "cite"]

Outcome = Literal["win", "tie", "loss"]
OUTCOMES: tuple[Outcome, ...] = ("win", "tie", "loss")
"""How the paper reads a row of its collinearity table (`CollinearityRow.outcome`)."""

PAPER_M = 3
"""The number of answers per completion in the paper's multi-answer runs."""


def _check_positive(name: str, value: Any) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ValueError(f"{name} must be a positive int, got {value!r}.")


def _frozen(mapping: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(mapping or {}))


@dataclass(frozen=True)
class Generation:
    """Sampling settings and token budgets of one use (training rollouts or final evaluation).

    Attributes:
        temperature: Sampling temperature (> 0; greedy decoding is not a sampling setting).
        top_p: Nucleus mass in (0, 1].
        max_new_tokens_single: Token budget of a single-answer completion.
        max_new_tokens_multi: Token budget of a multi-answer completion with `PAPER_M` answers; other m
            scale it linearly (``ceil(max_new_tokens_multi * m / PAPER_M)``).
    """

    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens_single: int = 512
    max_new_tokens_multi: int = 1536

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a finite number > 0, got {self.temperature!r}.")
        if not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}.")
        for name in ("max_new_tokens_single", "max_new_tokens_multi"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")

    def max_new_tokens(self, mode: Mode, m: int) -> int:
        """The token budget of one completion in `mode` with `m` answers."""
        if mode == "single":
            return self.max_new_tokens_single
        return math.ceil(self.max_new_tokens_multi * m / PAPER_M)


@dataclass(frozen=True)
class Citation:
    """Values of some `VerlRecipe` fields and the one source they all come from (see `cite`).

    Attributes:
        source: Where the values come from (paper section or authors' script).
        values: Field name -> value.
    """

    source: str
    values: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.source, str) or not self.source:
            raise ValueError(f"a citation needs a non-empty source, got {self.source!r}.")
        if not self.values:
            raise ValueError(
                f"the citation {self.source!r} names no values; pass them as keywords: cite(source, key=value)."
            )
        object.__setattr__(self, "values", _frozen(self.values))


def cite(source: str, /, **values: Any) -> Citation:
    """Recipe values that come from one source: ``cite('paper, appendix "X"', train_batch=64, mini_batch=32)``."""
    return Citation(source, values)


@dataclass(frozen=True)
class VerlRecipe:
    """The paper's veRL settings of one domain (values that differ between domains).

    Values shared by every domain (optimiser, clip, KL, n = 8, ...) live in the veRL adapter.

    Attributes:
        model: Hugging Face id of the policy model.
        n_gpus: GPUs per node in the paper's runs.
        train_batch: Prompts per step (``data.train_batch_size``).
        mini_batch: PPO mini-batch in prompts.
        micro_batch: Micro-batch per GPU.
        prompt_length: ``data.max_prompt_length``.
        response_single: ``data.max_response_length`` of single-answer methods.
        response_multi: ``data.max_response_length`` of multi-answer methods.
        epochs: ``trainer.total_epochs``.
        extra_overrides: Further Hydra overrides of this domain, verbatim.
        sources: Where each value comes from (field name -> paper section or authors' script).
        prompt_length_multi: ``data.max_prompt_length`` of multi-answer methods, whose prompts carry the
            m-answer instruction (default: `prompt_length`).
        prompt_length_goal: ``data.max_prompt_length`` of goal-conditioned GRPO, whose prompts carry the
            weight suffix (default: `prompt_length`).
        methods: The methods the paper trained on this domain (documentation and tests; every method
            composes on every domain).
        response_multi_m: The m that `response_multi` was set for; other m scale it linearly
            (default `PAPER_M`).
    """

    model: str
    n_gpus: int
    train_batch: int
    mini_batch: int
    micro_batch: int
    prompt_length: int
    response_single: int
    response_multi: int
    epochs: int
    extra_overrides: tuple[str, ...] = ()
    sources: Mapping[str, str] = field(default_factory=dict)
    prompt_length_multi: int | None = None
    prompt_length_goal: int | None = None
    methods: tuple[str, ...] = ()
    response_multi_m: int = PAPER_M

    def __post_init__(self) -> None:
        object.__setattr__(self, "sources", _frozen(self.sources))
        object.__setattr__(self, "extra_overrides", tuple(self.extra_overrides))
        object.__setattr__(self, "methods", tuple(self.methods))
        if not isinstance(self.model, str) or not self.model:
            raise ValueError(f"model must be a non-empty Hugging Face id or path, got {self.model!r}.")
        for name in (
            "n_gpus",
            "train_batch",
            "mini_batch",
            "micro_batch",
            "prompt_length",
            "response_single",
            "response_multi",
            "epochs",
            "response_multi_m",
        ):
            _check_positive(name, getattr(self, name))
        for name in ("prompt_length_multi", "prompt_length_goal"):
            if getattr(self, name) is not None:
                _check_positive(name, getattr(self, name))
        if self.train_batch % self.mini_batch:
            raise ValueError(
                f"train_batch ({self.train_batch}) must be a multiple of mini_batch ({self.mini_batch}) "
                "(veRL takes train_batch / mini_batch optimiser steps per generation)."
            )
        unknown = set(self.sources) - {f.name for f in fields(self)}
        if unknown:
            raise ValueError(f"sources name unknown fields {sorted(unknown)}; use VerlRecipe field names.")

    @classmethod
    def cited(cls, *citations: Citation, **uncited: Any) -> VerlRecipe:
        """A recipe whose values are given with their sources, each value beside the source it comes from.

        ``VerlRecipe.cited(cite(s1, model=...), cite(s2, train_batch=..., mini_batch=...))`` equals
        ``VerlRecipe(model=..., train_batch=..., mini_batch=..., sources={"model": s1, "train_batch": s2,
        "mini_batch": s2})``.

        Args:
            *citations: The cited values (see `cite`); each field at most once.
            **uncited: Fields given without a source (e.g. ``extra_overrides``); not ``sources``.

        Raises:
            ValueError: If a field is given twice, or `uncited` names ``sources``.
            TypeError: If a field name is not a `VerlRecipe` field.
        """
        if "sources" in uncited:
            raise ValueError("VerlRecipe.cited builds sources from the citations; cite each value instead.")
        values: dict[str, Any] = dict(uncited)
        sources: dict[str, str] = {}
        for citation in citations:
            twice = sorted(set(citation.values) & set(values))
            if twice:
                raise ValueError(f"recipe fields {twice} are given twice; give each once, with its one source.")
            values.update(citation.values)
            sources.update(dict.fromkeys(citation.values, citation.source))
        return cls(**values, sources=sources)

    def prompt_length_for(self, mode: Mode, *, goal_prompt: bool = False) -> int:
        """``data.max_prompt_length`` of a method with prompt `mode` (and the goal suffix if `goal_prompt`)."""
        if goal_prompt:
            return self.prompt_length_goal or self.prompt_length
        if mode == "multi":
            return self.prompt_length_multi or self.prompt_length
        return self.prompt_length

    def response_length_for(self, mode: Mode, m: int) -> int:
        """``data.max_response_length`` of one completion in `mode` with `m` answers."""
        if mode == "single":
            return self.response_single
        return math.ceil(self.response_multi * m / self.response_multi_m)


@dataclass(frozen=True)
class CollinearityRow:
    """A domain's row of the paper's ρ̄-vs-best@16 table, as printed.

    The table of the appendix "Reward Collinearity Predicts When VPO Helps" gives, per domain, the
    on-policy ρ̄ and best@16 (under w*) of the VPO and the GRPO checkpoints. The collinearity diagnostic
    (`vpo_engines.diagnose`, ``vpo diagnose paper=true``) prints the rows of the installed envs above the
    diagnosed env's own row. The printed Δ comes from unrounded best@16, so it can differ from the
    difference of the rounded columns.

    Attributes:
        position: The row's place in the paper's table (1 = first); the diagnostic orders the rows by it.
        domain: The paper's name of the domain (the table's "Domain" cell).
        dims: The table's "reward dims" cell, e.g. ``4 reward feats (D=4)``.
        rho_vpo: ρ̄ of the VPO checkpoint's pool.
        rho_grpo: ρ̄ of the GRPO checkpoint's pool.
        best_vpo: best@16 of the VPO checkpoint.
        best_grpo: best@16 of the GRPO checkpoint.
        delta: Δ = best@16 VPO − best@16 GRPO, as printed.
        source: Where the row is printed.
        outcome: How the paper reads the row: ``"win"`` (VPO wins best@16), ``"tie"`` or ``"loss"``;
            None (the default) reads it from the sign of `delta` (0 is a tie). A row whose small Δ
            the paper calls a tie declares ``"tie"``. The diagnostic's verdict cites the rows in a
            ρ̄ band with their outcomes. Never None after construction.
    """

    position: int
    domain: str
    dims: str
    rho_vpo: float
    rho_grpo: float
    best_vpo: float
    best_grpo: float
    delta: float
    _: KW_ONLY  # the printed columns above may be given in order; these two only by name
    source: str = 'paper, appendix "Reward Collinearity Predicts When VPO Helps" (table of ρ̄ and best@16)'
    outcome: Outcome | None = None

    def __post_init__(self) -> None:
        _check_positive("position", self.position)
        for name in ("domain", "dims", "source"):
            if not isinstance(getattr(self, name), str) or not getattr(self, name):
                raise ValueError(f"{name} must be a non-empty string, got {getattr(self, name)!r}.")
        for name in ("rho_vpo", "rho_grpo", "best_vpo", "best_grpo", "delta"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{name} must be a finite number, got {value!r}.")
        for name in ("rho_vpo", "rho_grpo"):
            if not -1 <= getattr(self, name) <= 1:
                raise ValueError(f"{name} is a mean correlation in [-1, 1], got {getattr(self, name)!r}.")
        if self.outcome is None:
            object.__setattr__(self, "outcome", "win" if self.delta > 0 else "loss" if self.delta < 0 else "tie")
        elif self.outcome not in OUTCOMES:
            raise ValueError(f"outcome must be one of {OUTCOMES} (or None: the sign of delta), got {self.outcome!r}.")


@dataclass(frozen=True)
class EnvProfile:
    """How an env is trained and evaluated; generic defaults where the env declares nothing.

    Attributes:
        train: Generation settings of training rollouts (default: T = 1.0, top-p 1.0, 512 / 1536 tokens).
        eval: Generation settings of the final evaluation (default: T = 0.7, top-p 1.0, as `train`'s budgets).
        eval_samples: Completions per task in the final evaluation (default 30).
        eval_seeds: Sampling seeds the final evaluation averages over (default 1).
        chat_template_kwargs: Keyword arguments of the tokenizer's chat template for the paper's
            model (for Qwen3: ``{"enable_thinking": False}``); default none.
        report_dims: Reward dimensions (by `RewardSpec` name) whose own best@k is reported beside
            the w*-score's (e.g. an answer-quality dimension); default none.
        recipe: The paper's veRL settings, or None for an env outside the paper (the veRL adapter
            then uses its documented generic defaults).
        collinearity: The domain's row of the paper's ρ̄-vs-best@16 table, or None (a domain outside
            that table).
    """

    train: Generation = field(default_factory=Generation)
    eval: Generation = field(default_factory=lambda: Generation(temperature=0.7))
    eval_samples: int = 30
    eval_seeds: int = 1
    chat_template_kwargs: Mapping[str, Any] = field(default_factory=dict)
    report_dims: tuple[str, ...] = ()
    recipe: VerlRecipe | None = None
    collinearity: CollinearityRow | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "chat_template_kwargs", _frozen(self.chat_template_kwargs))
        for name in ("eval_samples", "eval_seeds"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}.")

    @classmethod
    def from_recipe(
        cls, recipe: VerlRecipe, /, *, train_temperature: float = 1.0, train_top_p: float = 1.0, **fields: Any
    ) -> EnvProfile:
        """The profile of a paper domain: training rollouts budgeted as its veRL recipe's responses.

        Every engine then trains with the same token budgets: `train` takes the recipe's
        ``response_single`` and its multi-answer length for `PAPER_M` answers, and `recipe` is kept.

        Args:
            recipe: The domain's veRL settings.
            train_temperature: Sampling temperature of training rollouts (the paper's 1.0 by default).
            train_top_p: Nucleus mass of training rollouts (1.0 by default).
            **fields: The other `EnvProfile` fields (`eval`, `eval_samples`, ...), not `train` or `recipe`.

        Raises:
            TypeError: If `fields` names `train` or `recipe`, or a field `EnvProfile` does not have.
        """
        clash = {"train", "recipe"} & set(fields)
        if clash:
            raise TypeError(f"from_recipe sets {sorted(clash)} from the recipe; pass the other EnvProfile fields.")
        train = Generation(
            temperature=train_temperature,
            top_p=train_top_p,
            max_new_tokens_single=recipe.response_single,
            max_new_tokens_multi=recipe.response_length_for("multi", PAPER_M),
        )
        return cls(train=train, recipe=recipe, **fields)
