"""Plain records shared by every environment: tasks, parsed candidates and chat messages."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypedDict, TypeVar

__all__ = ["Candidate", "Message", "Mode", "Task"]

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
