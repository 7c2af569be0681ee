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
cut-offs are options of ``vpo diagnose``). One sharp number cannot separate the rows: a winning
domain's ρ̄ under VPO and a tying domain's under GRPO both fall in the borderline band.

The paper's rows of that table belong to their domains: each env's profile carries its own
(`vpo_core.profile.CollinearityRow`, with the paper's outcome), and `paper_rows` collects them from
the installed envs. The verdict cites the rows whose ρ̄ falls in its band, so this module names no domain.

``vpo diagnose`` (`main`, options `DiagnoseConfig`) prints the diagnosis of saved pools or checkpoints:

    vpo diagnose env=<env-id> vpo=runs/eval/x/pool_vpo.npy grpo=runs/eval/x/pool_grpo.npy
    vpo diagnose env=<env-id> pools=runs/eval/base/pool_base.npy paper=true
    vpo diagnose env=<env-id> vpo=runs/<env-id>-vpo-seed0 grpo=runs/<env-id>-grpo-seed0 evaluate="tasks=100"
"""

from __future__ import annotations

import json
import math
import shlex
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from vpo_core.cli_config import option, run_cli
from vpo_core.errors import DataFileError, MissingDataError, UserError
from vpo_core.evaluation.metrics import best_at_k_of_pool
from vpo_core.metrics import collinearity
from vpo_core.profile import CollinearityRow
from vpo_core.registry import DEFAULT_ENV, env_tasks, list_envs, make_env, resolve_env_class

__all__ = [
    "COLLINEAR_FROM",
    "IN_REGIME_BELOW",
    "DiagnoseConfig",
    "PoolDiagnosis",
    "diagnose_pool",
    "format_table",
    "main",
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
        raise DataFileError(
            f"a pool must have shape (T prompts, n completions, m candidates, d dims), got {r.shape}; "
            "vpo eval writes such pools as pool_<row>.npy."
        )
    if w.ndim not in (1, 2) or w.shape[-1] != r.shape[-1]:
        raise DataFileError(
            f"pool has {r.shape[-1]} reward dims but w* has shape {w.shape}; is it the right env's pool?"
        )
    if w.ndim == 2 and w.shape[0] != r.shape[0]:
        raise DataFileError(f"pool has {r.shape[0]} prompts but {w.shape[0]} per-task w* rows; give one per prompt.")
    if min(r.shape) < 1:
        raise DataFileError(f"pool {r.shape} is empty.")
    if not np.all(np.isfinite(r)):
        raise DataFileError("pool holds NaN or infinite rewards.")
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
        DataFileError: If a task has more dimensions than the pool (a ValueError).
    """
    out = np.zeros((len(tasks), dim))
    for i, task in enumerate(tasks):
        w = np.asarray(env.spec_for(task).w_star, dtype=np.float64)
        if w.size > dim:
            raise DataFileError(
                f"task {task.id} has {w.size} reward dims but the pool has {dim}; is it this env's pool?"
            )
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


# ------------------------------------------------------------------------------ vpo diagnose
@dataclass
class DiagnoseConfig:
    """Options of ``vpo diagnose``."""

    env: str = option(DEFAULT_ENV, "env id: its reward spec gives w* and the dimension names")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        help="env constructor options", default_factory=dict
    )
    vpo: str = option("", "pool_*.npy or checkpoint of VPO (the table's VPO column)")
    grpo: str = option("", "pool_*.npy or checkpoint of GRPO (the table's GRPO column)")
    pools: str = option("", "further comma-separated pools or checkpoints (diagnosed, not tabled)")
    evaluate: str = option("", "extra `vpo eval` options for sampling checkpoints, e.g. 'tasks=100 samples=48'")
    out: str = option("", "where sampled pools go (default runs/diagnose/<UTC time>)")
    k: int = option(16, "k of best@k (the paper: 16)")
    in_regime_below: float = option(IN_REGIME_BELOW, "ρ̄ below this: in VPO's regime")
    collinear_from: float = option(COLLINEAR_FROM, "ρ̄ at or above this: near-collinear, VPO not expected to help")
    paper: bool = option(False, "also print the paper's five rows")

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}.")
        if not 0 <= self.in_regime_below <= self.collinear_from <= 1:
            raise ValueError("need 0 <= in_regime_below <= collinear_from <= 1.")


_DIAGNOSE_HELP = """Will VPO help on this domain? On-policy ρ̄ and best@16 of saved pools, in the paper's table layout.

    vpo diagnose env=<env-id> vpo=runs/eval/x/pool_vpo.npy grpo=runs/eval/x/pool_grpo.npy
    vpo diagnose env=<env-id> pools=runs/eval/base/pool_base.npy paper=true
    vpo diagnose env=<env-id> vpo=runs/<env-id>-vpo-seed0 grpo=runs/<env-id>-grpo-seed0 evaluate="tasks=100"

A pool is a ``pool_<row>.npy`` of ``vpo eval``: rewards of shape (T prompts, n completions, m candidates,
d dims). For each pool this prints ρ̄ (flatten to (N, d), drop zero-variance dims, Pearson, mean of the
off-diagonal entries: the appendix's recipe), best@16 under the env's w* (the GRPO scalar; k is capped at
the pool's size per prompt) and a verdict, then the paper's ρ̄-vs-best@16 table with this env's row
(``vpo=`` and ``grpo=`` fill its two columns; ``paper=true`` adds the paper's rows). ``vpo=``, ``grpo=``
and ``pools=`` take pool files or checkpoints: a path that does not end in ``.npy`` (or ``.npz``) is
sampled first by ``vpo eval`` (its own process, the env profile's final-evaluation sampler; ``evaluate=``
adds its options, e.g. ``evaluate="tasks=100 samples=48"``) into ``out=<dir>/<label>``, and its pool
(conditioned on w* for goal-conditioned rows) is diagnosed. A base model's pool is enough to ask before
training. See `vpo_engines.diagnose` for the verdict's cut-offs.
"""


def _load(path: str) -> Any:
    from vpo_core.evaluation import load_pool

    p = Path(path)
    if not p.is_file():
        raise MissingDataError(f"pool file {p} does not exist (`vpo eval` writes pool_<row>.npy to its out=).")
    return load_pool(p)


def _sample(label: str, checkpoint: str, config: DiagnoseConfig) -> str:
    """Sample `checkpoint` with ``vpo eval`` (``python -m vpo_engines eval``) into out/<label>; the path of its pool."""
    out = Path(config.out or f"runs/diagnose/{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}") / label
    command = [
        sys.executable,
        "-m",
        "vpo_core",
        "eval",
        f"env={config.env}",
        f"checkpoints={checkpoint}",
        f"out={out}",
        *(f"env.{key}={value}" for key, value in config.env_options.items()),
        *shlex.split(config.evaluate),
    ]
    print(f"sampling {checkpoint}: {shlex.join(command)}", file=sys.stderr)
    if subprocess.run(command, check=False, stdout=sys.stderr).returncode != 0:  # stdout: the diagnosis only
        raise SystemExit(f"error: `vpo eval` failed on {checkpoint} (its message is above).")
    rows = json.loads((out / "results.json").read_text())["rows"]  # the schema of docs/evaluation.md
    files = [r["pool"] for r in rows.values() if r["conditioning"] in (None, "w_star")]
    if not files:
        raise SystemExit(f"error: `vpo eval` wrote no pool for {checkpoint} in {out}.")
    return str(out / files[0])


def main(argv: Sequence[str] | None = None) -> int:
    """``vpo diagnose [key=value ...]``: 0 on success, 2 for bad options or a pool that does not fit the env."""
    config = run_cli(
        DiagnoseConfig,
        None if argv is None else list(argv),
        prog="vpo diagnose",
        description=_DIAGNOSE_HELP,
        passthrough={"env": "env_options"},
    )
    if isinstance(config, int):
        return config
    try:
        return _diagnose(config)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2


def _diagnose(config: DiagnoseConfig) -> int:
    """Diagnose the pools `config` names (sampling checkpoints first); prints the verdicts and the table."""
    env = make_env(config.env, config.env_options)
    spec = env.reward_spec
    test_tasks = env_tasks(env, "test")
    named = [("vpo", config.vpo), ("grpo", config.grpo)]
    named += [(Path(p.strip()).stem.removeprefix("pool_"), p.strip()) for p in config.pools.split(",") if p.strip()]
    named = [
        (label, path if path.endswith((".npy", ".npz")) else _sample(label, path, config))
        for label, path in named
        if path
    ]
    if not named:
        print("error: give at least one pool: vpo=, grpo= or pools=", file=sys.stderr)
        return 2
    results = {}
    for label, path in named:
        saved = _load(path)
        pool = saved.rewards
        if pool.ndim != 4 or pool.shape[0] > len(test_tasks) or pool.shape[-1] != spec.dim:
            raise DataFileError(
                f"{path}: a pool of shape {pool.shape} is not (T <= {len(test_tasks)} test tasks, n, m, {spec.dim} "
                f"reward dims) of {config.env}; is it this env's pool?"
            )
        try:  # each task's own w* (the pool's T prompts are the first T test tasks, as `vpo eval` samples them)
            w_star = task_w_stars(env, test_tasks[: pool.shape[0]], pool.shape[-1])
            results[label] = d = diagnose_pool(label, pool, w_star, k=config.k, mode=saved.mode)
        except DataFileError as error:
            raise DataFileError(f"{path}: {error}") from error
        dropped = [spec.names[i] for i in range(spec.dim) if i not in d.kept_dims]
        print(f"{label}: pool {d.shape[0]}×{d.shape[1]}×{d.shape[2]}×{d.shape[3]} ({path})")
        print(
            f"  ρ̄ = {d.rho:.3f} over {[spec.names[i] for i in d.kept_dims]}"
            + (f", constant: {dropped}" if dropped else "")
        )
        per_task = any(env.spec_for(t).w_star != spec.w_star for t in test_tasks[: d.shape[0]])
        weights = "each task's own" if per_task else str(tuple(spec.w_star))
        print(f"  best@{d.k} (w* = {weights}) = {d.best_at_k:.3f}")
        print(f"  {verdict(d.rho, in_regime_below=config.in_regime_below, collinear_from=config.collinear_from)}")
    print()
    print(
        format_table(
            config.env,
            f"{spec.dim} dims (D={spec.dim})",
            results.get("vpo"),
            results.get("grpo"),
            with_paper=config.paper,
        )
    )
    return 0
