"""Plain records shared by every environment: tasks, parsed candidates, chat messages and outcome tables."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypedDict, TypeVar

import numpy as np
from numpy.typing import NDArray

__all__ = ["Candidate", "Message", "Mode", "OutcomeTable", "Task"]

P = TypeVar("P")
A = TypeVar("A")

Mode = Literal["single", "multi"]
"""Prompt mode: one answer per completion, or m numbered answers in one completion."""


class Message(TypedDict):
    """One chat message, in the format of Hugging Face chat templates and veRL prompts."""

    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Task(Generic[P]):
    """One prompt of an environment's split.

    Attributes:
        id: Stable identifier, unique across the env's splits (e.g. ``"maze-v1/test/0"``).
        split: The split this task belongs to (e.g. ``"train"``).
        index: Position inside the split.
        payload: Everything the env needs to render and score the task (domain-specific).
        metadata: Information for logging and grouping, never used for scoring.
    """

    id: str
    split: str
    index: int
    payload: P
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Candidate(Generic[A]):
    """One parsed answer of a completion.

    Attributes:
        index: Position of the candidate in the completion (0-based; always 0 in single mode).
        text: The raw text the answer was parsed from ("" if the completion had none).
        answer: The parsed answer, or None when nothing parseable was found (scores the env's floor).
        error: Why parsing failed, when it did.
    """

    index: int
    text: str
    answer: A | None
    error: str | None = None


@dataclass(frozen=True)
class OutcomeTable:
    """The enumerated outcomes of one task (`TextEnv.outcome_table`; the input of vpo-lab's tabular study).

    Attributes:
        task_id: The task's id.
        rewards: One reward vector per outcome, shape (n, d).
        valid: Whether each outcome is a valid answer (an invalid one scores the env's floor), shape (n,).
        pareto: Whether each outcome is Pareto-optimal among the valid ones, shape (n,).
        effort: A domain measure >= 0 of how far each outcome is from the most direct valid answer
            (maze: treasure tiles collected), shape (n,); 0 for invalid outcomes. Starts use it to make
            demanding outcomes rare.
        texts: One answer text per outcome (a completion body that the env scores to `rewards`).
    """

    task_id: str
    rewards: NDArray[np.float64]
    valid: NDArray[np.bool_]
    pareto: NDArray[np.bool_]
    effort: NDArray[np.float64]
    texts: tuple[str, ...]

    def __post_init__(self) -> None:
        r = np.asarray(self.rewards, dtype=np.float64)
        if r.ndim != 2 or r.shape[0] < 1 or r.shape[1] < 1:
            raise ValueError(f"rewards must have shape (n outcomes, d) with n, d >= 1, got {r.shape}.")
        if not np.all(np.isfinite(r)):
            raise ValueError(f"rewards of task {self.task_id!r} contain NaN or inf.")
        n = r.shape[0]
        for name in ("valid", "pareto", "effort"):
            if np.shape(getattr(self, name)) != (n,):
                raise ValueError(
                    f"{name} must have shape ({n},) (one entry per outcome), got {np.shape(getattr(self, name))}."
                )
        if len(self.texts) != n:
            raise ValueError(f"texts must hold one answer per outcome ({n}), got {len(self.texts)}.")
        effort = np.asarray(self.effort, dtype=np.float64)
        if not np.all(np.isfinite(effort)) or np.any(effort < 0):
            raise ValueError(f"effort of task {self.task_id!r} must be finite and >= 0.")
        valid, pareto = np.asarray(self.valid, dtype=bool), np.asarray(self.pareto, dtype=bool)
        if not valid.any():
            raise ValueError(f"task {self.task_id!r} has no valid outcome; a tabular study needs at least one.")
        if not pareto.any():
            raise ValueError(
                f"task {self.task_id!r} marks no outcome as Pareto-optimal; mark the valid non-dominated ones."
            )
        if np.any(pareto & ~valid):
            raise ValueError(f"task {self.task_id!r} marks an invalid outcome as Pareto-optimal.")
        object.__setattr__(self, "rewards", r)
        object.__setattr__(self, "valid", valid)
        object.__setattr__(self, "pareto", pareto)
        object.__setattr__(self, "effort", effort)
