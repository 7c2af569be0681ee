"""Will VPO help? The on-policy collinearity diagnostic of the paper's appendix, for any env and pool.

The appendix "Reward Collinearity Predicts When VPO Helps" measures, per (domain, method), two numbers
on an on-policy rollout pool of the trained checkpoint:

- ρ̄: flatten the pool to (N responses, D), drop zero-variance dimensions, take the D×D Pearson
  correlation matrix (``np.corrcoef``) and average its D(D-1) off-diagonal entries
  (`vpo_core.metrics.collinearity` does exactly this);
- best@16 under the GRPO training scalar w*: the unbiased order-statistic estimator of the expected
  maximum over 16 candidates per prompt, averaged over prompts (multi-answer pools use the chain
  protocol of `vpo_core.evaluation.metrics.best_at_k_of_pool`, as the evaluation app does).

VPO wins best@16 where ρ̄ stays well below 1 and ties where the on-policy components are
near-collinear. The paper gives no threshold; the verdict uses two cut-offs placed between the
paper's rows: ρ̄ below `IN_REGIME_BELOW` (0.7) reads "in VPO's regime", at or above
`COLLINEAR_FROM` (0.9) "near-collinear: effectively scalar", and in between "borderline" (both
cut-offs are options of apps/diagnose.py). One sharp number cannot separate the rows: a winning
domain's ρ̄ under VPO and a tying domain's under GRPO both fall in the borderline band.

The paper's rows of that table belong to their domains: each env's profile carries its own
(`vpo_core.profile.CollinearityRow`, with the paper's outcome), and `paper_rows` collects them from
the installed envs. The verdict cites the rows whose ρ̄ falls in its band, so this module names no domain.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vpo_core.evaluation.metrics import best_at_k_of_pool
from vpo_core.metrics import collinearity
from vpo_core.profile import CollinearityRow
from vpo_core.registry import list_envs, resolve_env_class

__all__ = [
    "COLLINEAR_FROM",
    "IN_REGIME_BELOW",
    "PoolDiagnosis",
    "diagnose_pool",
    "format_table",
    "paper_rows",
    "rows_in_band",
    "task_w_stars",
    "verdict",
]

IN_REGIME_BELOW = 0.7
"""ρ̄ below this: VPO's regime (above the paper's winning rows' ρ̄ under the scalar policy)."""

COLLINEAR_FROM = 0.9
"""ρ̄ at or above this: near-collinear (the paper's tying row reaches it under VPO)."""

_OUTCOME_TEXT = {"win": "a VPO win", "tie": "a tie", "loss": "a VPO loss"}


def paper_rows() -> list[CollinearityRow]:
    """The paper's rows of the ρ̄-vs-best@16 table, from the installed envs' profiles, in the paper's order.

    Imports every installed env package (a profile is a class attribute); a row that several env ids
    share (versions of one domain) is listed once.
    """
    rows = {resolve_env_class(env_id).profile.collinearity for env_id in list_envs()}
    return sorted((row for row in rows if row is not None), key=lambda row: row.position)


@dataclass(frozen=True)
class PoolDiagnosis:
    """The two numbers of one pool.

    Attributes:
        label: Which policy wrote the pool (``vpo``, ``grpo``, a file name).
        shape: The pool's shape (T prompts, n completions, m candidates, d dims).
        rho: On-policy ρ̄ (NaN when fewer than two dimensions vary).
        kept_dims: Indices of the dimensions that vary (those ρ̄ averages over).
        k: The k of best@k: the requested k, or the pool's size per prompt when that is smaller.
        best_at_k: Mean over prompts of best@k under w*.
    """

    label: str
    shape: tuple[int, int, int, int]
    rho: float
    kept_dims: tuple[int, ...]
    k: int
    best_at_k: float


def _check_pool(rewards: ArrayLike, w_star: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(rewards, dtype=np.float64)
    w = np.asarray(w_star, dtype=np.float64)
    if r.ndim != 4:
        raise ValueError(
            f"a pool must have shape (T prompts, n completions, m candidates, d dims), got {r.shape}; "
            "apps/evaluate.py writes such pools as pool_<row>.npy."
        )
    if w.ndim not in (1, 2) or w.shape[-1] != r.shape[-1]:
        raise ValueError(f"pool has {r.shape[-1]} reward dims but w* has shape {w.shape}; is it the right env's pool?")
    if w.ndim == 2 and w.shape[0] != r.shape[0]:
        raise ValueError(f"pool has {r.shape[0]} prompts but {w.shape[0]} per-task w* rows; give one per prompt.")
    if min(r.shape) < 1:
        raise ValueError(f"pool {r.shape} is empty.")
    if not np.all(np.isfinite(r)):
        raise ValueError("pool holds NaN or infinite rewards.")
    return r, w


def task_w_stars(env: Any, tasks: Sequence[Any], dim: int) -> np.ndarray:
    """Each task's w*, zero-padded to `dim` as evaluation pools pad a task's rows.

    Where the spec varies per task (env-lcb: one dimension per test) the class-level w* is not the
    scalarisation a task is trained and evaluated with; this is.

    Args:
        env: The environment.
        tasks: The T tasks of the pool, in its order.
        dim: The pool's d.

    Returns:
        Weights, shape (T, dim).

    Raises:
        ValueError: If a task has more dimensions than the pool.
    """
    out = np.zeros((len(tasks), dim))
    for i, task in enumerate(tasks):
        w = np.asarray(env.spec_for(task).w_star, dtype=np.float64)
        if w.size > dim:
            raise ValueError(f"task {task.id} has {w.size} reward dims but the pool has {dim}; is it this env's pool?")
        out[i, : w.size] = w
    return out


def diagnose_pool(label: str, rewards: ArrayLike, w_star: ArrayLike, *, mode: str, k: int = 16) -> PoolDiagnosis:
    """ρ̄ and best@k of one pool, as the appendix computes them.

    Args:
        label: Name of the pool's policy.
        rewards: The pool, shape (T, n, m, d).
        w_star: The GRPO training scalarisation, shape (d,), or one per task, shape (T, d)
            (`task_w_stars`; needed where the spec varies per task).
        k: Candidates of best@k (the paper: 16); capped at the pool's per-prompt size (n·m in multi
            mode, n in single mode).
        mode: The pool's prompt mode (`vpo_core.evaluation.load_pool` reads it from the pool file):
            ``"multi"`` uses the chain estimator, ``"single"`` the iid one.

    Returns:
        The diagnosis.

    Raises:
        ValueError: On a pool of the wrong shape, a w* of the wrong length, non-finite rewards, k < 1 or
            another mode.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}.")
    if mode not in ("single", "multi"):
        raise ValueError(f"a pool's mode is single or multi, got {mode!r}.")
    r, w = _check_pool(rewards, w_star)
    t, n, m, d = r.shape
    flat = r.reshape(t * n * m, d)
    kept = tuple(int(i) for i in np.flatnonzero(np.ptp(flat, axis=0) > 0))
    k_used = min(k, n * m if mode == "multi" else n)
    scores = r @ w if w.ndim == 1 else np.einsum("tnmd,td->tnm", r, w)  # (T, n, m)
    best = float(np.mean([best_at_k_of_pool(scores[i], k_used, mode=mode) for i in range(t)]))
    return PoolDiagnosis(
        label=label, shape=(t, n, m, d), rho=collinearity(flat), kept_dims=kept, k=k_used, best_at_k=best
    )


def rows_in_band(rows: Sequence[CollinearityRow], low: float, high: float) -> list[CollinearityRow]:
    """The rows with a ρ̄ (under VPO or under GRPO) in ``[low, high)``, in the paper's order."""
    return sorted(
        (row for row in rows if any(low <= rho < high for rho in (row.rho_vpo, row.rho_grpo))),
        key=lambda row: row.position,
    )


def _cited(rows: Sequence[CollinearityRow]) -> str:
    """``"A, a VPO win, and B, a tie"``: each row's domain with its outcome."""
    parts = [f"{row.domain}, {_OUTCOME_TEXT[str(row.outcome)]}" for row in rows]
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + ", and " + parts[-1]


def _cited_names(rows: Sequence[CollinearityRow]) -> str:
    names = [row.domain for row in rows]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def verdict(
    rho: float,
    *,
    in_regime_below: float = IN_REGIME_BELOW,
    collinear_from: float = COLLINEAR_FROM,
    rows: Sequence[CollinearityRow] | None = None,
) -> str:
    """One line: is a domain with on-policy ρ̄ = `rho` in VPO's regime?

    The near-collinear and borderline verdicts cite the paper's rows whose ρ̄ falls in their band.

    Args:
        rho: On-policy ρ̄ (NaN: fewer than two dimensions vary).
        in_regime_below: ρ̄ below this is in VPO's regime.
        collinear_from: ρ̄ at or above this is near-collinear.
        rows: The paper's rows to cite (default: `paper_rows`, those of the installed envs).

    Returns:
        The verdict.
    """
    if not in_regime_below <= collinear_from:
        raise ValueError(f"need in_regime_below <= collinear_from, got {in_regime_below} and {collinear_from}.")
    if math.isnan(rho):
        return "undetermined: fewer than two reward dimensions vary on this pool (the reward is effectively scalar)"
    if rho < in_regime_below:
        return f"in VPO's regime: ρ̄ = {rho:.2f} < {in_regime_below:g}, the reward components compete"
    rows = paper_rows() if rows is None else rows
    if rho >= collinear_from:
        ties = [row for row in rows_in_band(rows, collinear_from, math.inf) if row.outcome == "tie"]
        return (
            f"not in VPO's regime: ρ̄ = {rho:.2f} >= {collinear_from:g}, the components are near-collinear "
            "(effectively one scalar; expect VPO to tie scalar GRPO"
            + (f", as on {_cited_names(ties)})" if ties else ")")
        )
    band = rows_in_band(rows, in_regime_below, collinear_from)
    text = f"borderline: {in_regime_below:g} <= ρ̄ = {rho:.2f} < {collinear_from:g}"
    if not band:
        return text
    have = "has" if len(band) == 1 else "both have" if len(band) == 2 else "all have"
    return f"{text} (the paper's {_cited(band)}, {have} a row in this band)"


def _fmt(x: float | None, digits: int) -> str:
    return "–" if x is None or math.isnan(x) else f"{x:.{digits}f}"


def format_table(
    domain: str,
    dims: str,
    vpo: PoolDiagnosis | None,
    grpo: PoolDiagnosis | None,
    *,
    with_paper: bool = False,
) -> str:
    """The paper's ρ̄-vs-best@16 table (markdown) with this domain's row.

    Args:
        domain: Row name (the env id).
        dims: The "reward dims" cell, e.g. ``4 dims (D=4)``.
        vpo: Diagnosis of the VPO pool, if any.
        grpo: Diagnosis of the GRPO (scalar) pool, if any.
        with_paper: Also print the paper's rows above this one (`paper_rows`: those of the installed envs).

    Returns:
        The table; Δ = best@k VPO − best@k GRPO when both pools are given.
    """
    ks = {d.k for d in (vpo, grpo) if d is not None}
    k_text = "/".join(str(k) for k in sorted(ks)) or "16"
    lines = [
        f"| Domain | reward dims | ρ̄ VPO | ρ̄ GRPO | best@{k_text} VPO | best@{k_text} GRPO | Δ |",
        "|---|---|---|---|---|---|---|",
    ]
    if with_paper:
        lines.extend(
            f"| {r.domain} (paper) | {r.dims} | {r.rho_vpo:.2f} | {r.rho_grpo:.2f} | {r.best_vpo:.3f} | "
            f"{r.best_grpo:.3f} | {r.delta:+.3f} |"
            for r in paper_rows()
        )
    delta = None if vpo is None or grpo is None else vpo.best_at_k - grpo.best_at_k
    lines.append(
        f"| {domain} | {dims} | {_fmt(None if vpo is None else vpo.rho, 2)} | {_fmt(None if grpo is None else grpo.rho, 2)} | "
        f"{_fmt(None if vpo is None else vpo.best_at_k, 3)} | {_fmt(None if grpo is None else grpo.best_at_k, 3)} | "
        f"{'–' if delta is None else f'{delta:+.3f}'} |"
    )
    return "\n".join(lines)
