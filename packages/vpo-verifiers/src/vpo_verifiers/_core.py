"""What the verifiers taskset needs from vpo-core, free of verifiers: envs by id, and named rewards.

Everything here runs without verifiers installed (the main venv's tests import it); `vpo_verifiers.taskset`
wraps it in verifiers' classes.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from vpo_core.env import TextEnv
from vpo_core.methods import check_mode_m
from vpo_core.registry import make, resolve_env_class
from vpo_core.spec import RewardSpec
from vpo_core.types import Mode, Task

__all__ = [
    "SET_REWARDS",
    "EnvHandle",
    "SetReward",
    "VPOScore",
    "check_taskset_options",
    "env_handle",
    "named_rewards",
    "score_reply",
]

SetReward = Literal["best", "max"]
"""How a completion's (m, d) reward matrix becomes one named reward per dimension (m = 1: both are its one row).

- ``"best"`` (default): the reward vector of the answer with the highest w*-score (the first on ties), so the
  weighted total verifiers reports (sum of weight x reward) is best-of-m under w*, the set's w*-reward, and the
  named rewards are one vector an answer actually achieved.
- ``"max"``: each dimension's best over the m answers (the set's ideal point); its weighted total bounds the best
  answer's w*-score from above and equals it only when one answer is best on every dimension.
"""
SET_REWARDS: tuple[SetReward, ...] = ("best", "max")


def check_taskset_options(env: Any, options: Any, split: Any, mode: Any, m: Any, set_reward: Any) -> Mode:
    """Check a taskset's settings before any task is built.

    Args:
        env: An installed env id (``"maze-v1"``), an unversioned name, or ``"package.module:Class"``.
        options: The env's options (its ``env.<key>=`` fields), a mapping of JSON values.
        split: One of the env's splits.
        mode: ``"single"``, ``"multi"``, or None (multi when m > 1, else single).
        m: Answers per completion, a positive int.
        set_reward: One of `SET_REWARDS`.

    Returns:
        The prompt mode.

    Raises:
        ValueError: Naming the bad setting and the accepted values (verifiers' config validation shows it).
    """
    if not isinstance(env, str) or not env:
        raise ValueError(f"env must be an env id such as 'maze-v1', got {env!r}.")
    try:
        cls = resolve_env_class(env)
    except (KeyError, TypeError) as error:  # the registry's unknown-id / not-an-env messages name the fix
        raise ValueError(str(error.args[0]) if error.args else repr(error)) from None
    if not isinstance(options, Mapping) or not all(isinstance(k, str) for k in options):
        raise ValueError(f"options must map the env's option names to values, got {options!r}.")
    try:
        json.dumps(dict(options), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValueError(f"options must hold JSON values (they ride on every task's wire data): {error}.") from None
    if split not in cls.splits:
        raise ValueError(f"split must be one of {cls.env_id!r}'s splits {cls.splits}, got {split!r}.")
    if mode is None:
        mode = "multi" if isinstance(m, int) and not isinstance(m, bool) and m > 1 else "single"
    check_mode_m(mode, m)
    if set_reward not in SET_REWARDS:
        raise ValueError(f"set_reward must be one of {SET_REWARDS}, got {set_reward!r}.")
    return mode


@dataclass
class EnvHandle:
    """One built env shared by every task of a taskset, and the lock that serialises its scoring.

    Attributes:
        env: The env.
        lock: Held while the env parses and scores: envs are not promised to be thread-safe, and verifiers
            scores concurrent rollouts, each in a worker thread here.
    """

    env: TextEnv[Any, Any]
    lock: threading.Lock

    def task(self, split: str, index: int) -> Task[Any]:
        """The env's task `index` of `split`.

        Raises:
            IndexError: Naming the split's size.
        """
        tasks = self.env.tasks(split)
        if not 0 <= index < len(tasks):
            raise IndexError(f"{self.env.env_id} has {len(tasks)} {split!r} tasks; index {index} is out of range.")
        return tasks[index]


_HANDLES: dict[tuple[str, str], EnvHandle] = {}
_HANDLES_LOCK = threading.Lock()


def env_handle(env_id: str, options: Mapping[str, Any]) -> EnvHandle:
    """The process-wide env for (id, options), built once: a taskset's tasks share it, as do re-loaded traces.

    Args:
        env_id: See `check_taskset_options`.
        options: The env's options (JSON values).

    Returns:
        The handle.
    """
    key = (env_id, json.dumps(dict(options), sort_keys=True))
    with _HANDLES_LOCK:
        handle = _HANDLES.get(key)
        if handle is None:
            handle = _HANDLES[key] = EnvHandle(env=make(env_id, **dict(options)), lock=threading.Lock())
    return handle


@dataclass(frozen=True)
class VPOScore:
    """One reply scored by its env: the named rewards verifiers records and what they come from.

    Attributes:
        names: The dimension names, shape (d,).
        weights: w*, shape (d,): the named rewards' weights.
        rewards: The m answers' reward vectors as the env scores them for evaluation, shape (m, d).
        named: The named rewards, shape (d,) (see `SetReward`).
        chosen: The answer whose vector `named` is (``"best"``), or None (``"max"``).
        parsed: Whether each answer parsed, shape (m,).
        success: Whether each answer counts as solving the task (the env's `is_success`), shape (m,).
    """

    names: tuple[str, ...]
    weights: NDArray[np.float64]
    rewards: NDArray[np.float64]
    named: NDArray[np.float64]
    chosen: int | None
    parsed: NDArray[np.bool_]
    success: NDArray[np.bool_]

    def info(self) -> dict[str, Any]:
        """A JSON-ready record for ``trace.info["vpo"]``: the whole matrix behind the named rewards."""
        return {
            "names": list(self.names),
            "w_star": self.weights.tolist(),
            "rewards": self.rewards.tolist(),
            "chosen": self.chosen,
            "parsed": self.parsed.tolist(),
            "success": self.success.tolist(),
        }

    def metrics(self) -> dict[str, float]:
        """Unweighted metrics beside the rewards.

        Returns:
            ``success`` (1.0 if any answer solves the task), ``parsed`` (the share of answers that parsed) and,
            for m > 1, ``max/<name>``: each dimension's best over the answers.
        """
        out = {"success": float(self.success.any()), "parsed": float(self.parsed.mean())}
        if self.rewards.shape[0] > 1:
            out.update({f"max/{n}": float(v) for n, v in zip(self.names, self.rewards.max(axis=0), strict=True)})
        return out


def named_rewards(
    rewards: NDArray[np.float64], spec: RewardSpec, set_reward: SetReward
) -> tuple[NDArray[np.float64], int | None]:
    """One named reward per dimension from an (m, d) matrix.

    Args:
        rewards: The answers' reward vectors, shape (m, d), m >= 1.
        spec: The task's reward spec (its w* picks the best answer).
        set_reward: ``"best"`` or ``"max"`` (see `SetReward`).

    Returns:
        The named rewards, shape (d,), and the chosen answer's index (None for ``"max"``).

    Raises:
        ValueError: If `rewards` is not an (m, d) matrix inside the spec's bounds, or `set_reward` is unknown.
    """
    r = spec.check(rewards)
    if r.ndim != 2 or r.shape[0] < 1:
        raise ValueError(f"rewards must have shape (m, {spec.dim}) with m >= 1, got {r.shape}.")
    if set_reward == "max":
        return r.max(axis=0), None
    if set_reward != "best":
        raise ValueError(f"set_reward must be one of {SET_REWARDS}, got {set_reward!r}.")
    best = int(np.argmax(spec.scalarize(r)))
    return r[best].copy(), best


def score_reply(
    handle: EnvHandle, task: Task[Any], reply: str, *, mode: Mode, m: int, set_reward: SetReward
) -> VPOScore:
    """Parse and score one reply once (`TextEnv.score_completion`), under the handle's lock.

    Args:
        handle: The env.
        task: The env's task.
        reply: The model's whole reply.
        mode: The prompt mode the reply answers.
        m: Answers asked for.
        set_reward: See `SetReward`.

    Returns:
        The score.
    """
    with handle.lock:
        scored = handle.env.score_completion(task, reply, mode=mode, m=m)
        spec = handle.env.spec_for(task)
        success = np.asarray(handle.env.is_success(scored.rewards, task), dtype=bool).reshape(m)
    named, chosen = named_rewards(scored.rewards, spec, set_reward)
    return VPOScore(
        names=spec.names,
        weights=spec.w_star_array,
        rewards=np.asarray(scored.rewards, dtype=np.float64),
        named=named,
        chosen=chosen,
        parsed=np.array([c.answer is not None for c in scored.candidates], dtype=bool),
        success=success,
    )
