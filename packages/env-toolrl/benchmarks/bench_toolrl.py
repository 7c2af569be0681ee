"""Scoring throughput of env-toolrl on the 80 real test rows (issue 4).

    uv run python packages/env-toolrl/benchmarks/bench_toolrl.py

Anchor: the same scorer re-parsing the gold reply on every call (no gold cache), in the same run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from env_toolrl import ToolRLEnv, score_reply
from env_toolrl._env import gold_calls
from env_toolrl._parse import parse_reply

DATA = Path(__file__).resolve().parents[1] / "tests" / "data"


def main() -> None:
    env = ToolRLEnv(data_dir=DATA)
    tasks = env.tasks("test")
    replies = []
    for task in tasks:
        gold = task.payload.ground_truth
        replies += [
            gold,
            gold.replace('"', "'", 2),
            gold.replace("<think>", ""),
            "<think> x </think>\n<response> ok </response>",
        ]
        for call in parse_reply(gold).calls:
            wrong = dict.fromkeys(call.parameters, "?")
            replies.append(
                "<think> t </think>\n<tool_call>\n"
                + json.dumps({"name": call.name, "parameters": wrong})
                + "\n</tool_call>"
            )
    pairs = [(task, r) for task in tasks for r in replies[:: max(1, len(replies) // 40)]]

    def cached() -> None:
        for task, reply in pairs:
            env.reward(task, env.parse(task, reply)[0])

    def uncached() -> None:
        for task, reply in pairs:
            score_reply(reply, parse_reply(task.payload.ground_truth).calls)

    gold_calls.cache_clear()
    best = {}
    for name, fn in (("cached", cached), ("anchor", uncached)):
        times = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        best[name] = min(times)
    n = len(pairs)
    print("| what | candidates/s |")
    print("|---|---:|")
    print(f"| parse + score (gold calls cached per task) | {n / best['cached']:,.0f} |")
    print(f"| score re-parsing the gold every call (anchor) | {n / best['anchor']:,.0f} |")
    print(f"| ratio | {best['anchor'] / best['cached']:.2f}× |")


if __name__ == "__main__":
    main()
