"""ToolRL parsing and scoring are total and linear: any completion gives m candidates in [0, 1]^4."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from env_toolrl import ToolRLEnv, score_reply, value_match
from env_toolrl._parse import ToolCall, parse_reply, parse_tool_calls
from vpo_core.testing import check_completion, hostile_completions

DATA = Path(__file__).parent / "data"
_ENV = ToolRLEnv(data_dir=DATA)
HUGE = "9" * 5000
GOLD = (ToolCall(name="get_weather", parameters={"city": "Paris", "days": 3.0}),)

PIECES = [
    *("<think>", "</think>", "<tool_call>", "</tool_call>", "<response>", "</response>"),
    *("<response_1>", "</response_1>", "<response_2>", "</response_2>"),
    *('{"name": "get_weather", "parameters": {"city": "Paris", "days": ', '{"name": "x", "arguments": '),
    *("}", "}}", "[", "]", ",", "\n", HUGE, "-" + HUGE, "1e999999", "NaN", "Infinity", '"\\ud800"', "\x00", "\ud800"),
    *("[" * 3000, "{" * 3000, "<tool_call>" * 300),
]


@pytest.fixture(params=[(4300, 1000), (50_000, 50_000)], ids=["default-limits", "lcb-limits"])
def interpreter_limits(request):
    """Run under Python's default int-digit and recursion limits, then under the raised ones a
    LiveCodeBench-style grader sets in its process: parsing and scoring must not depend on them."""
    saved = sys.get_int_max_str_digits(), sys.getrecursionlimit()
    sys.set_int_max_str_digits(request.param[0])
    sys.setrecursionlimit(request.param[1])
    yield
    sys.set_int_max_str_digits(saved[0])
    sys.setrecursionlimit(saved[1])


def test_a_5000_digit_integer_in_a_call_is_a_malformed_call(interpreter_limits):
    # json raises a plain ValueError (not JSONDecodeError) past 4,300 digits; it used to crash scoring.
    # The parser enforces that limit itself, so a process that raised Python's limit parses the same.
    body = f'{{"name": "get_weather", "parameters": {{"city": "Paris", "days": {HUGE}}}}}'
    assert parse_tool_calls(body) == ()
    assert parse_tool_calls(f"[{body}]") == ()
    good = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
    assert parse_tool_calls(f"{good}\n{body}") == (ToolCall("get_weather", {"city": "Paris", "days": 3}),)
    np.testing.assert_array_equal(
        score_reply(f"<think>t</think>\n<tool_call>\n{body}\n</tool_call>", GOLD), [0, 0, 0, 0]
    )


def test_deeply_nested_json_is_a_malformed_call():
    assert parse_tool_calls("[" * 100_000) == ()
    assert parse_tool_calls('{"name": "a", "parameters": ' + "[" * 100_000 + "]" * 100_000 + "}") == ()


def test_numbers_beyond_float_range_never_match_and_never_raise(interpreter_limits):
    # 10**400 − 3.0 overflows a float: an int prediction against a float gold used to raise OverflowError.
    assert value_match(10**400, 3.0) == 0.0
    assert value_match(3.0, 10**400) == 0.0
    assert value_match(float("inf"), 3.0) == 0.0
    assert value_match(float("nan"), 3.0) == 0.0
    assert value_match("1e999999", 3.0) == 0.0
    assert value_match(3, 3.0) == 1.0
    nested: list = []
    for _ in range(5000):
        nested = [nested]
    assert value_match(nested, ["paris"]) == 0.0
    assert value_match({"k": nested}, 3) == 0.0
    text = '<think>t</think>\n<tool_call>\n{"name": "get_weather", "parameters": {"city": "Paris", "days": 1e999}}\n</tool_call>'
    np.testing.assert_allclose(score_reply(text, GOLD), [1, 1, 1, 0.5])


def test_a_megabyte_of_unmatched_tags_parses_in_linear_time():
    task = _ENV.tasks("test")[0]
    for text in ("<think>" * 150_000, "<tool_call>" * 100_000 + "</think>", "<response_1>" * 90_000, "{" * 1_000_000):
        assert len(text) >= 1_000_000
        start = time.perf_counter()
        parse_reply(text)
        for mode, m in (("single", 1), ("multi", 3)):
            rewards = _ENV.score(task, text, mode=mode, m=m)
            assert rewards.shape == (m, 4)
        assert time.perf_counter() - start < 3.0


@settings(max_examples=300, deadline=None)
@given(hostile_completions(PIECES))
def test_hostile_text_gives_m_candidates_with_rewards_in_bounds(completion):
    text, mode, m = completion
    for task in (_ENV.tasks("test")[0], _ENV.tasks("test")[1]):
        assert check_completion(_ENV, task, text, mode=mode, m=m).shape == (m, 4)
    assert np.all(np.isfinite(score_reply(text, GOLD)))
