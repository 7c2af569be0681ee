"""One rollout batch, from the env's scores to the advantage: `RolloutBatch` and `score_groups`.

Every engine (local, TRL, veRL) and evaluation score their completions through `score_groups`: each
completion is parsed and scored once (`TextEnv.score_completion`), and each group keeps its own task's
reward spec (`TextEnv.spec_for`), so a batch may hold groups of different d (env-lcb: one dimension
per test). `vpo_core.advantages.compute_advantages` takes the batch with an `AdvantageConfig`.

A batch built from arrays (`RolloutBatch.of`) is what a user of the estimators alone passes:
rewards shaped (B, G, m, d), or a list of B arrays (G, m, d_b) where d differs between groups.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core.spec import RewardSpec
from vpo_core.types import Mode, Task

if TYPE_CHECKING:
    from vpo_core.env import TextEnv

__all__ = ["RolloutBatch", "regroup", "score_groups"]

Array = NDArray[np.float64]


def _groups(rewards: ArrayLike | Sequence[ArrayLike], name: str) -> tuple[tuple[Array, ...], Array | None]:
    """`rewards` as B float64 arrays (G, m, d_b), checked, and the (B, G, m, d) array they are views of (if one)."""
    dense = None
    if isinstance(rewards, np.ndarray) or not isinstance(rewards, list | tuple):
        dense = np.asarray(rewards, dtype=np.float64)
        if dense.ndim != 4:
            raise ValueError(f"{name} must have shape (B groups, G rollouts, m candidates, d dims), got {dense.shape}.")
        groups = tuple(dense)
        finite = bool(np.all(np.isfinite(dense)))
    else:
        groups = tuple(np.asarray(g, dtype=np.float64) for g in rewards)
        if any(g.ndim != 3 for g in groups):
            raise ValueError(f"ragged {name} must be a list of (G, m, d_b) arrays, one per group.")
        finite = all(np.all(np.isfinite(g)) for g in groups)
    if not groups:
        raise ValueError(f"{name} must hold at least one group (B >= 1).")
    if dense is None and len({g.shape[:2] for g in groups}) != 1:
        raise ValueError(f"every group must share G and m, got shapes {[g.shape for g in groups]}.")
    if 0 in groups[0].shape or any(0 in g.shape for g in groups):
        raise ValueError(f"{name} must have G, m and d >= 1, got shapes {sorted({g.shape for g in groups})}.")
    if not finite:
        raise ValueError(f"{name} contain NaN or inf; a reward function must return finite values.")
    return groups, dense


def _per_group(value: Any, dims: Sequence[int], name: str) -> tuple[Array, ...]:
    """One (d_b,) vector per group: `value` is one (d,) vector for all groups, or one per group ((B, d) or a list)."""
    array = None if isinstance(value, list | tuple) and len(value) and np.ndim(value[0]) else np.asarray(value)
    if array is not None and array.ndim == 1 and len(set(dims)) == 1:  # one vector for every group: checked once
        return _per_group([array], dims[:1], name) * len(dims)
    if array is not None and array.ndim == 1:
        rows: list[Any] = [array] * len(dims)
    elif array is not None and array.ndim != 2:
        raise ValueError(f"{name} must be one (d,) vector or one (d_b,) vector per group, got shape {array.shape}.")
    else:
        rows = list(value)
        if len(rows) != len(dims):
            raise ValueError(f"{name} must have one vector per group ({len(dims)}), got {len(rows)}.")
    out = []
    for b, (row, d) in enumerate(zip(rows, dims, strict=True)):
        vector = np.asarray(row, dtype=np.float64)
        if vector.shape != (d,):
            where = "" if len(set(dims)) == 1 else f"[{b}]"
            raise ValueError(f"{name}{where} must have shape ({d},) to match the rewards' d, got {vector.shape}.")
        if not np.all(np.isfinite(vector)):
            raise ValueError(f"{name} contains NaN or inf.")
        out.append(vector)
    return tuple(out)


@dataclass(frozen=True)
class RolloutBatch:
    """B groups of G rollouts, each rollout m candidates scored on its group's d_b dimensions.

    Attributes:
        rewards: The env's rewards of each group, B arrays of shape (G, m, d_b): what metrics report.
        training_rewards: The rewards training uses, B arrays (G, m, d_b): in multi mode duplicates zeroed
            and moved to the end (`TextEnv.score_completion`); else the same as `rewards`.
        w_star: Each group's fixed scalarisation, B arrays of shape (d_b,).
        keys: One key per group, length B: the group-shared weight draws are keyed by ``(seed, key)``, so a
            key that changes every step (``f"{step}:{task id}"``, veRL's uid) gives fresh weights.
        goal_weights: The weights written into each group's prompt (goal-conditioned methods), B arrays of
            shape (d_b,); None for other methods.
        lengths: Response lengths in tokens, shape (B, G), or None: gdpo's token-weighted whitening reads them.
        specs: Each group's reward spec (`TextEnv.spec_for`), B specs; None for a batch built from arrays.
        tasks: Each group's task, B tasks; None for a batch built from arrays.
        unscorable: Completions whose scoring raised or that were missing (tolerant `score_groups` only);
            their rows are zero.
        answered: How many of each rollout's m candidates the env parsed an answer from, shape (B, G);
            None for a batch built from arrays.
    """

    rewards: tuple[Array, ...]
    training_rewards: tuple[Array, ...]
    w_star: tuple[Array, ...]
    keys: tuple[Hashable, ...]
    goal_weights: tuple[Array, ...] | None = None
    lengths: Array | None = None
    specs: tuple[RewardSpec, ...] | None = None
    tasks: tuple[Task[Any], ...] | None = None
    unscorable: int = 0
    answered: NDArray[np.int64] | None = None
    dense: tuple[Array, Array] | None = field(default=None, repr=False, compare=False)
    """The (B, G, m, d) arrays that `rewards` and `training_rewards` are views of, where every group has one d."""

    def __post_init__(self) -> None:
        b = len(self.rewards)
        if self.dense is not None:
            shapes_differ = self.dense[0].shape != self.dense[1].shape or len(self.dense[0]) != b
        else:
            shapes_differ = any(t.shape != r.shape for t, r in zip(self.training_rewards, self.rewards, strict=True))
        if len(self.training_rewards) != b or shapes_differ:
            raise ValueError("training_rewards must have the shape of rewards, group by group.")
        if len(self.keys) != b:
            raise ValueError(f"keys must have one key per group ({b}), got {len(self.keys)}.")
        for name, value in (("specs", self.specs), ("tasks", self.tasks)):
            if value is not None and len(value) != b:
                raise ValueError(f"{name} must have one entry per group ({b}), got {len(value)}.")
        if self.lengths is not None and self.lengths.shape != (b, self.group_size):
            raise ValueError(f"lengths must have shape (B={b}, G={self.group_size}), got {self.lengths.shape}.")

    @classmethod
    def of(
        cls,
        rewards: ArrayLike | Sequence[ArrayLike],
        *,
        w_star: ArrayLike | Sequence[ArrayLike],
        keys: Sequence[Hashable] | None = None,
        goal_weights: ArrayLike | Sequence[ArrayLike] | None = None,
        lengths: ArrayLike | None = None,
        training_rewards: ArrayLike | Sequence[ArrayLike] | None = None,
    ) -> RolloutBatch:
        """A batch from arrays: what the estimators take without an env.

        Args:
            rewards: Shape (B groups, G rollouts, m candidates, d dims), or a list of B arrays
                (G, m, d_b) where d differs between groups (env-lcb). Multi-answer rewards are expected
                de-duplicated and zero-padded (`TextEnv.score_completion`'s ``training_rewards``).
            w_star: The fixed scalarisation: one (d,) vector for every group, or one (d_b,) per group.
            keys: One key per group (default ``range(B)``).
            goal_weights: goal_cond only: each group's prompt weights, shape (B, d), or one (d_b,) per group.
            lengths: Response lengths in tokens, shape (B, G) (gdpo's token-weighted whitening).
            training_rewards: Default `rewards` (the advantage reads these; `rewards` are for metrics).

        Raises:
            ValueError: Naming the argument and what is wrong with its shape or values.
        """
        groups, dense = _groups(rewards, "rewards")
        train, dense_train = (groups, dense) if training_rewards is None else _groups(training_rewards, "training")
        dims = [g.shape[2] for g in groups]
        if keys is not None and len(keys) != len(groups):
            raise ValueError(f"keys must have one key per group ({len(groups)}), got {len(keys)}.")
        goal = None
        if goal_weights is not None:
            goal_array = None if isinstance(goal_weights, list | tuple) else np.asarray(goal_weights, dtype=np.float64)
            if goal_array is not None and (goal_array.shape != (len(groups), dims[0]) or len(set(dims)) != 1):
                raise ValueError(
                    f"goal_weights must be finite with shape (B={len(groups)}, d={dims[0]}), got {goal_array.shape}."
                )
            goal = _per_group(goal_weights, dims, "goal_weights")
        counts = None
        if lengths is not None:
            counts = np.asarray(lengths, dtype=np.float64)
        return cls(
            rewards=groups,
            training_rewards=train,
            w_star=_per_group(w_star, dims, "w_star"),
            keys=tuple(range(len(groups)) if keys is None else keys),
            goal_weights=goal,
            lengths=counts,
            dense=None if dense is None or dense_train is None else (dense, dense_train),
        )

    # ------------------------------------------------------------------------------------ shape
    @property
    def n_groups(self) -> int:
        """B, the number of groups."""
        return len(self.rewards)

    @property
    def group_size(self) -> int:
        """G, the rollouts per group."""
        return int(self.rewards[0].shape[0])

    @property
    def m(self) -> int:
        """Candidates per rollout."""
        return int(self.rewards[0].shape[1])

    @property
    def dims(self) -> tuple[int, ...]:
        """Each group's d, length B."""
        return tuple(int(r.shape[2]) for r in self.rewards)

    @property
    def shared_spec(self) -> RewardSpec | None:
        """The spec every group shares, or None where they differ (or the batch was built from arrays)."""
        if self.specs is None or len(set(self.specs)) != 1:
            return None
        return self.specs[0]

    def stacked(self, *, training: bool = False) -> Array | list[Array]:
        """The rewards (or training rewards) as one (B, G, m, d) array where every group has the same d, else the list."""
        if self.dense is not None:
            return self.dense[1] if training else self.dense[0]
        groups = self.training_rewards if training else self.rewards
        return np.stack(groups) if len(set(self.dims)) == 1 else list(groups)

    def padded(self, d: int) -> Array:
        """The rewards zero-padded to `d` dimensions, shape (B, G, m, d) (evaluation's pools).

        Raises:
            ValueError: If a group has more than `d` dimensions.
        """
        if max(self.dims) > d:
            raise ValueError(f"a group has d={max(self.dims)} > {d}; pad to at least the widest group.")
        out = np.zeros((self.n_groups, self.group_size, self.m, d))
        for b, r in enumerate(self.rewards):
            out[b, :, :, : r.shape[2]] = r
        return out


def score_groups(
    env: TextEnv[Any, Any],
    tasks: Sequence[Task[Any]],
    texts: Sequence[str | None],
    *,
    mode: Mode,
    m: int,
    keys: Sequence[Hashable] | None = None,
    goal_weights: Sequence[ArrayLike] | None = None,
    lengths: ArrayLike | None = None,
    on_error: Callable[[int, int, Exception], None] | None = None,
) -> RolloutBatch:
    """Score B groups of completions with the env: one parse and one `rewards` call per completion.

    Each group keeps its task's reward spec (`TextEnv.spec_for`), so groups of different d share a batch.

    Args:
        env: The environment.
        tasks: The B tasks, one per group.
        texts: The B·G whole assistant turns (any pre-fill of the chat template included), prompt-major:
            completion g of task b is ``texts[b * G + g]``.
        mode: The prompt mode the completions answer.
        m: Candidates per completion.
        keys: One key per group (default ``range(B)``).
        goal_weights: Each group's prompt weights, B vectors (d_b,) (goal-conditioned methods), or None.
        lengths: Response lengths in tokens, shape (B, G), or None.
        on_error: None: a completion that cannot be scored raises. Given (evaluation): such a completion,
            or a missing one (None in `texts`), scores all-zero rows and is counted in ``unscorable``;
            `on_error` is called with (group, rollout, exception) for each one whose scoring raised.

    Returns:
        The batch, with each group's spec and task.

    Raises:
        ValueError: If `texts` is not G completions per task, or (without `on_error`) the env's rewards
            do not have its spec's shape (m, d) or a text is missing.
    """
    if not tasks or len(texts) % len(tasks):
        raise ValueError(f"texts must hold the same number of completions per task: {len(texts)} for {len(tasks)}.")
    group = len(texts) // len(tasks)
    specs = tuple(env.spec_for(t) for t in tasks)
    dense = None
    if len({spec.dim for spec in specs}) == 1:  # one (B, G, m, d) array, the groups its views
        dense = (np.zeros((len(tasks), group, m, specs[0].dim)), np.zeros((len(tasks), group, m, specs[0].dim)))
    raw = list(dense[0]) if dense is not None else [np.zeros((group, m, spec.dim)) for spec in specs]
    train = list(dense[1]) if dense is not None else [np.zeros_like(r) for r in raw]
    w_star = {spec: spec.w_star_array for spec in set(specs)}  # one array per distinct spec
    answered = np.zeros((len(tasks), group), dtype=np.int64)
    unscorable = 0
    for i, text in enumerate(texts):
        b, g = divmod(i, group)
        if text is None:
            if on_error is None:
                raise ValueError(f"completion {g} of task {tasks[b].id!r} is missing.")
            unscorable += 1
            continue
        try:
            raw[b][g], train[b][g], answered[b, g] = _score(env, tasks[b], specs[b], text, mode=mode, m=m)
        except Exception as exc:  # one bad completion (or env bug) must not stop an evaluation
            if on_error is None:
                raise
            unscorable += 1
            on_error(b, g, exc)
    return RolloutBatch(
        rewards=tuple(raw),
        training_rewards=tuple(train),
        w_star=tuple(w_star[spec] for spec in specs),
        keys=tuple(range(len(tasks)) if keys is None else keys),
        goal_weights=None
        if goal_weights is None
        else _per_group(list(goal_weights), [s.dim for s in specs], "goal_weights"),
        lengths=None if lengths is None else np.asarray(lengths, dtype=np.float64),
        specs=specs,
        tasks=tuple(tasks),
        unscorable=unscorable,
        answered=answered,
        dense=dense,
    )


def regroup(
    rows: Sequence[RolloutBatch],
    group_size: int,
    *,
    keys: Sequence[Hashable] | None = None,
    goal_weights: Sequence[ArrayLike] | None = None,
    lengths: ArrayLike | None = None,
) -> RolloutBatch:
    """Batches of single rollouts, in order, as groups of `group_size` consecutive rollouts of one task.

    An engine that scores completions one at a time, or a share of a batch per process (TRL's reward
    function), scores each completion as a group of one (`score_groups`) and regroups the gathered rows.

    Args:
        rows: Batches from `score_groups` whose groups each hold one rollout; N rollouts in all, in the
            engine's order (the G rollouts of a prompt next to each other).
        group_size: G; it divides N.
        keys: One key per group, N / G (default ``range(N / G)``).
        goal_weights: Each group's prompt weights, N / G vectors (d_b,) (goal-conditioned methods), or None.
        lengths: Response lengths in tokens, shape (N / G, G), or None.

    Returns:
        The batch of N / G groups of G rollouts, with each group's task and spec.

    Raises:
        ValueError: If a row holds groups of more than one rollout, G does not divide N, or the rollouts
            of one group answer different tasks.
    """
    if any(row.group_size != 1 or row.tasks is None or row.specs is None for row in rows):
        raise ValueError("regroup takes batches of single rollouts from score_groups (a group of one per completion).")
    raw = [r for row in rows for r in row.rewards]
    train = [t for row in rows for t in row.training_rewards]
    tasks = [t for row in rows for t in row.tasks or ()]
    specs = [s for row in rows for s in row.specs or ()]
    if not raw or group_size < 1 or len(raw) % group_size:
        raise ValueError(f"group_size={group_size} must divide the {len(raw)} rollouts.")
    n_groups = len(raw) // group_size
    spans = [range(b * group_size, (b + 1) * group_size) for b in range(n_groups)]
    for b, span in enumerate(spans):
        if len({tasks[i].id for i in span}) != 1:
            raise ValueError(
                f"the rollouts of group {b} answer different tasks {sorted({str(tasks[i].id) for i in span})}; "
                f"give the {group_size} rollouts of each prompt next to each other."
            )
    group_specs = [specs[span[0]] for span in spans]
    w_star = {spec: spec.w_star_array for spec in set(group_specs)}  # one array per distinct spec
    return RolloutBatch(
        rewards=tuple(np.concatenate([raw[i] for i in span]) for span in spans),
        training_rewards=tuple(np.concatenate([train[i] for i in span]) for span in spans),
        w_star=tuple(w_star[spec] for spec in group_specs),
        keys=tuple(range(n_groups) if keys is None else keys),
        goal_weights=None
        if goal_weights is None
        else _per_group(list(goal_weights), [s.dim for s in group_specs], "goal_weights"),
        lengths=None if lengths is None else np.asarray(lengths, dtype=np.float64),
        specs=tuple(group_specs),
        tasks=tuple(tasks[span[0]] for span in spans),
        unscorable=sum(row.unscorable for row in rows),
        answered=None
        if any(row.answered is None for row in rows)
        else np.concatenate([row.answered for row in rows if row.answered is not None]).reshape(n_groups, group_size),
    )


def _score(
    env: TextEnv[Any, Any], task: Task[Any], spec: RewardSpec, text: str, *, mode: Mode, m: int
) -> tuple[Array, Array, int]:
    """One completion's rewards and training rewards, each (m, d), checked against the task's spec, and its answers."""
    scored = env.score_completion(task, text, mode=mode, m=m)
    if scored.rewards.shape != (m, spec.dim):
        raise ValueError(
            f"{type(env).__name__}.score_completion returned rewards of shape {scored.rewards.shape} for task "
            f"{task.id!r}, whose spec (spec_for) has d={spec.dim} (m={m}): the env's rewards and its spec_for disagree."
        )
    return scored.rewards, scored.training_rewards, sum(c.answer is not None for c in scored.candidates)
