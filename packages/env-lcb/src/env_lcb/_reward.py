"""The LiveCodeBench reward: one dimension per test, 1 if the program passes it in the sandbox."""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numpy.typing import NDArray

from env_lcb._data import Problem
from env_lcb.sandbox import Sandbox

__all__ = ["pass_vectors"]


def pass_vectors(
    sandbox: Sandbox, problem: Problem, programs: Sequence[str | None], *, time_limit_s: float, workers: int
) -> NDArray[np.float64]:
    """Per-test pass indicators of several programs, graded in parallel sandbox workers.

    Args:
        sandbox: The sandbox.
        problem: The problem (its tests and, for functional problems, the function name).
        programs: The candidates' code; None (no program) scores zeros.
        time_limit_s: CPU seconds per test.
        workers: Programs graded at once.

    Returns:
        Rewards, shape (k, d) with d = the problem's number of tests.
    """
    tests = [{"input": i, "output": o} for i, o in problem.tests]
    out = np.zeros((len(programs), len(tests)))
    todo = [(row, code) for row, code in enumerate(programs) if code]
    if not todo:
        return out
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        results = list(
            pool.map(
                lambda item: sandbox.grade(item[1], tests, fn_name=problem.fn_name, time_limit_s=time_limit_s), todo
            )
        )
    for (row, _), result in zip(todo, results, strict=True):
        out[row] = result.passed
    return out
