"""Program search hooks of `LcbEnv`: evaluate one program with per-test verdicts and model-facing feedback.

Used by test-time search (``vpo-search``). A test is public when it is one of the statement's worked
examples (its input and, right after it, its expected output appear in the problem text); every other
test is hidden. By default the model is shown the public tests only: their verdicts and the first
failing one in full; hidden tests score the final answer and nothing about them reaches the search
(not even a count of passes, which would let a program learn hidden answers across iterations). With
``hidden_feedback`` every test's verdict is shown as well (never a hidden test's input or output).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from env_lcb._config import LcbConfig
from env_lcb._data import Problem
from env_lcb.sandbox import GradeResult

if TYPE_CHECKING:
    from env_lcb.sandbox import Sandbox
    from vpo_core import Task

__all__ = ["VERDICT_NAMES", "LcbSearchMixin", "initial_program", "program_feedback", "public_tests"]

VERDICT_NAMES = {
    "ok": "passed",
    "wa": "wrong answer",
    "tle": "time limit exceeded",
    "mle": "memory limit exceeded",
    "ole": "output limit exceeded",
    "re": "runtime error",
    "ce": "compile error",
}
# Gaps (in non-whitespace characters) allowed around an example in the statement: from the "input" marker to
# the first input line (a parameter name such as "nums=" or a sample number), between input lines (", target="),
# and from the "output" marker to the output (":" or a sample number). Between the last input line and the
# "output" marker only nothing or "sample" may stand.
_FIRST_GAP, _LINE_GAP, _OUTPUT_GAP = 40, 20, 3
_BEFORE_OUTPUT = ("", "sample")
_SHOW_CHARS = 1500
_STDIN_STUB = (
    "import sys\n\n\ndef main() -> None:\n    data = sys.stdin.read().split()\n    # YOUR CODE HERE\n\n\nmain()\n"
)


def _squash(text: str) -> str:
    return "".join(text.split())


def _example_at(statement: str, marker: int, lines: list[str], expected: str) -> bool:
    cursor = marker + len("input")
    for number, line in enumerate(lines):
        at = statement.find(line, cursor)
        if at < 0 or at - cursor > (_FIRST_GAP if number == 0 else _LINE_GAP):
            return False
        cursor = at + len(line)
    output = statement.find("output", cursor)
    if output < 0 or statement[cursor:output] not in _BEFORE_OUTPUT:
        return False
    cursor = output + len("output")
    at = statement.find(expected, cursor)
    return 0 <= at - cursor <= _OUTPUT_GAP


def public_tests(problem: Problem) -> list[int]:
    """Indices of the tests that are worked examples of the statement (safe to show in full).

    A test is public when the statement shows it as an example: after an "input" marker ("Sample Input
    1", "Input:", "Input"), every non-blank line of its input in order, directly followed by an "output"
    marker ("Output", "Sample Output 1") and its expected output (whitespace and case ignored; short gaps
    allowed for parameter names and sample numbers). The rule errs towards hidden: a test it misses is only shown as a verdict.

    Args:
        problem: The problem.

    Returns:
        Test indices, ascending.
    """
    statement = _squash(problem.question).lower()
    markers = []
    at = statement.find("input")
    while at >= 0:
        markers.append(at)
        at = statement.find("input", at + 1)
    out = []
    for index, (test_in, test_out) in enumerate(problem.tests):
        lines = [_squash(line).lower() for line in test_in.splitlines() if line.strip()]
        expected = _squash(test_out).lower()
        if lines and expected and any(_example_at(statement, marker, lines, expected) for marker in markers):
            out.append(index)
    return out


def initial_program(problem: Problem) -> str:
    """The search's seed program: the starter code with an empty body, or a stdin skeleton."""
    starter = problem.starter_code.rstrip()
    if not starter:
        return _STDIN_STUB
    last_def = [line for line in starter.splitlines() if line.lstrip().startswith("def ")]
    indent = (len(last_def[-1]) - len(last_def[-1].lstrip()) + 4) if last_def else 4
    program = f"{starter}\n{' ' * indent}pass\n"
    try:
        ast.parse(program)
    except SyntaxError:
        return f"{starter}\n"
    return program


def _clip(text: str) -> str:
    return (
        text if len(text) <= _SHOW_CHARS else text[:_SHOW_CHARS] + f"\n... ({len(text) - _SHOW_CHARS} more characters)"
    )


def program_feedback(problem: Problem, result: GradeResult, *, hidden_feedback: bool = False) -> str:
    """What the model is shown about one graded program.

    By default: the public tests' pass count and verdicts (with their test numbers), and the input,
    expected output and error output of the first failing public test; of the hidden tests only how
    many there are. With `hidden_feedback`: the pass count over all tests and every test's verdict, in
    order, too (the hidden tests' inputs and outputs are still never shown).

    Args:
        problem: The problem.
        result: The program's grade on `problem.tests`.
        hidden_feedback: Show the hidden tests' verdicts.

    Returns:
        Plain text.
    """
    verdicts = result.verdicts
    public = sorted(public_tests(problem))
    hidden = len(verdicts) - len(public)
    legend = "(" + ", ".join(f"{code} = {name}" for code, name in VERDICT_NAMES.items()) + ")"
    if hidden_feedback:
        lines = [
            f"Tests passed: {sum(v == 'ok' for v in verdicts)}/{len(verdicts)} "
            f"({len(public)} public: the statement's examples; {hidden} hidden).",
            "Verdict per test, in order: " + " ".join(verdicts),
            legend,
        ]
    elif public:
        lines = [
            f"Public tests passed: {sum(verdicts[i] == 'ok' for i in public)}/{len(public)} (the statement's "
            f"examples). {hidden} hidden tests score the final answer only; their results are not shown.",
            "Verdict per public test: " + " ".join(f"test {i}: {verdicts[i]}" for i in public),
            legend,
        ]
    else:
        return (
            f"No test is one of the statement's examples, so no test result can be shown; the {hidden} hidden "
            "tests score the final answer only."
        )
    failing = [i for i in public if verdicts[i] != "ok"]
    if failing:
        i = failing[0]
        test_in, test_out = problem.tests[i]
        lines += [
            "",
            f"First failing public test (test {i}): {VERDICT_NAMES.get(verdicts[i], verdicts[i])}",
            "Input:",
            _clip(test_in.rstrip("\n")),
            "Expected output:",
            _clip(test_out.rstrip("\n")),
        ]
        stderr = result.stderr[i].strip() if i < len(result.stderr) else ""
        if stderr:
            lines += ["Error output (end):", stderr[-_SHOW_CHARS:]]
    elif hidden_feedback and any(v != "ok" for v in verdicts):
        which = "Every public test passes; the" if public else "No test is one of the statement's examples; the"
        lines += ["", f"{which} failing tests are hidden (only their verdicts are shown)."]
    elif public:
        lines += ["", "Every public test passes."]
    return "\n".join(lines)


class LcbSearchMixin:
    """`evaluate_program` and `initial_program` for `LcbEnv` (the protocol of ``vpo_search.SearchableEnv``)."""

    program_language = "python"
    config: LcbConfig

    if TYPE_CHECKING:  # LcbEnv defines it: a read-only property that starts the sandbox on first use

        @property
        def sandbox(self) -> Sandbox:
            """The env's sandbox."""
            ...

    def initial_program(self, task: Task[Problem]) -> str:
        """The seed program of a search: the starter code with an empty body, or a stdin skeleton."""
        return initial_program(task.payload)

    def public_dimensions(self, task: Task[Problem]) -> list[int]:
        """The tests a search may show and select on: the statement's examples (`public_tests`)."""
        return public_tests(task.payload)

    def evaluate_program(
        self, task: Task[Problem], program: str, *, hidden_feedback: bool = False
    ) -> tuple[NDArray[np.float64], list[str], str]:
        """Grade one program on every test of the task in the sandbox.

        Args:
            task: The task.
            program: Python source.
            hidden_feedback: Show the hidden tests' verdicts in the feedback (default: public tests only).

        Returns:
            Per-test pass indicators, shape (d,); the d verdicts (``ok``, ``wa``, ``tle``, ``mle``,
            ``ole``, ``re``, ``ce``); the feedback text for the model (see `program_feedback`).

        Raises:
            SandboxError: If the sandbox itself fails (never turned into a score).
        """
        problem = task.payload
        tests = [{"input": i, "output": o} for i, o in problem.tests]
        result = self.sandbox.grade(program, tests, fn_name=problem.fn_name, time_limit_s=self.config.time_limit_s)
        feedback = program_feedback(problem, result, hidden_feedback=hidden_feedback)
        return result.passed.astype(np.float64), list(result.verdicts), feedback
