"""Tests per second per core through the full sandbox, against LiveCodeBench-style runners.

    uv run python packages/env-lcb/benchmarks/bench_sandbox.py

All runners grade the same short stdin programs on the same 10 tests (every test passes, so a
runner that stops at the first failure still runs them all), one program at a time on one core:

- the sandbox: one bubblewrap worker (broker + data-free zygote), a fresh process per test cloned from
  the zygote, per-test memfds, rlimits + seccomp, CPU-time verdicts;
- the LiveCodeBench-style anchor (`lcb_style_runner.py`): a Manager and a forked process per
  program, the LCB preamble, stdin patched per test, expected outputs compared in that process;
- a minimal anchor: a fresh interpreter per program running every test in-process with no preamble,
  no patching and no isolation, as a lower bound on what any process-per-program runner costs.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import lcb_style_runner

from env_lcb.sandbox import Sandbox

PROGRAMS = [
    ("a, b = map(int, input().split())\nprint(a + b)", lambda a, b: a + b),
    ("n = int(input().split()[0])\nprint(sum(range(n)) % 1000)", lambda a, b: sum(range(a)) % 1000),
    ("x = list(map(int, input().split()))\nprint(max(x) - min(x) + 1)", lambda a, b: b - a + 1),
]
REPEATS = 10

MINIMAL = textwrap.dedent(
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


def _jobs() -> list[tuple[str, list[dict]]]:
    jobs = []
    for code, answer in PROGRAMS:
        tests = [{"input": f"{i} {i + 3}\n", "output": f"{answer(i, i + 3)}\n"} for i in range(10)]
        jobs.append((code, tests))
    return jobs * REPEATS


def _timed(grade_one, jobs) -> float:
    start = time.perf_counter()
    for code, tests in jobs:
        verdicts = grade_one(code, tests)
        if not all(verdicts):
            raise AssertionError(f"a runner failed a correct program: {code!r} -> {verdicts}")
    return time.perf_counter() - start


def _minimal(code: str, tests: list[dict]) -> list[bool]:
    done = subprocess.run(
        [sys.executable, "-c", MINIMAL],
        input=json.dumps({"code": code, "tests": tests}),
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> None:
    jobs = _jobs()
    n_tests = sum(len(tests) for _, tests in jobs)
    with Sandbox(workers=1) as box:
        box.grade(*jobs[0])  # start the worker
        ours = _timed(lambda code, tests: box.grade(code, tests, time_limit_s=2).passed, jobs)
    lcb = _timed(lambda code, tests: lcb_style_runner.grade(code, tests, timeout_s=2), jobs)
    minimal = _timed(_minimal, jobs)
    print("| what | tests/s (1 worker, 1 core) | sandbox speed-up over it |")
    print("|---|---:|---:|")
    rows = [
        ("sandbox: bubblewrap worker, zygote clone per test, memfds, rlimits + seccomp, CPU verdicts", ours),
        ("LiveCodeBench-style anchor: Manager + forked process per program, preamble, patched stdin", lcb),
        ("minimal anchor: fresh interpreter per program, tests in-process, no preamble", minimal),
    ]
    for name, seconds in rows:
        print(f"| {name} | {n_tests / seconds:,.0f} | {seconds / ours:.2f}× |")
    print(f"\nsandbox / LiveCodeBench-style anchor: {lcb / ours:.2f}× (target ≥ 0.8×)")


if __name__ == "__main__":
    main()
