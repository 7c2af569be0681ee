"""A gymnasium view of a text environment (needs the ``gym`` extra: ``pip install vpo-core[gym]``).

Each episode is one task and one step: `reset` returns the rendered prompt, `step` takes the model's
completion, parses it into m candidates and scores them. Following MO-Gymnasium, the scalar reward
is a scalarisation (best-of-m under w*) and the full reward matrix stays in ``info``.

gymnasium ids: an env package registers its ids (``vpo/Maze-v1``) when it is imported, because gymnasium
1.x has no plugin loader. ``gymnasium.make("env_maze:vpo/Maze-v1")`` (gymnasium's ``module:id`` form)
imports the package first; a bare ``gymnasium.make("vpo/Maze-v1")`` in a process that never imported
``env_maze`` raises ``NamespaceNotFound``.
"""

from __future__ import annotations

import string
from typing import Any

import numpy as np

from vpo_core.env import TextEnv
from vpo_core.types import Mode

__all__ = ["as_gym"]


def _gymnasium() -> Any:
    try:
        import gymnasium
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("vpo_core.gym needs gymnasium: `pip install 'vpo-core[gym]'`.") from exc
    return gymnasium


def as_gym(
    env: TextEnv[Any, Any],
    *,
    split: str = "train",
    mode: Mode = "single",
    m: int = 1,
    max_length: int = 1_000_000,
) -> Any:
    """Wrap a text env as a `gymnasium.Env` with text observations and actions.

    Args:
        env: The text environment.
        split: The split episodes draw tasks from.
        mode: Prompt mode of the observations and of parsing.
        m: Answers per completion.
        max_length: Longest prompt / completion (characters) the spaces accept.

    Returns:
        A gymnasium environment. ``reset(seed=..., options={"index": i})`` picks task i (a seeded
        uniform draw without the option); the observation is the chat transcript rendered as text and
        ``info["messages"]`` holds the messages. ``step(completion)`` returns reward = max over the m
        candidates of w*·r, ``terminated=True``, and ``info`` with ``"rewards"`` (m, d),
        ``"reward_names"`` and ``"task_id"``.
    """
    gymnasium = _gymnasium()
    return _make_gym_class(gymnasium)(env, split=split, mode=mode, m=m, max_length=max_length)


def _make_gym_class(gymnasium: Any) -> type:
    class UnicodeTextSpace(gymnasium.spaces.Space):
        """Any Python string up to `max_length` characters (gymnasium's `Text` restricts the charset)."""

        def __init__(self, max_length: int, seed: int | None = None) -> None:
            self.max_length = int(max_length)
            super().__init__(shape=None, dtype=str, seed=seed)

        def sample(self, mask: Any = None, probability: Any = None) -> str:
            length = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
            chars = self.np_random.choice(list(string.printable), size=length)
            return "".join(chars)

        def contains(self, x: Any) -> bool:
            return isinstance(x, str) and len(x) <= self.max_length

        @property
        def is_np_flattenable(self) -> bool:
            return False

        def __repr__(self) -> str:
            return f"UnicodeText(max_length={self.max_length})"

        def __eq__(self, other: object) -> bool:
            return isinstance(other, UnicodeTextSpace) and other.max_length == self.max_length

    class TextGymEnv(gymnasium.Env):
        metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

        def __init__(self, text_env: TextEnv[Any, Any], *, split: str, mode: Mode, m: int, max_length: int) -> None:
            self.text_env = text_env
            self.split = split
            self.mode = mode
            self.m = m
            self._tasks = text_env.tasks(split)
            if len(self._tasks) == 0:
                raise ValueError(f"split {split!r} of {text_env.env_id} has no tasks.")
            self.observation_space = UnicodeTextSpace(max_length)
            self.action_space = UnicodeTextSpace(max_length)
            self._task: Any = None

        def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict]:
            super().reset(seed=seed)
            if options and "index" in options:
                index = int(options["index"])
                if not 0 <= index < len(self._tasks):
                    raise ValueError(f"options['index'] must be in [0, {len(self._tasks)}), got {index}.")
            else:
                index = int(self.np_random.integers(len(self._tasks)))
            self._task = self._tasks[index]
            messages = self.text_env.render_prompt(self._task, mode=self.mode, m=self.m)
            observation = "\n\n".join(f"[{msg['role']}]\n{msg['content']}" for msg in messages)
            return observation, {"messages": messages, "task_id": self._task.id}

        def step(self, action: str) -> tuple[str, float, bool, bool, dict]:
            if self._task is None:
                raise RuntimeError("call reset() before step().")
            if not isinstance(action, str):
                raise TypeError(f"the action is the completion text (str), got {type(action).__name__}.")
            rewards = self.text_env.score(self._task, action, mode=self.mode, m=self.m)
            spec = self.text_env.spec_for(self._task)
            reward = float(np.max(spec.scalarize(rewards)))
            info = {"rewards": rewards, "reward_names": spec.names, "task_id": self._task.id}
            return "", reward, True, False, info

    return TextGymEnv
