"""Speed of env-maze (issue 3): generation, scoring throughput, exact solver.

OMP_NUM_THREADS=1 uv run python packages/env-maze/benchmarks/bench_maze.py
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import random
import time

from env_maze import MazeEnv, solve
from env_maze._generate import SPLITS, generate
from env_maze._reward import simulate_reference
from env_maze._solver import route_text


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    def generate_all() -> None:
        for first, count in SPLITS.values():
            seed, made = first, 0
            while made < count:
                made += generate(seed) is not None
                seed += 1

    generation = min(timed(generate_all) for _ in range(3))

    env = MazeEnv()
    tasks = env.tasks("test")
    rng = random.Random(0)
    pools = []
    for task in tasks:
        routes = list(solve(task.payload).routes)
        routes += [[rng.randrange(4) for _ in range(rng.randrange(10, 34))] for _ in range(len(routes))]
        texts = [f"<route_1>{route_text(tuple(r))}</route_1>" for r in routes][:400]
        pools.append((task, texts))
    n_routes = sum(len(texts) for _, texts in pools)

    def score_batched() -> None:
        for task, texts in pools:
            env.rewards(task, [env.parse(task, t, mode="multi", m=1)[0] for t in texts])

    def score_reference() -> None:
        for task, texts in pools:
            for t in texts:
                simulate_reference(task.payload, env.parse(task, t, mode="multi", m=1)[0].answer)

    batched = min(timed(score_batched) for _ in range(3))
    reference = min(timed(score_reference) for _ in range(3))

    def solve_all() -> None:
        solve.cache_clear()
        for task in tasks:
            solve(task.payload)

    solver = min(timed(solve_all) for _ in range(2))
    print("| what | figure | target |")
    print("|---|---:|---:|")
    print(f"| generate all 1100 paper mazes (+82 rejected seeds) | {generation:.2f} s | < 2 s |")
    print(f"| parse + score {n_routes} routes, batched per maze | {n_routes / batched:,.0f} routes/s | ≥ 50,000/s |")
    print(f"| parse + plain per-move simulator (anchor), same routes | {n_routes / reference:,.0f} routes/s | |")
    print(f"| batched / anchor | {reference / batched:.1f}× | |")
    print(f"| exact Pareto solver, all 100 test mazes | {solver:.2f} s | < 10 s |")


if __name__ == "__main__":
    main()
