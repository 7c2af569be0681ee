"""What an environment provides so that a test-time search can evolve programs against it.

The env decides how a candidate program is evaluated and what the model is shown about it; the search
knows nothing of any domain. Any `vpo_core.TextEnv` that adds `program_language`, `initial_program` and
`evaluate_program` can be searched (env-lcb's `LcbEnv` does); `vpo_search.AnswerSearch` wraps any other. An
env may also define ``program_text(candidate) -> str | None`` to say which text of a parsed candidate is
its program (default: `program_of`), and ``public_dimensions(task) -> Sequence[int]``: the dimensions
(for LiveCodeBench, the tests) whose results the search may show and select on. The others are
hidden: they score the final answer, and by default nothing about them reaches the search (its score,
success metric and feedback), so that a program cannot learn hidden answers across iterations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core import Candidate, Message, Mode, RewardSpec, Task

__all__ = [
    "ProgramEvaluation",
    "SearchableEnv",
    "candidate_program",
    "check_searchable",
    "evaluate",
    "program_of",
    "visible_dimensions",
]


@runtime_checkable
class SearchableEnv(Protocol):
    """A `vpo_core.TextEnv` whose answers are programs that the search can evolve.

    Attributes:
        env_id: The env's registry id.
        program_language: Fence language of its programs (``"python"``), used in the search's prompts.
    """

    @property
    def env_id(self) -> str:
        """The env's registry id (read-only: a property or a plain attribute)."""
        ...

    @property
    def program_language(self) -> str:
        """Fence language of its programs (read-only: a property or a plain attribute)."""
        ...

    def tasks(self, split: str) -> Sequence[Task[Any]]:
        """The split's tasks, as `vpo_core.TextEnv.tasks` gives them."""
        ...

    def initial_program(self, task: Task[Any]) -> str:
        """The seed program of a search on `task` (a stub the model improves)."""
        ...

    def evaluate_program(self, task: Task[Any], program: str) -> tuple[ArrayLike, Sequence[str], str]:
        """Evaluate one program.

        An env with hidden dimensions accepts ``hidden_feedback=True`` (the opt-in to show their results).

        Returns:
            The vector reward, shape (d,); one verdict per dimension (e.g. per test); the feedback text
            shown to the model (it must never reveal what the env keeps hidden, such as hidden tests).
        """
        ...

    def render_prompt(self, task: Task[Any], *, mode: Mode = "single", m: int = 1) -> list[Message]:
        """The env's chat messages for the task (the search appends its evolution context)."""
        ...

    def parse(self, task: Task[Any], completion: str, *, mode: Mode = "single", m: int = 1) -> list[Candidate[Any]]:
        """Exactly m candidates of a completion."""
        ...

    def spec_for(self, task: Task[Any]) -> RewardSpec:
        """The task's reward spec (w* gives the score)."""
        ...

    def is_success(self, rewards: ArrayLike, task: Task[Any] | None = None) -> NDArray[np.bool_]:
        """Whether reward vectors solve the task (pass@k)."""
        ...


def check_searchable(env: object) -> SearchableEnv:
    """`env` as a `SearchableEnv`, or a clear error naming what it lacks.

    Raises:
        TypeError: If a method or attribute of the protocol is missing.
    """
    needed = ("env_id", "program_language", "initial_program", "evaluate_program", "render_prompt", "parse")
    missing = [name for name in (*needed, "tasks", "spec_for", "is_success") if not hasattr(env, name)]
    if missing:
        raise TypeError(
            f"{type(env).__name__} cannot be searched: it lacks {', '.join(missing)}. A searchable env is a "
            "TextEnv with program_language, initial_program(task) and evaluate_program(task, program) -> "
            "(rewards (d,), verdicts, feedback); see vpo_search.SearchableEnv."
        )
    return env  # type: ignore[return-value]


@dataclass(frozen=True)
class ProgramEvaluation:
    """One evaluated program.

    Attributes:
        rewards: The vector reward, shape (d,).
        verdicts: One verdict per dimension.
        feedback: What the model is shown.
        score: The w*-scalar divided by its maximum (in [0, 1] for rewards inside the spec's bounds), over
            every dimension: what the final answer is scored by.
        success: Whether the program solves the task (every dimension).
        search_score: The same normalized w*-scalar over the dimensions the search may see (the public
            ones; all of them with hidden feedback): what the search selects on and shows. 0 when no
            dimension is visible.
        search_success: Whether every visible dimension is at its maximum (the success over all
            dimensions when all are visible; False when none is).
    """

    rewards: NDArray[np.float64]
    verdicts: tuple[str, ...]
    feedback: str
    score: float
    success: bool
    search_score: float
    search_success: bool


def visible_dimensions(env: SearchableEnv, task: Task[Any], dim: int, *, hidden_feedback: bool = False) -> list[int]:
    """The dimensions a search may see: the env's ``public_dimensions``, or all without that hook or with hidden feedback.

    Raises:
        TypeError: If the hook returns something other than distinct indices in [0, dim).
    """
    hook = getattr(env, "public_dimensions", None)
    if hidden_feedback or not callable(hook):
        return list(range(dim))
    public = [int(i) for i in hook(task)]
    if len(set(public)) != len(public) or any(not 0 <= i < dim for i in public):
        raise TypeError(f"{env.env_id}: public_dimensions must be distinct indices in [0, {dim}), got {public!r:.200}.")
    return sorted(public)


def evaluate(env: SearchableEnv, task: Task[Any], program: str, *, hidden_feedback: bool = False) -> ProgramEvaluation:
    """Evaluate a program through the env and check what it returns.

    Args:
        env: The env.
        task: The task.
        program: The program.
        hidden_feedback: Let the search see the hidden dimensions (their verdicts in the feedback, and in
            the search score); passed on to the env's ``evaluate_program`` only when True.

    Raises:
        TypeError: If the env returns something other than (rewards (d,), d verdicts, feedback text), or
            does not take ``hidden_feedback`` when it is asked for.
    """
    if hidden_feedback:
        try:
            raw = env.evaluate_program(task, program, hidden_feedback=True)  # type: ignore[call-arg]
        except TypeError as exc:
            if "hidden_feedback" not in str(exc):
                raise
            raise TypeError(
                f"{env.env_id}: evaluate_program takes no hidden_feedback option, so feedback=all is not available "
                "for it; use feedback=public."
            ) from None
    else:
        raw = env.evaluate_program(task, program)
    if not isinstance(raw, tuple) or len(raw) != 3:
        raise TypeError(f"{env.env_id}: evaluate_program must return (rewards, verdicts, feedback), got {raw!r:.200}.")
    rewards, verdicts, feedback = raw
    spec = env.spec_for(task)
    r = np.asarray(rewards, dtype=np.float64)
    if r.shape != (spec.dim,) or not np.all(np.isfinite(r)):
        raise TypeError(f"{env.env_id}: evaluate_program's rewards must be {spec.dim} finite numbers, got {r!r:.200}.")
    if isinstance(verdicts, str) or len(verdicts) != spec.dim or not all(isinstance(v, str) for v in verdicts):
        raise TypeError(f"{env.env_id}: evaluate_program must give {spec.dim} string verdicts, got {verdicts!r:.200}.")
    if not isinstance(feedback, str):
        raise TypeError(f"{env.env_id}: evaluate_program's feedback must be text, got {type(feedback).__name__}.")
    top = spec.max_scalar()
    score = float(spec.scalarize(r)) / top if top > 0 else float(spec.scalarize(r))
    success = bool(env.is_success(r, task))
    visible = visible_dimensions(env, task, spec.dim, hidden_feedback=hidden_feedback)
    if len(visible) == spec.dim:
        search_score, search_success = score, success
    elif not visible:
        search_score, search_success = 0.0, False
    else:
        mask = np.zeros(spec.dim)
        mask[visible] = 1.0
        w = spec.w_star_array * mask
        top_visible = spec.max_scalar(w)
        value = float(spec.scalarize(r, w))
        search_score = value / top_visible if top_visible > 0 else value
        search_success = bool(np.all(r[visible] >= spec.high_array[visible]))
    return ProgramEvaluation(r, tuple(verdicts), feedback, score, success, search_score, search_success)


def program_of(candidate: Candidate[Any]) -> str | None:
    """The program text of a parsed candidate: its answer when that is text, else its raw text; None if empty."""
    if candidate.answer is None:
        return None
    program = candidate.answer if isinstance(candidate.answer, str) else candidate.text
    program = program.strip()
    return program or None


def candidate_program(env: SearchableEnv, candidate: Candidate[Any]) -> str | None:
    """The program of a parsed candidate: the env's ``program_text`` when it has one, else `program_of`."""
    hook = getattr(env, "program_text", None)
    return hook(candidate) if callable(hook) else program_of(candidate)
