"""Scoring throughput of env-eureqa (issue 4): parse + exact-match candidates per second, one core.

uv run python packages/env-eureqa/benchmarks/bench_eureqa.py
"""

from __future__ import annotations

import time
from pathlib import Path

from env_eureqa import EureqaEnv

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def main() -> None:
    env = EureqaEnv(data_dir=DATA)
    tasks = env.tasks("train") + env.tasks("test")
    texts = []
    for task in tasks:
        ref = env.reference_completion(task)
        texts += [ref, ref.replace(task.payload.entities[1], "Someone_Else"), ref.upper(), "no tags at all"]
    pairs = [(t, x) for t in tasks for x in texts] * 20
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        for task, text in pairs:
            env.reward(task, env.parse(task, text)[0])
        best = min(best, time.perf_counter() - start)
    print("| what | candidates/s |")
    print("|---|---:|")
    print(f"| parse + score EUREQA candidates | {len(pairs) / best:,.0f} |")


if __name__ == "__main__":
    main()
