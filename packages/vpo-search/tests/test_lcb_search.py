"""env-lcb's search hooks: public tests, feedback that never shows a hidden test, the seed program, evaluation."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from env_lcb import LcbEnv, Problem
from env_lcb._search import initial_program, public_tests
from vpo_core import Task
from vpo_search import SearchableEnv, check_searchable, evaluate

pytestmark = pytest.mark.sandbox
DATA = Path(__file__).parent / "data" / "lite"
HIDDEN_IN, HIDDEN_OUT = "123456 654321", "777777"


def _problem(question: str, tests: tuple[tuple[str, str], ...], starter: str = "", fn: str | None = None) -> Problem:
    return Problem(pid="p", question=question, starter_code=starter, tests=tests, fn_name=fn, solution=None)


ATCODER = (
    "Print a+b.\n\nSample Input 1\n\n1 2\n\nSample Output 1\n\n3\n\nSample Input 2\n\n5 5\n\nSample Output 2\n\n10"
)
LEETCODE = (
    "Given nums and target.\nExample 1:\n\nInput: nums = [2,7,11,15], target = 9\nOutput: [0,1]\n"
    "Explanation: because.\n\nExample 2:\nInput: nums = [3,2,4], target = 6\nOutput: [1,2]\n\nConstraints: 2 <= n"
)


def test_public_tests_are_the_statements_examples_and_nothing_else():
    atcoder = (("1 2\n", "3\n"), ("5 5\n", "10\n"), ("1\n", "1\n"), ("3 4\n", "7\n"), ("2\n", "2\n"))
    assert public_tests(_problem(ATCODER, atcoder)) == [0, 1]  # "1" -> "1" is not an example, despite the digits
    leetcode = (("[2, 7, 11, 15]\n9", "[0, 1]"), ("[3, 2, 4]\n6", "[1, 2]"), ("[3, 3]\n6", "[0, 1]"))
    assert public_tests(_problem(LEETCODE, leetcode)) == [0, 1]
    codeforces = "Examples\nInput\n3\n1 2 3\nOutput\n6\nNote: 1 1"
    assert public_tests(_problem(codeforces, (("3\n1 2 3\n", "6\n"), ("1\n", "1\n")))) == [0]
    assert public_tests(_problem("Print a+b.", (("1 2\n", "3\n"),))) == []


def test_initial_programs_compile():
    starter = "class Solution:\n    def double(self, x: int) -> int:\n        "
    functional = initial_program(_problem("q", (("4", "8"),), starter=starter, fn="double"))
    ast.parse(functional)
    assert functional.startswith(starter.rstrip())
    assert functional.endswith("        pass\n")
    stdin = initial_program(_problem("q", (("1", "1"),)))
    ast.parse(stdin)
    assert "sys.stdin" in stdin


@pytest.fixture(scope="module")
def env():
    env = LcbEnv(data_dir=DATA, source="lcb_lite", time_limit_s=2.0)
    yield env
    env.sandbox.close()  # no sandbox worker outlives the module


def test_lcb_env_is_searchable(env):
    assert isinstance(check_searchable(env), SearchableEnv)
    assert env.program_language == "python"
    with pytest.raises(TypeError, match=r"lacks .*evaluate_program"):
        check_searchable(vpo_core.make("maze-v1"))


def test_evaluation_feedback_shows_the_first_failing_public_test_and_no_hidden_one(env):
    task = env.tasks("test")[0]
    assert public_tests(task.payload) == [0]
    wrong = evaluate(env, task, "print(0)")
    assert wrong.verdicts == ("wa", "wa", "wa")
    assert wrong.score == 0.0
    assert not wrong.success
    assert "First failing public test (test 0): wrong answer" in wrong.feedback
    assert "Input:\n1 2\nExpected output:\n3" in wrong.feedback
    partial = evaluate(env, task, "print(3)")  # passes the public example only
    np.testing.assert_array_equal(partial.rewards, [1.0, 0.0, 0.0])
    assert partial.score == pytest.approx(1 / 3)
    assert "Every public test passes." in partial.feedback
    crash = evaluate(env, task, "import sys\nprint(sys.stdin.read(), file=sys.stderr)\nraise SystemExit(3)")
    assert crash.verdicts == ("re", "re", "re")
    assert "First failing public test (test 0): runtime error" in crash.feedback
    for result in (wrong, partial, crash):  # a hidden test's input, output or stderr is never shown
        assert HIDDEN_IN not in result.feedback
        assert HIDDEN_OUT not in result.feedback
        assert "40000" not in result.feedback
    right = evaluate(env, task, "a, b = map(int, input().split())\nprint(a + b)")
    assert right.success
    assert right.score == 1.0
    assert right.verdicts == ("ok", "ok", "ok")


def test_functional_problem_feedback(env):
    task = env.tasks("test")[1]
    starter = env.initial_program(task)
    result = evaluate(env, task, starter)
    assert result.verdicts == ("wa", "wa")  # the stub returns None
    assert "Input:\n4\nExpected output:\n8" in result.feedback
    assert "31337" not in result.feedback
    solved = evaluate(env, task, "class Solution:\n    def double(self, x):\n        return 2 * x\n")
    assert solved.success


def test_evaluate_checks_what_the_env_returns(env):
    task = env.tasks("test")[0]

    class Broken(LcbEnv):
        def evaluate_program(self, task: Task, program: str):  # type: ignore[override]
            return np.ones(2), ["ok", "ok"], "fine"

    with pytest.raises(TypeError, match="rewards must be 3 finite numbers"):
        evaluate(Broken(data_dir=DATA, source="lcb_lite"), task, "print(1)")


# ------------------------------------------------------------------- issue 22: no hidden-test oracle
LOOKUP = "s = input()\nprint(777777 if s.strip() == '123456 654321' else 3)\n"  # learnt the hidden answer


def test_feedback_and_search_score_are_the_same_whatever_the_hidden_tests_say(env):
    # A lookup table that learnt one hidden answer is indistinguishable, to the search, from a program
    # that passes only the public example: the search sees public tests only.
    task = env.tasks("test")[0]
    partial = evaluate(env, task, "print(3)")
    lookup = evaluate(env, task, LOOKUP)
    assert lookup.rewards.tolist() == [1.0, 1.0, 0.0]  # the hidden test is passed and recorded...
    assert partial.rewards.tolist() == [1.0, 0.0, 0.0]
    assert lookup.feedback == partial.feedback  # ...but nothing the model sees says so
    assert lookup.search_score == partial.search_score == 1.0
    assert lookup.search_success
    assert partial.search_success
    assert lookup.score == pytest.approx(2 / 3)  # the full score is measured (it scores the final answer)
    assert "Verdict per test" not in lookup.feedback
    assert "2 hidden" in lookup.feedback


def test_hidden_test_feedback_is_an_opt_in(env):
    task = env.tasks("test")[0]
    lookup = evaluate(env, task, LOOKUP, hidden_feedback=True)
    partial = evaluate(env, task, "print(3)", hidden_feedback=True)
    assert "Verdict per test, in order: ok ok wa" in lookup.feedback
    assert lookup.feedback != partial.feedback
    assert lookup.search_score == lookup.score == pytest.approx(2 / 3)
    assert HIDDEN_IN not in lookup.feedback
    assert HIDDEN_OUT not in lookup.feedback


def test_a_problem_without_public_tests_shows_no_result():
    from env_lcb._search import program_feedback
    from env_lcb.sandbox import GradeResult

    problem = _problem("Print a+b.", (("1 2\n", "3\n"), ("5 5\n", "10\n")))
    result = GradeResult(
        verdicts=["ok", "wa"],
        passed=np.array([True, False]),
        cpu_s=np.zeros(2),
        wall_s=np.zeros(2),
        isolation="bubblewrap",
        stderr=["", ""],
    )
    text = program_feedback(problem, result)
    assert "1/2" not in text
    assert "wrong answer" not in text.split("(")[0]
    assert "no test result can be shown" in text
