"""A gymnasium view of a text environment, following MO-Gymnasium (needs the ``gym`` extra: ``pip install vpo-core[gym]``).

Each episode is one task and one step: `reset` returns the rendered prompt, `step` takes the model's
completion, parses it into m candidates and scores them.

The view follows MO-Gymnasium's contract for vector rewards (mo-gymnasium 1.3): ``step()`` returns a
*vector* reward, a float32 array of shape (d,), and ``env.unwrapped.reward_space`` is a gymnasium ``Box``
of the env's reward bounds (`RewardSpec.low`/`high`); ``env.unwrapped.reward_dim`` is d. So
MO-Gymnasium's wrappers take the env as it is::

    import mo_gymnasium as mo_gym

    env = mo_gym.make("env_maze:vpo/Maze-v1", split="test")  # or as_gym(any_text_env)
    scalar = mo_gym.wrappers.LinearReward(env, weight=env.unwrapped.w_star)  # the w* reward
    _, reward, *_, info = scalar.step(completion)  # reward = w*·r; info["vector_reward"] = r

**Multi mode** (m answers per completion) returns the *best of the m answers per dimension*: entry j of
the reward is max_i r_ij over the m candidates, the set's ideal point (shape (d,), same ``reward_space``).
It keeps every MO-Gymnasium wrapper working (they all assume a (d,) reward) and depends on no weights;
``w·reward`` is then at least the best single answer's ``w·r_i`` (equal when one answer is best in every
dimension, always so for m = 1). The (m, d) matrix of the candidates' rewards is ``info["candidate_rewards"]``,
so the paper's best-of-m under w* is ``(info["candidate_rewards"] @ info["w_star"]).max()``.

**Envs whose reward dimension varies per task** (env-lcb: one dimension per test): ``reward_space`` has
the env's ``reward_spec`` dimensions (the most a task has) and a task with fewer gets zeros in the rest,
the project's zero-padding convention. ``info["w_star"]`` (from `reset` and `step`) is the task's own w*,
padded the same way; ``LinearReward.set_weight(info["w_star"])`` after `reset` gives the task's scalar
(env-lcb: the fraction of the task's tests passed, where the env's w* divides by all 32 slots).

gymnasium ids: an env package registers its ids (``vpo/Maze-v1``) when it is imported, because gymnasium
1.x has no plugin loader. ``gymnasium.make("env_maze:vpo/Maze-v1")`` (gymnasium's ``module:id`` form)
imports the package first; a bare ``gymnasium.make("vpo/Maze-v1")`` in a process that never imported
``env_maze`` raises ``NamespaceNotFound``. ``gymnasium.make`` adds gymnasium's passive env checker, which
warns once that the reward is not a float (the vector reward); ``mo_gymnasium.make`` leaves it out.
"""

from __future__ import annotations

import string
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("vpo_core.gym needs gymnasium: `pip install 'vpo-core[gym]'`.") from exc

from vpo_core.env import TextEnv
from vpo_core.methods import check_mode_m
from vpo_core.spec import RewardSpec
from vpo_core.types import Message, Mode, Task

__all__ = ["TextGymEnv", "UnicodeTextSpace", "as_gym"]


def as_gym(
    env: TextEnv[Any, Any],
    *,
    split: str = "train",
    mode: Mode = "single",
    m: int = 1,
    max_length: int = 1_000_000,
) -> TextGymEnv:
    """Wrap a text env as a `gymnasium.Env` with text observations and actions and a vector reward.

    Args:
        env: The text environment.
        split: The split episodes draw tasks from.
        mode: Prompt mode of the observations and of parsing.
        m: Answers per completion (1 in single mode).
        max_length: Longest prompt / completion (characters) the spaces accept.

    Returns:
        A `TextGymEnv`. ``reset(seed=..., options={"index": i})`` picks task i (a seeded uniform draw
        without the option); the observation is the chat transcript rendered as text and
        ``info["messages"]`` holds the messages. ``step(completion)`` returns the vector reward, float32
        shape (d,) (single mode: the answer's rewards; multi mode: the best of the m answers per
        dimension), ``terminated=True``, and ``info`` with ``"candidate_rewards"`` (m, d) float64,
        ``"w_star"`` (d,), ``"reward_names"`` and ``"task_id"``.

    Raises:
        ValueError: If mode/m break the prompt-mode rule or the split has no tasks.
    """
    return TextGymEnv(env, split=split, mode=mode, m=m, max_length=max_length)


class UnicodeTextSpace(spaces.Space[str]):
    """Any Python string up to `max_length` characters (gymnasium's `Text` restricts the charset)."""

    def __init__(self, max_length: int, seed: int | None = None) -> None:
        self.max_length = int(max_length)
        super().__init__(shape=None, dtype=str, seed=seed)

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        """A random printable-ASCII string of at most 64 characters."""
        length = int(self.np_random.integers(0, min(self.max_length, 64) + 1))
        chars = self.np_random.choice(list(string.printable), size=length)
        return "".join(chars)

    def contains(self, x: Any) -> bool:
        """Whether `x` is a string of at most `max_length` characters."""
        return isinstance(x, str) and len(x) <= self.max_length

    @property
    def is_np_flattenable(self) -> bool:
        """Text has no flat numeric form."""
        return False

    def __repr__(self) -> str:
        return f"UnicodeText(max_length={self.max_length})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, UnicodeTextSpace) and other.max_length == self.max_length


class TextGymEnv(gymnasium.Env[str, str]):
    """A text env as a one-step gymnasium env with MO-Gymnasium's vector reward (see the module docstring).

    Attributes:
        text_env: The wrapped text env.
        reward_space: ``Box(low, high, shape=(d,), float32)`` from the env's `RewardSpec`.
        reward_dim: d.
        reward_names: Dimension names, shape (d,).
        w_star: The env's w*, float64 shape (d,): the weights of MO-Gymnasium's ``LinearReward`` that give
            the project's scalar reward.
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012

    def __init__(self, text_env: TextEnv[Any, Any], *, split: str, mode: Mode, m: int, max_length: int) -> None:
        check_mode_m(mode, m)
        self.text_env = text_env
        self.split = split
        self.mode = mode
        self.m = int(m)
        self.max_length = int(max_length)
        spec = text_env.reward_spec
        self._spec = spec
        self.reward_names: tuple[str, ...] = spec.names
        self.reward_dim = spec.dim
        self.w_star: NDArray[np.float64] = spec.w_star_array
        self.reward_space = spaces.Box(
            low=spec.low_array.astype(np.float32),
            high=spec.high_array.astype(np.float32),
            shape=(spec.dim,),
            dtype=np.float32,
        )
        self.observation_space = UnicodeTextSpace(max_length)
        self.action_space = UnicodeTextSpace(max_length)
        self._tasks: Sequence[Task[Any]] = self._load_tasks()
        self._index: int | None = None

    def _load_tasks(self) -> Sequence[Task[Any]]:
        tasks = self.text_env.tasks(self.split)
        if len(tasks) == 0:
            raise ValueError(f"split {self.split!r} of {self.text_env.env_id} has no tasks; choose another split.")
        return tasks

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        del state["_tasks"]  # rebuilt from the text env (which pickles as its config)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._tasks = self._load_tasks()

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start an episode on one task of the split.

        Args:
            seed: Seeds the task draw (gymnasium's convention).
            options: ``{"index": i}`` picks task i of the split.

        Returns:
            The rendered prompt and ``{"messages": [...], "task_id": ..., "w_star": (d,)}`` (the task's w*:
            the env's, except in an env whose dimensions vary per task).
        """
        super().reset(seed=seed)
        if options and "index" in options:
            index = int(options["index"])
            if not 0 <= index < len(self._tasks):
                raise ValueError(f"options['index'] must be in [0, {len(self._tasks)}), got {index}.")
        else:
            index = int(self.np_random.integers(len(self._tasks)))
        self._index = index
        task = self._tasks[index]
        messages: list[Message] = self.text_env.render_prompt(task, mode=self.mode, m=self.m)
        observation = "\n\n".join(f"[{msg['role']}]\n{msg['content']}" for msg in messages)
        return observation, {"messages": messages, "task_id": task.id, "w_star": self._task_w_star(task)}

    def step(self, action: str) -> tuple[str, NDArray[np.float32], bool, bool, dict[str, Any]]:
        """Score a completion: the episode's one step.

        Args:
            action: The completion text.

        Returns:
            ``("", reward, True, False, info)``: reward float32 shape (d,) (multi mode: the best of the m
            answers per dimension); info ``"candidate_rewards"`` (m, d) float64, ``"w_star"`` (d,) (the
            task's w*), ``"reward_names"`` (d,) and ``"task_id"``.
        """
        if self._index is None:
            raise RuntimeError("call reset() before step().")
        if not isinstance(action, str):
            raise TypeError(f"the action is the completion text (str), got {type(action).__name__}.")
        task = self._tasks[self._index]
        raw = np.asarray(self.text_env.score(task, action, mode=self.mode, m=self.m), dtype=np.float64)
        spec = self.text_env.spec_for(task)
        candidate_rewards = self._pad(task, spec, raw)
        reward = candidate_rewards.max(axis=0).astype(np.float32)
        info = {
            "candidate_rewards": candidate_rewards,
            "w_star": self._task_w_star(task),
            "reward_names": self.reward_names,
            "task_id": task.id,
        }
        return "", reward, True, False, info

    def _task_w_star(self, task: Task[Any]) -> NDArray[np.float64]:
        """The task's w* on the env's dimensions, shape (d,) (zeros after a task's own dimensions)."""
        spec = self.text_env.spec_for(task)
        return self._pad(task, spec, spec.w_star_array[None, :])[0]

    def _pad(self, task: Task[Any], spec: RewardSpec, rows: NDArray[np.float64]) -> NDArray[np.float64]:
        """Rows of the task's dimensions, shape (k, d_task), as rows of the env's, shape (k, d) (zeros after)."""
        d_task, d = spec.dim, self.reward_dim
        if spec is self._spec or spec.names == self.reward_names:
            return rows
        if d_task > d or spec.names != self.reward_names[:d_task]:
            env_name = type(self.text_env).__name__
            raise ValueError(
                f"{env_name}.spec_for({task.id!r}) names dimensions {spec.names!r}, which are not the first "
                f"{d_task} of {env_name}.reward_spec ({d} dimensions, the gym view's reward_space); a task's "
                "dimensions must be a prefix of the env's so that its rewards keep their place in the vector."
            )
        padded = np.zeros((rows.shape[0], d), dtype=np.float64)
        padded[:, :d_task] = rows
        return padded
