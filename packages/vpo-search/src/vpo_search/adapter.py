"""Search any `TextEnv` whose answers are short texts, with the env's own reward as the evaluation.

`AnswerSearch(env)` makes an env searchable without search hooks of its own: a "program" is the text of
one answer (for the maze, a route), it is scored by the env's single-answer parser and reward, and the
feedback is the reward vector with the dimensions' descriptions. It suits envs whose single-answer
parser reads the body of one multi-answer block (the maze's does); an env with richer feedback, such
as tests, implements `SearchableEnv` itself (env-lcb does).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv

__all__ = ["AnswerSearch"]


class AnswerSearch:
    """A `SearchableEnv` view of a `TextEnv`.

    Args:
        env: The env.
        language: Fence language of the answers in the search's prompts.
    """

    def __init__(self, env: TextEnv[Any, Any], language: str = "text") -> None:
        self.env = env
        self.program_language = language

    @property
    def env_id(self) -> str:
        """The wrapped env's id."""
        return self.env.env_id

    @property
    def profile(self) -> Any:
        """The wrapped env's profile (its chat-template options reach the search's model requests)."""
        return self.env.profile

    def tasks(self, split: str) -> Sequence[Task[Any]]:
        """The wrapped env's tasks."""
        return self.env.tasks(split)

    def initial_program(self, task: Task[Any]) -> str:
        """An empty answer (it scores the env's floor)."""
        return ""

    def program_text(self, candidate: Candidate[Any]) -> str | None:
        """The raw text of a parsed answer (what the single-answer parser reads back)."""
        text = candidate.text.strip()
        return text or None

    def evaluate_program(
        self, task: Task[Any], program: str, *, hidden_feedback: bool = False
    ) -> tuple[NDArray[np.float64], list[str], str]:
        """Score one answer text with the env's single-answer parser and reward (every dimension is public).

        Returns:
            The rewards, shape (d,); ``name=value`` per dimension; the feedback (each dimension's value
            and description, and the parser's complaint if it found no answer).
        """
        scored = self.env.score_completion(task, program, mode="single", m=1)  # the engines' one scoring step
        candidate, rewards = scored.candidates[0], np.asarray(scored.rewards[0], dtype=np.float64)
        spec = self.env.spec_for(task)
        named = list(zip(spec.names, spec.descriptions, rewards, strict=True))
        verdicts = [f"{name}={value:.3g}" for name, _, value in named]
        lines = [f"{desc} ({name}): {value:.3g}" for name, desc, value in named]
        if candidate.error:
            lines.insert(0, f"The answer could not be read: {candidate.error}.")
        return rewards, verdicts, "\n".join(lines)

    def render_prompt(self, task: Task[Any], *, mode: Mode = "single", m: int = 1) -> list[Message]:
        """The wrapped env's prompt."""
        return self.env.render_prompt(task, mode=mode, m=m)

    def parse(self, task: Task[Any], completion: str, *, mode: Mode = "single", m: int = 1) -> list[Candidate[Any]]:
        """The wrapped env's parser."""
        return self.env.parse(task, completion, mode=mode, m=m)

    def spec_for(self, task: Task[Any]) -> RewardSpec:
        """The wrapped env's spec."""
        return self.env.spec_for(task)

    def is_success(self, rewards: ArrayLike, task: Task[Any] | None = None) -> NDArray[np.bool_]:
        """The wrapped env's success rule."""
        return self.env.is_success(rewards, task)
