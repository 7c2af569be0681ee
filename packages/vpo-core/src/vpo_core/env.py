"""`TextEnv`: the protocol every domain package implements.

An environment turns a task into chat messages, parses a completion into exactly m candidates, and
scores each candidate with a vector reward. It knows nothing of engines, weights or sets: best-of-m,
de-duplication policy, diversity and advantages live in vpo-core.
"""

from __future__ import annotations

import dataclasses
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core.methods import check_mode_m
from vpo_core.multi_answer import dedupe_reward_rows
from vpo_core.profile import EnvProfile
from vpo_core.spec import RewardSpec
from vpo_core.types import Candidate, Message, Mode, OutcomeTable, Task

__all__ = ["ScoredCompletion", "TextEnv", "goal_suffix"]

P = TypeVar("P")
A = TypeVar("A")


def goal_suffix(spec: RewardSpec, weights: ArrayLike) -> str:
    """The paper's goal-conditioning suffix (appendix "Goal-Conditioning Suffix").

    Args:
        spec: The reward spec whose `descriptions` name the objectives.
        weights: One weight per dimension, shape (d,).

    Returns:
        The text to append to the last user message, starting with a blank line.

    Raises:
        ValueError: If `weights` does not have shape (d,) or is not finite.
    """
    w = np.asarray(weights, dtype=np.float64)
    if w.shape != (spec.dim,) or not np.all(np.isfinite(w)):
        raise ValueError(f"goal weights must be {spec.dim} finite numbers (one per {spec.names}), got {weights!r}.")
    lines = [f"- {desc}: {float(wi):.2f}" for desc, wi in zip(spec.descriptions, w, strict=True)]
    return (
        "\n\nYour objective weights (higher = more important to optimize):\n"
        + "\n".join(lines)
        + "\n\nMaximize your weighted score."
    )


@dataclass(frozen=True)
class ScoredCompletion(Generic[A]):
    """One completion parsed once and scored once: what every engine, evaluator and CLI consumes.

    Attributes:
        candidates: The m parsed candidates.
        rewards: Their vector rewards, shape (m, d): what metrics and evaluation report.
        training_rewards: The rewards training uses, shape (m, d): in multi mode duplicates zeroed and
            moved to the end (`TextEnv.dedupe_rewards`), in single mode the same array as `rewards`.
    """

    candidates: list[Candidate[A]]
    rewards: NDArray[np.float64]
    training_rewards: NDArray[np.float64]


class TextEnv(ABC, Generic[P, A]):
    """A text environment with a vector reward.

    Subclasses set `env_id` (equal to their ``vpo.envs`` entry-point name) and `reward_spec`, declare
    their options as one frozen dataclass, `config_cls` (the reasoning-gym pattern; its fields are the
    ``env.<key>=`` options of the command lines, checked by `vpo_core.env_options`), and implement
    `_load_tasks` (or `tasks`), `_render_prompt`, `_parse` and `reward`. The constructor takes a config record or its fields
    as keywords (``vpo_core.make(env_id, **options)`` passes them through) and keeps the record as
    `config`; an env pickles as its config's fields and is rebuilt from them on unpickling (caches,
    loaded data and sandbox workers are not shipped). A subclass that sets no `config_cls` takes no
    options here and pickles as Python's default does.

    The public methods validate their arguments and enforce the protocol (exactly m candidates, one
    reward row per candidate); the underscored hooks hold the domain logic.
    """

    env_id: ClassVar[str]
    reward_spec: ClassVar[RewardSpec]
    splits: ClassVar[tuple[str, ...]] = ("train", "test")
    profile: ClassVar[EnvProfile] = EnvProfile()
    """Generation settings, metrics and veRL recipe of the env (generic defaults unless overridden)."""
    config_cls: ClassVar[type[Any] | None] = None
    """The env's options: a frozen dataclass whose ``__post_init__`` checks them (None: no options)."""
    config: Any
    """The env's options, an instance of `config_cls` (None without one)."""

    def __init__(self, config: Any = None, /, **options: Any) -> None:
        """Keep the env's config: `config` itself, or ``config_cls(**options)``.

        Args:
            config: An instance of `config_cls`, or None to build one from `options`.
            **options: The config's fields (the env's ``env.<key>=`` options).

        Raises:
            TypeError: On both a config and options, a config of another class, options the config has
                no field for, or options for an env without `config_cls`.
            ValueError: On an option the config's checks refuse.
        """
        config_cls = type(self).config_cls
        name = type(self).__name__
        if config_cls is None:
            if config is not None or options:
                raise TypeError(f"{name} takes no options (it declares no config_cls).")
        elif config is None:
            config = config_cls(**options)
        elif options:
            raise TypeError(f"{name} takes a {config_cls.__name__} or its fields as keywords, not both.")
        elif not isinstance(config, config_cls):
            raise TypeError(f"{name} takes a {config_cls.__name__}, got {type(config).__name__}.")
        self.config = config

    def __getstate__(self) -> dict[str, Any]:
        """The config's fields (without `config_cls`: the instance dict but the task cache)."""
        if type(self).config_cls is None:
            return {key: value for key, value in self.__dict__.items() if key != "_task_cache"}
        return {f.name: getattr(self.config, f.name) for f in dataclasses.fields(self.config)}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """Rebuild the env from its config's fields (without `config_cls`: restore the instance dict)."""
        if type(self).config_cls is None:
            self.__dict__.update(state)
            return
        self.__init__(**state)  # type: ignore[misc]

    # -------------------------------------------------------------------------------------- tasks
    def tasks(self, split: str) -> Sequence[Task[P]]:
        """All tasks of a split, deterministic and index-addressable, loaded once per env.

        The first call for a split checks its name and calls `_load_tasks`; later calls return the
        same object from the env's cache (never pickled: loading stays lazy, and an unpickled env
        loads again). Two threads loading one split at once may both call the hook; both get
        the first stored result.

        Args:
            split: One of `splits`.

        Returns:
            The tasks, in a fixed order; ``tasks(split)[i].index == i``.

        Raises:
            ValueError: If `split` is not one of `splits`.
        """
        if split not in self.splits:
            env_id = getattr(self, "env_id", type(self).__name__)
            raise ValueError(f"unknown {env_id} split {split!r}; choose one of {list(self.splits)}.")
        cache: dict[str, Sequence[Task[P]]] = self.__dict__.setdefault("_task_cache", {})
        if split not in cache:
            loaded = self._load_tasks(split)
            if isinstance(loaded, Mapping):
                if split not in loaded:
                    raise ValueError(
                        f"{type(self).__name__}._load_tasks({split!r}) returned the splits {list(loaded)}, "
                        f"not {split!r}; return its tasks or a mapping that holds them."
                    )
                for name, tasks in loaded.items():
                    cache.setdefault(name, tasks)
            else:
                cache.setdefault(split, loaded)
        return cache[split]

    def _load_tasks(self, split: str) -> Sequence[Task[P]] | Mapping[str, Sequence[Task[P]]]:
        """Domain hook for `tasks`: load or generate the tasks of a split (its name already checked).

        Called once per split and env (`tasks` caches the result), so it may be slow: read files,
        download, generate. Envs whose data yields every split at once (a shared shuffle) return a
        mapping of split name to tasks; the cache keeps them all and the hook is not called again.

        Args:
            split: One of `splits`.

        Returns:
            The split's tasks in a fixed order with ``[i].index == i``, or a mapping that holds them
            under `split` (and other splits' tasks under their names).
        """
        raise NotImplementedError(f"{type(self).__name__} implements neither _load_tasks(split) nor tasks(split).")

    # ----------------------------------------------------------------------------------- abstract
    @abstractmethod
    def _render_prompt(self, task: Task[P], mode: Mode, m: int) -> list[Message]:
        """Domain hook for `render_prompt` (arguments already validated)."""

    @abstractmethod
    def _parse(self, task: Task[P], completion: str, mode: Mode, m: int) -> list[Candidate[A]]:
        """Domain hook for `parse` (arguments already validated). Must never raise."""

    @abstractmethod
    def reward(self, task: Task[P], candidate: Candidate[A]) -> NDArray[np.float64]:
        """The vector reward of one candidate.

        Args:
            task: The task.
            candidate: A candidate returned by `parse` for this task.

        Returns:
            The reward, shape (d,), finite and inside the spec's bounds.
        """

    # ------------------------------------------------------------------------------ overridable
    def spec_for(self, task: Task[P]) -> RewardSpec:
        """The reward spec of one task (override where d varies per task, as in env-lcb)."""
        return self.reward_spec

    def reference_completion(self, task: Task[P], *, mode: Mode = "single", m: int = 1) -> str | None:
        """A completion that solves the task (an oracle), or None if the env has none.

        In multi mode it holds m answers; `check_env` requires it to be a success.
        """
        return None

    def answer_stop(self, *, mode: Mode = "single", m: int = 1) -> str | None:
        """The text that closes a complete answer in this prompt mode, or None (the default).

        Samplers that honour it (the local engine's transformers model, `stop_at_answer=`) end a
        completion there: whatever a policy writes after its last answer never reaches the parser,
        which ignores it anyway, so stopping changes no score and saves the tokens. Override it where
        the answer format has a fixed last closing tag (e.g. ``</answer>`` in single mode).
        """
        return None

    def data_source(self) -> dict[str, Any]:
        """Where the env's data comes from, recorded in each run's config (dataset envs override it).

        Returns:
            A JSON-ready dict (Hub id, revision, resolved commit, local files and their sha256, ...);
            empty for envs that generate their tasks.
        """
        return {}

    def demonstration(
        self, task: Task[P], *, mode: Mode = "single", m: int = 1, rng: np.random.Generator | None = None
    ) -> str | None:
        """One complete demonstration completion in the env's own format, for a supervised warm start.

        Engines call this and never build completions themselves. The default is
        `reference_completion`; envs with many valid answers override it to draw one with `rng`.

        Returns:
            The completion text, or None if the env has no demonstration for this task.
        """
        return self.reference_completion(task, mode=mode, m=m)

    def pareto_front(self, task: Task[P]) -> NDArray[np.float64] | None:
        """The task's Pareto-optimal reward vectors, shape (p, d), or None where the env cannot enumerate them.

        Envs with an exact solver (maze) override it; pool metrics such as "Pareto points covered" need it.
        """
        return None

    def outcome_table(self, task: Task[P], *, invalid: int = 4) -> OutcomeTable | None:
        """Every distinct outcome of the task with an answer text for each, or None (the default).

        Envs whose outcomes can be enumerated override it for the tabular mechanism study
        (`vpo_lab.tabular`): one answer per achievable reward vector plus `invalid` answers that
        score the env's floor; ``score`` of each answer text must give its stored reward.

        Args:
            task: The task.
            invalid: Number of invalid answers to include.
        """
        return None

    def dedup_key(self, task: Task[P], candidate: Candidate[A]) -> Hashable | None:
        """Key under which duplicate candidates collapse in training (multi mode).

        Returns None to de-duplicate by reward vector. Override it where two different texts are the same
        answer to the reward (e.g. a route written with a detour that changes nothing, or a reply that
        differs only in punctuation): candidates with equal keys are duplicates.
        """
        return None

    def rewards(self, task: Task[P], candidates: Sequence[Candidate[A]]) -> NDArray[np.float64]:
        """Vector rewards of several candidates (env-lcb batches them).

        Args:
            task: The task.
            candidates: Candidates from `parse`, length k.

        Returns:
            Rewards, shape (k, d).
        """
        d = self.spec_for(task).dim
        if not candidates:
            return np.zeros((0, d), dtype=np.float64)
        return np.stack([np.asarray(self.reward(task, c), dtype=np.float64) for c in candidates]).reshape(-1, d)

    def is_success(self, rewards: ArrayLike, task: Task[P] | None = None) -> NDArray[np.bool_]:
        """Whether reward vectors count as solving the task (for pass@k).

        By default the w*-scalar must be at its maximum.

        Args:
            rewards: Reward vectors, shape (..., d).
            task: The task (needed where the spec varies per task).

        Returns:
            Booleans, shape (...).
        """
        spec = self.reward_spec if task is None else self.spec_for(task)
        return spec.scalarize(rewards) >= spec.max_scalar() - 1e-9

    # ---------------------------------------------------------------------------------- public
    def render_prompt(
        self,
        task: Task[P],
        *,
        mode: Mode = "single",
        m: int = 1,
        goal_weights: ArrayLike | None = None,
    ) -> list[Message]:
        """Chat messages that pose the task.

        Args:
            task: The task.
            mode: ``"single"`` (one answer) or ``"multi"`` (m answers in numbered tags).
            m: Number of answers asked for; must be 1 in single mode.
            goal_weights: If given, shape (d,): the goal-conditioning suffix with these weights is
                appended to the last user message (the goal-conditioned GRPO baseline).

        Returns:
            The messages, ending with a user message.
        """
        _check_mode(mode, m)
        messages = [Message(role=msg["role"], content=msg["content"]) for msg in self._render_prompt(task, mode, m)]
        if goal_weights is not None:
            suffix = goal_suffix(self.spec_for(task), goal_weights)
            last = max(i for i, msg in enumerate(messages) if msg["role"] == "user")
            messages[last] = Message(role="user", content=messages[last]["content"] + suffix)
        return messages

    def parse(self, task: Task[P], completion: str, *, mode: Mode = "single", m: int = 1) -> list[Candidate[A]]:
        """Parse a completion into exactly m candidates; never raises on any string.

        Args:
            task: The task.
            completion: The model's response text.
            mode: Prompt mode the completion answers.
            m: Number of answers.

        Returns:
            Exactly m candidates (missing ones have ``answer=None``).
        """
        _check_mode(mode, m)
        if not isinstance(completion, str):
            raise TypeError(f"completion must be a str, got {type(completion).__name__}.")
        candidates = list(self._parse(task, completion, mode, m))[:m]
        while len(candidates) < m:
            candidates.append(Candidate(index=len(candidates), text="", answer=None, error="missing"))
        return candidates

    def score(self, task: Task[P], completion: str, *, mode: Mode = "single", m: int = 1) -> NDArray[np.float64]:
        """Parse and score a completion.

        Returns:
            Rewards of its m candidates, shape (m, d).
        """
        return self.score_completion(task, completion, mode=mode, m=m).rewards

    def score_completion(
        self, task: Task[P], completion: str, *, mode: Mode = "single", m: int = 1
    ) -> ScoredCompletion[A]:
        """The one scoring step of a rollout: parse once, call `rewards` once, de-duplicate those rows.

        Every consumer (the local engine, the veRL reward manager, evaluation, the env CLIs, search)
        scores through this method, so an expensive reward (a sandbox run, a reward model) is computed
        once per candidate.

        Args:
            task: The task.
            completion: The whole assistant turn (any pre-fill of the chat template included).
            mode: Prompt mode the completion answers.
            m: Number of answers.

        Returns:
            The candidates, their rewards (m, d) and training rewards (m, d).
        """
        candidates = self.parse(task, completion, mode=mode, m=m)
        raw = np.asarray(self.rewards(task, candidates), dtype=np.float64)
        train = self.dedupe_rewards(task, candidates, raw) if mode == "multi" else raw
        return ScoredCompletion(candidates=candidates, rewards=raw, training_rewards=train)

    def dedupe_rewards(
        self, task: Task[P], candidates: Sequence[Candidate[A]], rewards: ArrayLike
    ) -> NDArray[np.float64]:
        """Already computed rewards with duplicates zeroed (no reward is recomputed).

        Duplicates (by `dedup_key`, or by reward vector where it returns None) are replaced by zero
        rows moved to the end; the matrix keeps its k rows (the paper's de-duplicate, zero-pad).

        Args:
            task: The task.
            candidates: The k candidates.
            rewards: Their rewards from `rewards`, shape (k, d).

        Returns:
            Rewards, shape (k, d).
        """
        keys = [self.dedup_key(task, c) for c in candidates]
        return dedupe_reward_rows(np.asarray(rewards, dtype=np.float64), None if all(k is None for k in keys) else keys)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(env_id={getattr(self, 'env_id', '?')!r})"


def _check_mode(mode: Any, m: Any) -> None:
    check_mode_m(mode, m)  # the one mode/m rule (vpo_core.methods)
