"""Tests per second per core through the full sandbox, against a LiveCodeBench-style runner.

    uv run python packages/env-lcb/benchmarks/bench_sandbox.py

Both run the same short stdin programs on the same tests with one worker (one core). The anchor
starts a fresh interpreter per program and runs every test in that process (stdin/stdout swapped
in-process, expected outputs in the same process): LiveCodeBench's design, without its isolation.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

from env_lcb.sandbox import Sandbox

PROGRAMS = [
    "a, b = map(int, input().split())\nprint(a + b)",
    "n = int(input().split()[0])\nprint(sum(range(n)) % 1000)",
    "x = list(map(int, input().split()))\nprint(max(x) - min(x) + 1)",
]
TESTS = [{"input": f"{i} {i + 3}\n", "output": ""} for i in range(10)]

ANCHOR = textwrap.dedent(
    """
    import io, json, sys
    job = json.loads(sys.stdin.read())
    results = []
    for test in job["tests"]:
        sys.stdin, out = io.StringIO(test["input"]), io.StringIO()
        sys.stdout = out
        try:
            exec(compile(job["code"], "<solution>", "exec"), {"__name__": "__main__"})
            results.append(out.getvalue().strip() == test["output"].strip())
        except BaseException:
            results.append(False)
        finally:
            sys.stdout = sys.__stdout__
    print(json.dumps(results))
    """
)


def main() -> None:
    import json

    box = Sandbox(workers=1)
    box.grade(PROGRAMS[0], TESTS[:1])  # warm the worker
    programs = PROGRAMS * 10
    start = time.perf_counter()
    for code in programs:
        box.grade(code, TESTS, time_limit_s=2)
    ours = time.perf_counter() - start
    start = time.perf_counter()
    for code in programs:
        subprocess.run(
            [sys.executable, "-c", ANCHOR],
            input=json.dumps({"code": code, "tests": TESTS}),
            capture_output=True,
            text=True,
            check=True,
        )
    anchor = time.perf_counter() - start
    n = len(programs) * len(TESTS)
    box.close()
    print("| what | tests/s (1 worker, 1 core) |")
    print("|---|---:|")
    print(f"| sandbox: bubblewrap worker, fork per test, rlimits + seccomp, CPU-time verdicts | {n / ours:,.0f} |")
    print(f"| LiveCodeBench-style anchor: a fresh interpreter per program, tests in-process | {n / anchor:,.0f} |")
    print(f"| ratio | {anchor / ours:.1f}× |")


if __name__ == "__main__":
    main()
