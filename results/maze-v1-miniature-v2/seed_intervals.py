"""One run's own figures, with intervals over the test mazes, from its committed pool.

`summary.json` pools an arm's seeds; RESULTS.md quotes single seeds of the random start from this
(same per-task metrics as the summary; one seed, so the interval is `vpo_core.stats.seed_interval`'s
task bootstrap: it resamples mazes only and is marked "one seed: task-level only").

    uv run python results/maze-v1-miniature-v2/seed_intervals.py random__vpo-seed1__vpo-seed1 multi
"""

import sys
from pathlib import Path

from vpo_core.evaluation import load_pool
from vpo_core.registry import make
from vpo_core.stats import seed_interval
from vpo_lab.experiment_report import per_task_metrics

METRICS = ("valid", "diversity_valid", "distinct_valid", "pareto_covered", "best@1", "best@3", "best@30", "E_w[best@5]")


def main(pool_name: str, mode: str) -> None:
    """Print each metric of the pool `pools/<pool_name>.npz` (scored in `mode`) as mean [low, high]."""
    pool = load_pool(Path(__file__).parent / "pools" / f"{pool_name}.npz")
    per_task = per_task_metrics(make("maze-v1"), pool.rewards, mode=mode)
    for name in METRICS:
        print(f"{name}: {seed_interval(per_task[name])}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
