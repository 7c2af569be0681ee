"""Does the pinned mechanism test's claim hold beyond its own seeds? The check behind its margins.

    OMP_NUM_THREADS=1 uv run python results/maze-v1-mechanism/pinned_test_check.py [seeds=60] [block=6] [candidates=150]

Runs the fixture of `packages/vpo-lab/tests/test_maze_mechanism.py` (the first 4 maze-v1 test mazes, V = 1,
`warm_uniform`, lr 0.1, 300 steps, evaluated at steps 50 and 300 with 150 answers per maze; GRPO, VPO,
the w* control and VPO with K = 1, plus VPO with unshared weightings, reported but not asserted) with
seeds 0..seeds-1, cuts them into disjoint blocks of `block` seeds (the test runs the first block,
seeds 0-5), and prints for every assertion of the test whether it holds in each block and the tightest
value over the blocks. It also prints every paired interval over all seeds. 60 seeds take about 7
minutes on one core.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

import numpy as np

import vpo_core
from vpo_core.stats import Interval, paired_seed_interval
from vpo_lab.tabular import Start, run_study, stack_tables
from vpo_lab.tabular.study import arm

ARMS = ("grpo", "vpo", "vpo_w_star_max", "vpo_k1", "vpo_unshared")
STEPS = 300  # the test's settings
EARLY = 50
CANDIDATES = 150
K1_MARGIN = 0.015


def main() -> None:
    """Run the fixture over the seeds and print the per-block table and the all-seed intervals."""
    opts = dict(a.split("=", 1) for a in sys.argv[1:])
    n_seeds, block = int(opts.get("seeds", 60)), int(opts.get("block", 6))
    n_candidates = int(opts.get("candidates", CANDIDATES))
    if n_seeds < block or block < 2:
        raise SystemExit("error: need seeds >= block >= 2 (a seed-level interval needs 2 seeds).")
    env = vpo_core.make("maze-v1", test_size=8)
    candidates = stack_tables([env.outcome_table(t) for t in env.tasks("test")[:4]], variants=1)
    w_star = np.asarray(env.reward_spec.w_star)
    result = run_study(
        candidates,
        w_star=w_star,
        starts=[Start("warm_uniform", 0.75, 0.0)],
        arms=[arm(name, w_star=w_star, task_ids=candidates.task_ids) for name in ARMS],
        seeds=list(range(n_seeds)),
        steps=STEPS,
        checkpoints=[EARLY, STEPS],
        lr=0.1,
        n_candidates=n_candidates,
    )

    def values(name: str, metric: str, seeds: slice, step: int = STEPS) -> np.ndarray:
        return result.metric("warm_uniform", name, step, metric)[seeds]

    def diff(a: str, b: str, metric: str, step: int = STEPS) -> Callable[[slice], Interval]:
        return lambda s: paired_seed_interval(values(a, metric, s, step), values(b, metric, s, step))

    # (assertion, its value on a block of seeds, bound, ">" or "<"): exactly the test's assertions
    checks: list[tuple[str, Callable[[slice], float], float, str]] = [
        ("GRPO valid-only diversity, mean", lambda s: float(values("grpo", "diversity_valid", s).mean()), 0.2, "<"),
        ("GRPO completion, mean", lambda s: float(values("grpo", "completion", s).mean()), 0.99, ">"),
        ("VPO − GRPO E_w[best@5], low", lambda s: diff("vpo", "grpo", "e_w_best_at_5")(s).low, 0.05, ">"),
        ("VPO − GRPO valid-only div., low", lambda s: diff("vpo", "grpo", "diversity_valid")(s).low, 0.5, ">"),
        ("VPO − GRPO Pareto in 30, low", lambda s: diff("vpo", "grpo", "pareto_covered")(s).low, 0.0, ">"),
        ("VPO − w* control E_w[best@5], low", lambda s: diff("vpo", "vpo_w_star_max", "e_w_best_at_5")(s).low, 0.0, ">"),
        ("K = 1 − w* control E_w[best@5], low", lambda s: diff("vpo_k1", "vpo_w_star_max", "e_w_best_at_5")(s).low, 0.0, ">"),
        ("VPO − K = 1 E_w[best@5], low", lambda s: diff("vpo", "vpo_k1", "e_w_best_at_5")(s).low, -K1_MARGIN, ">"),
        ("VPO − K = 1 E_w[best@5], high", lambda s: diff("vpo", "vpo_k1", "e_w_best_at_5")(s).high, K1_MARGIN, "<"),
        (f"step {EARLY}: VPO − K = 1 E_w[best@5], low", lambda s: diff("vpo", "vpo_k1", "e_w_best_at_5", EARLY)(s).low, 0.0, ">"),
    ]  # fmt: skip
    blocks = [slice(i, i + block) for i in range(0, n_seeds - block + 1, block)]
    print(
        f"fixture of the pinned test ({n_candidates} evaluation answers per maze), seeds 0-{n_seeds - 1}, "
        f"{len(blocks)} disjoint blocks of {block} seeds; step {STEPS} unless marked\n"
    )
    print(
        "| assertion | bound | blocks where it holds | tightest block | first block (block = 6: the test's seeds 0-5) |"
    )
    print("|---|---|---|---|---|")
    for label, value, bound, side in checks:
        per_block = [value(s) for s in blocks]
        held = sum((x > bound) if side == ">" else (x < bound) for x in per_block)
        tightest = min(per_block) if side == ">" else max(per_block)
        print(f"| {label} | {side} {bound:+.3f} | {held}/{len(blocks)} | {tightest:+.4f} | {per_block[0]:+.4f} |")
    everything = slice(0, n_seeds)
    print(f"\nPaired differences over all {n_seeds} seeds [95 % seed-level interval] (VPO ahead in n seeds):\n")
    metrics = ("e_w_best_at_5", "diversity_valid", "pareto_covered", "completion")
    print("| step | VPO minus | " + " | ".join(metrics) + " |")
    print("|---" * (len(metrics) + 2) + "|")
    for step, other in [(step, other) for step in (EARLY, STEPS) for other in ARMS if other != "vpo"]:
        cells = []
        for metric in metrics:
            interval = diff("vpo", other, metric, step)(everything)
            per_seed = result.seed_means("warm_uniform", "vpo", step, metric) - result.seed_means(
                "warm_uniform", other, step, metric
            )
            cells.append(
                f"{interval.estimate:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}] ({int((per_seed > 0).sum())})"
            )
        print(f"| {step} | {other} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
