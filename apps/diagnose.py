"""Will VPO help on this domain? On-policy ρ̄ and best@16 of saved pools, in the paper's table layout.

    uv run apps/diagnose.py env=maze-v1 vpo=runs/eval/x/pool_vpo.npy grpo=runs/eval/x/pool_grpo.npy
    uv run apps/diagnose.py env=ultrafeedback-v1 pools=runs/eval/base/pool_base.npy paper=true
    uv run apps/diagnose.py env=maze-v1 vpo=runs/maze-v1-vpo-seed0 grpo=runs/maze-v1-grpo-seed0 evaluate="tasks=100"

A pool is a ``pool_<row>.npy`` of apps/evaluate.py: rewards of shape (T prompts, n completions, m
candidates, d dims). For each pool this prints ρ̄ (flatten to (N, d), drop zero-variance dims, Pearson,
mean of the off-diagonal entries: the appendix's recipe), best@16 under the env's w* (the GRPO scalar;
k is capped at the pool's size per prompt) and a verdict, then the paper's ρ̄-vs-best@16 table with
this env's row (``vpo=`` and ``grpo=`` fill its two columns; ``paper=true`` adds the paper's rows).
``vpo=``, ``grpo=`` and ``pools=`` take pool files or checkpoints: a path that does not end in ``.npy`` (or ``.npz``)
is sampled first by apps/evaluate.py (its own process, the env profile's final-evaluation sampler;
``evaluate=`` adds its options, e.g. ``evaluate="tasks=100 samples=48"``) into ``out=<dir>/<label>``,
and its pool (conditioned on w* for goal-conditioned rows) is diagnosed. A base model's pool is enough
to ask before training. See vpo_core.diagnose for the verdict's cut-offs.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.cli_config import option, run_cli
from vpo_core.registry import DEFAULT_ENV


@dataclass
class DiagnoseConfig:
    """Options of apps/diagnose.py."""

    env: str = option(DEFAULT_ENV, "env id: its reward spec gives w* and the dimension names")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        help="env constructor options", default_factory=dict
    )
    vpo: str = option("", "pool_*.npy or checkpoint of VPO (the table's VPO column)")
    grpo: str = option("", "pool_*.npy or checkpoint of GRPO (the table's GRPO column)")
    pools: str = option("", "further comma-separated pools or checkpoints (diagnosed, not tabled)")
    evaluate: str = option("", "extra apps/evaluate.py options for sampling checkpoints, e.g. 'tasks=100 samples=48'")
    out: str = option("", "where sampled pools go (default runs/diagnose/<UTC time>)")
    k: int = option(16, "k of best@k (the paper: 16)")
    in_regime_below: float = option(0.7, "ρ̄ below this: in VPO's regime")
    collinear_from: float = option(0.9, "ρ̄ at or above this: near-collinear, VPO not expected to help")
    paper: bool = option(False, "also print the paper's five rows")

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ValueError(f"k must be >= 1, got {self.k}.")
        if not 0 <= self.in_regime_below <= self.collinear_from <= 1:
            raise ValueError("need 0 <= in_regime_below <= collinear_from <= 1.")


def _load(path: str) -> Any:
    from vpo_core.evaluation import load_pool

    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"error: pool file {p} does not exist (apps/evaluate.py writes pool_<row>.npy to its out=).")
    return load_pool(p)


EVALUATE = Path(__file__).resolve().parent / "evaluate.py"


def _sample(label: str, checkpoint: str, config: DiagnoseConfig) -> str:
    """Sample `checkpoint` with apps/evaluate.py into out/<label>; the path of its pool."""
    out = Path(config.out or f"runs/diagnose/{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}") / label
    command = [
        sys.executable,
        str(EVALUATE),
        f"env={config.env}",
        f"checkpoints={checkpoint}",
        f"out={out}",
        *(f"env.{key}={value}" for key, value in config.env_options.items()),
        *shlex.split(config.evaluate),
    ]
    print(f"sampling {checkpoint}: {shlex.join(command)}", file=sys.stderr)
    if subprocess.run(command, check=False, stdout=sys.stderr).returncode != 0:  # stdout: the diagnosis only
        raise SystemExit(f"error: apps/evaluate.py failed on {checkpoint} (its message is above).")
    rows = json.loads((out / "results.json").read_text())["rows"]  # the schema of docs/evaluation.md
    files = [r["pool"] for r in rows.values() if r["conditioning"] in (None, "w_star")]
    if not files:
        raise SystemExit(f"error: apps/evaluate.py wrote no pool for {checkpoint} in {out}.")
    return str(out / files[0])


def main(argv: list[str] | None = None) -> int:
    config = run_cli(
        DiagnoseConfig, argv, prog="apps/diagnose.py", description=__doc__ or "", passthrough={"env": "env_options"}
    )
    if isinstance(config, int):
        return config
    import vpo_core
    from vpo_core.diagnose import diagnose_pool, format_table, task_w_stars, verdict

    env = vpo_core.make(config.env, **config.env_options)
    spec = env.reward_spec
    test_tasks = list(env.tasks("test"))
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
        try:
            saved = _load(path)
            pool = saved.rewards
            if pool.ndim != 4 or pool.shape[0] > len(test_tasks) or pool.shape[-1] != spec.dim:
                raise ValueError(
                    f"a pool of shape {pool.shape} is not (T <= {len(test_tasks)} test tasks, n, m, {spec.dim} reward "
                    f"dims) of {config.env}; is it this env's pool?"
                )
            # each task's own w* (the pool's T prompts are the first T test tasks, as apps/evaluate.py samples them)
            w_star = task_w_stars(env, test_tasks[: pool.shape[0]], pool.shape[-1])
            results[label] = d = diagnose_pool(label, pool, w_star, k=config.k, mode=saved.mode)
        except ValueError as error:
            print(f"error: {path}: {error}", file=sys.stderr)
            return 2
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


if __name__ == "__main__":
    raise SystemExit(main())
