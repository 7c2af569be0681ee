"""The candidates a tabular policy picks from (stacked outcome tables), and start priors.

An `OutcomeTable` (`vpo_core.types`, a record of the env protocol) is what an env knows about one task
(`TextEnv.outcome_table`): every distinct outcome it can enumerate (reward vector, whether it is valid,
whether it is Pareto-optimal, how much "effort" it asks beyond the most direct answer) plus a few
invalid answers, each with an answer text that `env.score` re-scores to its stored reward.
`stack_tables` lays the tables of T tasks out as padded (T, N) arrays and can replicate every outcome
into V text variants with distinct de-dup keys (LM training de-duplicates by text, so one outcome can be
written in several ways). A `Start` turns the candidates into a prior (T, N), the policy's distribution
before RL.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from vpo_core.types import OutcomeTable

__all__ = ["Candidates", "Start", "stack_tables"]


@dataclass(frozen=True)
class Candidates:
    """The candidates of T tasks, padded to N per task.

    Attributes:
        task_ids: One id per task, length T.
        rewards: Reward vectors, shape (T, N, d); zeros in padding.
        valid: Valid candidates, shape (T, N).
        real: Candidates that exist (False in padding), shape (T, N).
        outcome: The outcome (row of the task's `OutcomeTable`) of each candidate, shape (T, N); -1 in padding.
        key: De-dup key of each candidate, shape (T, N): (outcome, variant) numbered; -1 in padding.
        pareto: Pareto-optimal candidates, shape (T, N).
        effort: Effort of each candidate's outcome, shape (T, N).
        n_pareto: Pareto outcomes per task, shape (T,).
        variants: V, text variants per outcome.
    """

    task_ids: tuple[str, ...]
    rewards: NDArray[np.float64]
    valid: NDArray[np.bool_]
    real: NDArray[np.bool_]
    outcome: NDArray[np.int64]
    key: NDArray[np.int64]
    pareto: NDArray[np.bool_]
    effort: NDArray[np.float64]
    n_pareto: NDArray[np.int64]
    variants: int

    @property
    def shape(self) -> tuple[int, int, int]:
        """(T tasks, N candidates, d dims)."""
        t, n, d = self.rewards.shape
        return t, n, d


def stack_tables(tables: Sequence[OutcomeTable], *, variants: int = 1) -> Candidates:
    """Lay out the tables of T tasks as padded candidate arrays, each outcome in V variants.

    Variant v of outcome i gets key ``i * V + v``: the variants of one outcome share its reward but
    are distinct answers for de-duplication (two texts of one outcome), as in LM training.

    Args:
        tables: One table per task, T >= 1, all with the same d.
        variants: V >= 1.

    Returns:
        The candidates, N = V · (largest n).

    Raises:
        ValueError: On no tables, mixed d, or V < 1.
    """
    if not tables:
        raise ValueError("stack_tables needs at least one OutcomeTable.")
    if isinstance(variants, bool) or not isinstance(variants, int) or variants < 1:
        raise ValueError(f"variants must be an int >= 1, got {variants!r}.")
    dims = {t.rewards.shape[1] for t in tables}
    if len(dims) != 1:
        raise ValueError(f"every table must have the same reward dimension d, got {sorted(dims)}.")
    d = dims.pop()
    n_max = variants * max(t.rewards.shape[0] for t in tables)
    shape = (len(tables), n_max)
    rewards = np.zeros((*shape, d))
    valid = np.zeros(shape, dtype=bool)
    real = np.zeros(shape, dtype=bool)
    outcome = np.full(shape, -1, dtype=np.int64)
    key = np.full(shape, -1, dtype=np.int64)
    pareto = np.zeros(shape, dtype=bool)
    effort = np.zeros(shape)
    for t, table in enumerate(tables):
        n = table.rewards.shape[0] * variants
        rows = np.repeat(np.arange(table.rewards.shape[0]), variants)  # outcome of each candidate
        rewards[t, :n] = table.rewards[rows]
        valid[t, :n] = table.valid[rows]
        real[t, :n] = True
        outcome[t, :n] = rows
        key[t, :n] = np.arange(n)
        pareto[t, :n] = table.pareto[rows]
        effort[t, :n] = table.effort[rows]
    n_pareto = np.array([int(t.pareto.sum()) for t in tables], dtype=np.int64)
    return Candidates(
        tuple(t.task_id for t in tables), rewards, valid, real, outcome, key, pareto, effort, n_pareto, variants
    )


@dataclass(frozen=True)
class Start:
    """A start prior: how a policy spreads its mass before RL.

    Invalid candidates share `invalid_mass` equally; valid outcomes share the rest in proportion to
    ``exp(-effort_scale · effort)`` (0 gives every valid outcome the same mass); an outcome's mass is
    split equally over its variants.

    Attributes:
        name: Label in tables.
        invalid_mass: Probability of an invalid answer, in [0, 1).
        effort_scale: How strongly effort makes an outcome rare, >= 0.
    """

    name: str
    invalid_mass: float
    effort_scale: float = 0.0

    def __post_init__(self) -> None:
        if not 0.0 <= self.invalid_mass < 1.0:
            raise ValueError(f"start {self.name!r}: invalid_mass must be in [0, 1), got {self.invalid_mass!r}.")
        if not math.isfinite(self.effort_scale) or self.effort_scale < 0:
            raise ValueError(f"start {self.name!r}: effort_scale must be finite and >= 0, got {self.effort_scale!r}.")

    def prior(self, candidates: Candidates) -> NDArray[np.float64]:
        """The start distribution over each task's candidates, shape (T, N), rows summing to 1.

        Raises:
            ValueError: If invalid_mass > 0 but a task has no invalid candidate.
        """
        invalid = candidates.real & ~candidates.valid
        n_invalid = invalid.sum(axis=1, keepdims=True)
        if self.invalid_mass > 0 and np.any(n_invalid == 0):
            raise ValueError(f"start {self.name!r} puts mass on invalid answers, but a task's table has none.")
        effort = np.where(candidates.valid, candidates.effort, 0.0)
        tilt = np.where(
            candidates.valid, np.exp(-self.effort_scale * (effort - effort.min(axis=1, keepdims=True))), 0.0
        )
        valid_part = (1.0 - self.invalid_mass) * tilt / tilt.sum(axis=1, keepdims=True)
        invalid_part = np.where(invalid, self.invalid_mass / np.maximum(n_invalid, 1), 0.0)
        prior = valid_part + invalid_part
        return prior / prior.sum(axis=1, keepdims=True)
