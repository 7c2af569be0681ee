"""A LiveCodeBench-style runner, written for the benchmark: the anchor the sandbox is measured against.

It reproduces the structure of LiveCodeBench's grader (`lcb_runner/evaluation/`) without its code:
per program a `multiprocessing.Manager` and a forked `multiprocessing.Process`; inside that process
the LCB import preamble and the program wrapped into a function, compiled once; per test a SIGALRM
timer, stdin replaced through `unittest.mock.patch`, stdout captured in memory, and the comparison
(stripped, line by line) against the expected output held in the same process — the design whose
in-process expected outputs the sandbox exists to avoid. No isolation, no resource limits.
"""

from __future__ import annotations

import io
import multiprocessing
import signal
import sys
import textwrap
from unittest import mock

from env_lcb.sandbox.worker import PREAMBLE  # LiveCodeBench's import preamble, as the sandbox runs it

exec(PREAMBLE, {})  # the grading process has the preamble's modules imported, as LCB's does


class _Timeout(Exception):
    pass


def _on_alarm(signum, frame):
    raise _Timeout


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.strip().split("\n")]


def _run_program(code: str, tests: list[dict], timeout_s: int, results) -> None:
    signal.signal(signal.SIGALRM, _on_alarm)
    source = PREAMBLE + "def wrapped_function():\n" + textwrap.indent(code, "    ") + "\n"
    scope: dict = {"__name__": "__lcb__"}
    exec(compile(source, "<solution>", "exec"), scope)
    function = scope["wrapped_function"]
    verdicts = []
    for test in tests:
        signal.alarm(timeout_s)
        captured = io.StringIO()
        try:
            with mock.patch("sys.stdin", io.StringIO(test["input"])), mock.patch("sys.stdout", captured):
                function()
            verdicts.append(_lines(captured.getvalue()) == _lines(test["output"]))
        except BaseException:
            verdicts.append(False)
        finally:
            signal.alarm(0)
    results.append(verdicts)


def grade(code: str, tests: list[dict], timeout_s: int = 6) -> list[bool]:
    """One program, every test: a Manager and a forked process per program, as LiveCodeBench does."""
    context = multiprocessing.get_context("fork")
    with context.Manager() as manager:
        results = manager.list()
        process = context.Process(target=_run_program, args=(code, tests, timeout_s, results))
        process.start()
        process.join(timeout=(timeout_s + 1) * len(tests) + 5)
        if process.is_alive():
            process.kill()
            process.join()
        return list(results[0]) if len(results) else [False] * len(tests)


if __name__ == "__main__":
    print(grade("a, b = map(int, input().split())\nprint(a + b)", [{"input": "1 2\n", "output": "3\n"}]))
    sys.exit(0)
