"""The sampling settings of one use (training rollouts or evaluation), as one record.

Every sampler takes the record (``sampler.sample(prompts, num_samples=G, settings=settings, seed=s)``, the
`vpo_core.evaluation.sampling.Sampler` signature); the token-level ``Policy.generate`` of the engines takes
its fields as keywords (``**settings.as_kwargs()``). The run resolves the record once, from its options or
else the env's profile, and passes it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import TypedDict

from vpo_core.profile import Generation
from vpo_core.types import Mode

__all__ = ["SamplingKwargs", "SamplingSettings"]


class SamplingKwargs(TypedDict):
    """The keywords of ``Policy.generate`` that `SamplingSettings` fills (also the keys of a run's stored settings)."""

    temperature: float
    top_p: float
    max_new_tokens: int


@dataclass(frozen=True, slots=True)
class SamplingSettings:
    """How the completions of one use are sampled.

    Attributes:
        temperature: Sampling temperature (> 0).
        top_p: Nucleus mass in (0, 1].
        max_new_tokens: Token budget of one completion (>= 1).
    """

    temperature: float
    top_p: float
    max_new_tokens: int

    def __post_init__(self) -> None:
        if not (math.isfinite(self.temperature) and self.temperature > 0):
            raise ValueError(f"temperature must be a finite number > 0, got {self.temperature!r}.")
        if not (math.isfinite(self.top_p) and 0 < self.top_p <= 1):
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p!r}.")
        if isinstance(self.max_new_tokens, bool) or not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be a positive int, got {self.max_new_tokens!r}.")

    @classmethod
    def resolve(
        cls,
        generation: Generation,
        *,
        mode: Mode,
        m: int,
        temperature: float | None = None,
        top_p: float | None = None,
        max_new_tokens: int | None = None,
    ) -> SamplingSettings:
        """The settings asked for, each left at None taken from a profile's `generation`.

        Args:
            generation: The env profile's settings of this use (``env.profile.train`` or ``.eval``).
            mode: Prompt mode, for the profile's token budget.
            m: Answers per completion, for the profile's token budget.
            temperature: An override of the profile's temperature.
            top_p: An override of the profile's top-p.
            max_new_tokens: An override of the profile's token budget of `mode` and `m`.
        """
        return cls(
            temperature=generation.temperature if temperature is None else temperature,
            top_p=generation.top_p if top_p is None else top_p,
            max_new_tokens=generation.max_new_tokens(mode, m) if max_new_tokens is None else int(max_new_tokens),
        )

    def with_budget(self, max_new_tokens: int) -> SamplingSettings:
        """The same settings with another token budget."""
        return dataclasses.replace(self, max_new_tokens=int(max_new_tokens))

    def as_kwargs(self) -> SamplingKwargs:
        """The keywords of ``Policy.generate`` (``temperature``, ``top_p``, ``max_new_tokens``)."""
        return {"temperature": self.temperature, "top_p": self.top_p, "max_new_tokens": self.max_new_tokens}
