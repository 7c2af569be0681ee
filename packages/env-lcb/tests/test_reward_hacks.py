"""Reward hacks of issue 22 on LiveCodeBench: each test is an attack that used to score, and must not."""

from __future__ import annotations

import pytest

from env_lcb.sandbox import Sandbox

pytestmark = pytest.mark.sandbox

GCD_TESTS = [{"input": "12\n18", "output": "6"}, {"input": "7\n5", "output": "1"}]


@pytest.fixture(scope="module")
def sandbox():
    box = Sandbox(workers=1)
    yield box
    box.close()


@pytest.mark.parametrize(
    ("fn_name", "tests"),
    [
        ("gcd", GCD_TESTS),
        ("factorial", [{"input": "5", "output": "120"}]),
        ("median", [{"input": "[3, 1, 2]", "output": "2"}]),
        ("comb", [{"input": "5\n2", "output": "10"}]),
        ("sorted", [{"input": "[3, 1, 2]", "output": "[1, 2, 3]"}]),  # a builtin
    ],
)
@pytest.mark.parametrize("program", ["", "pass", "# nothing here\nx = 1\n"])
def test_a_program_that_defines_nothing_does_not_pass_by_a_preamble_name(sandbox, fn_name, tests, program):
    assert sandbox.grade(program, tests, fn_name=fn_name, time_limit_s=2).verdicts == ["re"] * len(tests)


@pytest.mark.parametrize(
    "program",
    [
        "from math import gcd\n",  # importing is not defining
        "gcd = gcd\n",
        "import math\ngcd = math.gcd\n",
        "class Solution:\n    pass\n",  # a Solution without the method
        "class Solution:\n    gcd = staticmethod(gcd)\n",
        "from functools import partial\ngcd = partial(gcd)\n",
    ],
)
def test_an_entry_point_the_program_did_not_write_is_not_called(sandbox, program):
    assert sandbox.grade(program, GCD_TESTS, fn_name="gcd", time_limit_s=2).verdicts == ["re", "re"]


@pytest.mark.parametrize(
    ("program", "fn_name", "test"),
    [
        ("class Solution(str):\n    pass\n", "join", {"input": '["a", "b"]', "output": '"ab"'}),
        ("class Solution(int):\n    pass\n", "bit_length", {"input": "", "output": "0"}),
    ],
)
def test_a_method_inherited_from_a_builtin_is_not_an_entry_point(sandbox, program, fn_name, test):
    assert sandbox.grade(program, [test], fn_name=fn_name, time_limit_s=2).verdicts == ["re"]


@pytest.mark.parametrize(
    "program",
    [
        "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n",
        "def gcd(a, b):\n    return math.gcd(a, b)  # the preamble's module, called by the program's own function\n",
        "class Solution:\n    def gcd(self, a, b):\n        return gcd(a, b)\n",
        "class Solution:\n    @staticmethod\n    def gcd(a, b):\n        return math.gcd(a, b)\n",
        "@lru_cache(maxsize=None)\ndef gcd(a, b):\n    return a if b == 0 else gcd(b, a % b)\n",
        "@cache\ndef gcd(a, b):\n    return a if b == 0 else gcd(b, a % b)\n",
        "def wrap(f):\n    def inner(*a):\n        return f(*a)\n    return inner\n@wrap\ndef gcd(a, b):\n    return math.gcd(a, b)\n",
    ],
)
def test_the_programs_own_definitions_are_entry_points(sandbox, program):
    assert sandbox.grade(program, GCD_TESTS, fn_name="gcd", time_limit_s=2).verdicts == ["ok", "ok"]


# ------------------------------------------------------------------------------ de-duplication
def _lcb_env():
    from pathlib import Path

    from env_lcb import LcbEnv

    return LcbEnv(data_dir=Path(__file__).parent / "data" / "lite", source="lcb_lite")


SOLUTION = "a, b = map(int, input().split())\nprint(a + b)\n"


@pytest.mark.parametrize(
    "copy",
    [
        SOLUTION + "# trailing comment\n",
        SOLUTION + '"""trailing docstring"""\n',
        SOLUTION + "'x'\n...\n42\npass\n",
        '"""Module docstring."""\n' + SOLUTION.replace("\n", "  # why\n"),
        "a,b=map(int,input().split())\n\n\nprint(a+b)",
        "def f():\n    'doc'\n    return 1\n" + SOLUTION,  # compared with the same function without its docstring
        "_ = 0\n" + SOLUTION,  # issue 37: an assignment nothing reads
        "_ = 0\n_ = 1\nunused = (1, -2.5, 'x', [None], {3: 'y'}, {4})\n" + SOLUTION,
        SOLUTION.replace("print", "pad = ...\nprint") + "tail = b'bytes'\n",
        "x = y = 0\n" + SOLUTION,
        "def g():\n    t = 1\n    return 2\n" + SOLUTION,  # compared with g without the local
    ],
)
def test_copies_that_differ_only_in_what_never_runs_are_duplicates(copy):
    from vpo_core import Candidate

    env = _lcb_env()
    task = env.tasks("test")[0]
    original = {"def f": "def f():\n    return 1\n", "def g": "def g():\n    return 2\n"}.get(copy[:5], "") + SOLUTION
    keys = [env.dedup_key(task, Candidate(index=i, text=t, answer=t)) for i, t in enumerate((original, copy))]
    assert keys[0] == keys[1]


@pytest.mark.parametrize(
    "other",
    [
        SOLUTION + "print(0)\n",
        SOLUTION + "if False:\n    print(0)\n",  # looks dead, is code: kept distinct
        "a, b = map(int, input().split())\nprint(b + a)\n",
        "def f():\n    pass\n" + SOLUTION,
        "_ = input()\n" + SOLUTION,  # consumes a line: not a literal
        "a = 0\n" + SOLUTION,  # the name is read later (before being reassigned, it could be)
        "_ = 0\nprint(_)\n" + SOLUTION,
        "_ = 0\nprint(globals()['_'])\n" + SOLUTION,
        "_ = 0\nprint(vars())\n" + SOLUTION,  # reflection: every assignment stays
        "_ = 0\nimport sys\nprint(sys.modules['__main__'])\n" + SOLUTION,
        "_ = 0\nprint(eval('_'))\n" + SOLUTION,
        "__builtins__ = 0\n" + SOLUTION,  # dunder names change how the module runs
        "Solution = 0\n" + SOLUTION,  # the harness looks it up
        "_ = 10 ** 9\n" + SOLUTION,  # an operation, not a literal
        "_ = [x]\n" + SOLUTION,  # reads a name (NameError here)
        "def f():\n    global _\n    _ = 0\n" + SOLUTION,
    ],
)
def test_programs_that_differ_in_code_stay_distinct(other):
    from vpo_core import Candidate

    env = _lcb_env()
    task = env.tasks("test")[0]
    keys = [env.dedup_key(task, Candidate(index=i, text=t, answer=t)) for i, t in enumerate((SOLUTION, other))]
    assert keys[0] != keys[1]


def test_class_attributes_and_the_functional_entry_point_stay():
    from env_lcb._dedup import program_key

    method = "class Solution:\n    def f(self):\n        return 1\n"
    assert program_key(method) != program_key(method.replace("    def", "    k = 0\n    def"))  # an attribute
    assert program_key(method) != program_key(method.replace("    def", "    if True:\n        k = 0\n    def"))
    top = "def helper():\n    return 1\n"
    assert program_key(top) == program_key(top + "solve = 0\n")
    assert program_key(top, keep=("solve",)) != program_key(top + "solve = 0\n", keep=("solve",))
    # the function's own locals are not class attributes: dropped there too
    assert program_key(method) == program_key(method.replace("        return", "        k = 0\n        return"))
