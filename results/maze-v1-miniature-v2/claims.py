"""Paired differences of the miniature-v2 grid with seed-level intervals, recomputed from the committed pools.

Nothing is trained or sampled: every number comes from the pools under ``pools/`` (listed in
``index.json``; pools added later under the same naming, such as the w*-max control's
``direct__vpo_w_star_max-seed*``, are found by their file names), through the project's public APIs:
`per_task_metrics` of the experiment report, `vpo_core.stats.paired_seed_interval` (the seed-level
t-interval with a shared-task term; with one seed a task bootstrap marked "task-level only") and
`vpo_core.evaluation.metrics.split_by_reach`.

    uv run python results/maze-v1-miniature-v2/claims.py                  # the grid: VPO − each baseline
    uv run python results/maze-v1-miniature-v2/claims.py vpo vpo_w_star_max --starts direct

The grid prints, per start (direct, random) and step (50, 150, 300), VPO − GRPO, VPO − Multi-RLVR,
VPO − Max@k and VPO − MaxRL paired by seed and maze: the mean difference, its 95 % interval, the
number of seed pairs and the per-seed-pair differences, for each metric of `METRICS`; then the
split of the best@30 difference over the mazes B reaches (some valid candidate among its 30) and
the ones it does not. Given two methods A B, it prints A − B the same way.

Metrics (per maze, then averaged): best@k under w* (iid or chain estimator), E_w[best@5] (256
scrambled Sobol Dir(1) points), valid-only diversity, pareto_covered (share of the maze's Pareto
points found in the pool), pareto_fraction (share of the pool on its own Pareto front), validity
(share of candidates that reach E).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import vpo_core
from vpo_core.evaluation import load_pool, split_by_reach
from vpo_core.stats import Interval, paired_seed_interval, seed_interval
from vpo_lab.experiment_report import per_task_metrics

ROOT = Path(__file__).parent
METRICS = (
    ("best@1", "best@1"),
    ("best@3", "best@3"),
    ("best@30", "best@30"),
    ("E_w[best@5]", "E_w[best@5]"),
    ("diversity_valid", "valid-only diversity"),
    ("pareto_covered", "Pareto points covered"),
    ("pareto_fraction", "Pareto fraction of pool"),
    ("valid", "validity"),
)
BASELINES = ("grpo", "multi_rlvr", "max_at_k", "maxrl")
SPLIT_METRIC = "best@30"
_POOL_NAME = re.compile(r"(?P<start>[a-z]+)__(?P<method>[a-z0-9_]+)-seed(?P<seed>[0-9]+)(?:-step(?P<step>[0-9]+))?__")


@dataclass(frozen=True)
class PoolKey:
    """Which run and checkpoint a pool is of."""

    start: str
    method: str
    seed: int
    step: int


def find_pools(root: Path, final_step: int) -> dict[PoolKey, Path]:
    """Every RL pool of the folder: those of ``index.json``, then any other ``pools/*.npz`` by its file name.

    A file name without ``-step<N>`` is the run's final checkpoint, `final_step` (the grid's 300).
    Warm starts are left out.
    """
    found: dict[PoolKey, Path] = {}
    index = root / "index.json"
    if index.exists():
        for record in json.loads(index.read_text())["pools"]:
            if record.get("step") is None:
                continue
            key = PoolKey(str(record["variant"]), str(record["method"]), int(record["seed"]), int(record["step"]))
            found[key] = root / record["pool"]
    for path in sorted((root / "pools").glob("*.npz")):
        match = _POOL_NAME.match(path.name)
        if match is None or match["method"].startswith("warm"):
            continue
        step = int(match["step"]) if match["step"] else final_step
        found.setdefault(PoolKey(match["start"], match["method"], int(match["seed"]), step), path)
    return found


class Metrics:
    """Per-maze metrics of pools, computed once each (`per_task_metrics`)."""

    def __init__(self, pools: dict[PoolKey, Path]) -> None:
        self.pools = pools
        self.env = vpo_core.make("maze-v1")
        self._cache: dict[PoolKey, dict[str, Any]] = {}

    def __call__(self, key: PoolKey) -> dict[str, Any]:
        """Per-maze metrics of one pool (arrays of shape (T,))."""
        if key not in self._cache:
            pool = load_pool(self.pools[key])
            self._cache[key] = per_task_metrics(self.env, pool.rewards.astype(np.float64), mode=pool.mode)
        return self._cache[key]

    def seeds(self, start: str, method: str, step: int) -> list[int]:
        """The seeds with a pool of `method` at `start` and `step`."""
        return sorted(k.seed for k in self.pools if (k.start, k.method, k.step) == (start, method, step))

    def stack(self, start: str, method: str, step: int, seeds: list[int], metric: str) -> np.ndarray:
        """Per-(seed, maze) values, shape (S, T)."""
        return np.stack([self(PoolKey(start, method, s, step))[metric] for s in seeds])


def _fmt(ci: Interval) -> str:
    mark = " *" if ci.excludes_zero() else ""
    return f"{ci.estimate:+.3f} [{ci.low:+.3f}, {ci.high:+.3f}]{mark}"


def compare(metrics: Metrics, start: str, a: str, b: str, step: int, *, per_seed_detail: bool) -> list[str]:
    """The lines of A − B at one start and step (empty list when they share no seed)."""
    seeds = sorted(set(metrics.seeds(start, a, step)) & set(metrics.seeds(start, b, step)))
    if not seeds:
        return [f"{start} step {step}: {a} - {b}: no seed with pools of both"]
    level = "seed-level" if len(seeds) > 1 else "ONE SEED: task-level only"
    lines = [f"{start} step {step}: {a} - {b}   (seeds {seeds}; {len(seeds)} seed pair(s), {level})"]
    lines.append(f"  {'metric':24s} {'mean [95% interval]':28s} per seed pair")
    for metric, label in METRICS:
        left = metrics.stack(start, a, step, seeds, metric)
        right = metrics.stack(start, b, step, seeds, metric)
        ci = paired_seed_interval(left, right)
        per_seed = " ".join(f"{d:+.3f}" for d in (left - right).mean(axis=1))
        lines.append(f"  {label:24s} {_fmt(ci):28s} {per_seed}")
        if per_seed_detail and len(seeds) > 1:
            for i, s in enumerate(seeds):  # one seed pair: its interval is over mazes only
                lines.append(f"      seed {s}: {seed_interval(left[i] - right[i])}")
    lines += _failure_split(metrics, start, a, b, step, seeds)
    return lines


def _failure_split(metrics: Metrics, start: str, a: str, b: str, step: int, seeds: list[int]) -> list[str]:
    """The best@30 difference split over the mazes B reaches (some valid candidate) and the ones it does not."""
    reached = metrics.stack(start, b, step, seeds, "no_valid") < 0.5
    diff = metrics.stack(start, a, step, seeds, SPLIT_METRIC) - metrics.stack(start, b, step, seeds, SPLIT_METRIC)
    parts = split_by_reach(diff, reached)
    total, missed, rest = (seed_interval(x) for x in (diff, parts["unreached"], parts["reached"]))
    share = f"{missed.estimate / total.estimate:.0%}" if abs(total.estimate) > 1e-9 else "—"
    counts = " ".join(str(int((~row).sum())) for row in reached)
    return [
        f"  {SPLIT_METRIC} split by {b}'s reach: mazes {b} never reaches (0 valid of 30) per seed: {counts}",
        f"    lead {_fmt(total)}; from those mazes {_fmt(missed)} ({share}); from the others {_fmt(rest)}",
        "    per seed pair (those / others): "
        + "  ".join(
            f"{m:+.3f} / {o:+.3f}" for m, o in zip(parts["unreached"].mean(1), parts["reached"].mean(1), strict=True)
        ),
    ]


def main(argv: list[str] | None = None) -> None:
    """Print the grid's comparisons, or those of one method pair (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("methods", nargs="*", help="two methods A B to compare (default: VPO against each baseline)")
    parser.add_argument("--starts", default="direct,random", help="comma-separated starts (default direct,random)")
    parser.add_argument("--steps", default="50,150,300", help="comma-separated checkpoints (default 50,150,300)")
    parser.add_argument("--final-step", type=int, default=300, help="step of a pool file without -step<N> (300)")
    parser.add_argument("--root", type=Path, default=ROOT, help="the experiment folder (default: this script's)")
    args = parser.parse_args(argv)
    if args.methods and len(args.methods) != 2:
        parser.error(f"give two methods (A B) or none, got {args.methods}.")
    pools = find_pools(args.root, args.final_step)
    metrics = Metrics(pools)
    known = sorted({k.method for k in pools})
    for method in args.methods:
        if method not in known:
            parser.error(f"no pools of {method!r} under {args.root / 'pools'}; methods with pools: {', '.join(known)}.")
    pairs = [tuple(args.methods)] if args.methods else [("vpo", b) for b in BASELINES]
    print(
        "Paired differences A - B over (seed, maze), 100 test mazes, 30 candidates per maze. Interval: 95 %\n"
        "seed-level t-interval with a shared-maze term (vpo_core.stats.paired_seed_interval; t quantile with\n"
        "S-1 df: 12.7 for 2 seeds, 4.3 for 3). '*': the interval excludes 0.\n"
    )
    for start in args.starts.split(","):
        for step in (int(s) for s in args.steps.split(",")):
            for a, b in pairs:
                print("\n".join(compare(metrics, start, a, b, step, per_seed_detail=bool(args.methods))))
                print()


if __name__ == "__main__":
    main()
