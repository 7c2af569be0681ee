"""The per-problem, per-arm context that OpenEvolve's worker processes load from the state directory."""

from __future__ import annotations

import os
import pickle
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core import Mode, Task
from vpo_search.protocol import SearchableEnv, check_searchable

__all__ = ["CONTEXT_FILE", "SearchContext", "forget_context", "load_context", "register_context"]

CONTEXT_FILE = "context.pkl"


@dataclass
class SearchContext:
    """Everything a worker needs besides OpenEvolve's own config.

    Attributes:
        env: The searchable env (pickled by its configuration; data loads lazily).
        task: The problem.
        mode: Prompt mode of the arm's model (``"multi"``: m candidates in one completion; ``"single"``:
            m completions of one candidate).
        m: Candidates per search iteration.
        iterations: Target number of search iterations (successful model calls).
        seed: Seed of the model's sampling (one request seed per call is derived from it).
        max_consecutive_errors: Failed model calls in a row after which the search stops.
        arm: The arm's label.
        feedback: ``"public"`` (the search sees the env's public dimensions only) or ``"all"``.
        stop_when_solved: Whether the model is called no more once a candidate solves the problem.
        chat_template_kwargs: Chat-template options each model request sends (vLLM's extra field), or None.
    """

    env: SearchableEnv
    task: Task[Any]
    mode: Mode
    m: int
    iterations: int
    seed: int
    max_consecutive_errors: int
    arm: str
    feedback: str = "public"
    stop_when_solved: bool = True
    chat_template_kwargs: dict[str, Any] | None = None

    def save(self, root: Path) -> None:
        """Write the context to ``root/context.pkl`` (atomically).

        Raises:
            TypeError: If the env or the task cannot be pickled.
        """
        try:
            data = pickle.dumps(self)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            raise TypeError(
                f"the search runs evaluations in worker processes, so {type(self.env).__name__} and its tasks must be "
                f"picklable: {exc}"
            ) from exc
        tmp = root / f".{CONTEXT_FILE}.tmp"
        tmp.write_bytes(data)
        tmp.replace(root / CONTEXT_FILE)


_CACHE: dict[tuple[int, str], SearchContext] = {}


def load_context(root: str | os.PathLike[str]) -> SearchContext:
    """The context of a state directory, loaded once per process.

    The cache is keyed by the process id too: a forked child must not reuse its parent's env, whose
    sandbox threads and pipes do not exist in the child.
    """
    key = (os.getpid(), str(Path(root).resolve()))
    if key not in _CACHE:
        with open(Path(root) / CONTEXT_FILE, "rb") as handle:
            context = pickle.load(handle)  # written by this package into the run's own state directory
        check_searchable(context.env)
        _CACHE[key] = context
    return _CACHE[key]


def register_context(root: str | os.PathLike[str], context: SearchContext) -> None:
    """Use `context` (with its live env) for `root` in this process instead of unpickling a copy.

    The search's main process registers the env it already holds, so that it runs one sandbox (or
    whatever the env keeps) for every problem instead of one per problem.
    """
    _CACHE[(os.getpid(), str(Path(root).resolve()))] = context


def forget_context(root: str | os.PathLike[str]) -> None:
    """Drop this process's cached context of `root` (after the context file was rewritten)."""
    _CACHE.pop((os.getpid(), str(Path(root).resolve())), None)
