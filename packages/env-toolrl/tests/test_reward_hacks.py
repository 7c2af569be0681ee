"""Reward hacks of issue 22 on ToolRL: each test is an attack that used to score, and must not."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from env_toolrl import ToolRLEnv, score_reply, value_match
from env_toolrl._parse import ToolCall

DATA = Path(__file__).parent / "data"
GOLD = (ToolCall("get_weather", {"city": "Paris", "days": 3, "metric": False, "tags": ["rain", "wind"]}),)
GOLD_LINE = (
    '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3, "metric": false, "tags": ["rain", "wind"]}}'
)
CALLS = f"<tool_call>\n{GOLD_LINE}\n</tool_call>"
THINK = "<think> I call the weather tool. </think>"


# ------------------------------------------------------------------------------ values, by type
def test_true_for_every_argument_matches_no_value():
    text = (
        THINK
        + '\n<tool_call>\n{"name": "get_weather", "parameters": {"city": true, "days": true, "metric": true, "tags": true}}\n</tool_call>'
    )
    assert score_reply(text, GOLD)[3] == 0.0


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        (True, "Paris"),
        (True, 3),
        (True, ["a"]),
        (False, 0),
        (0, False),
        (1, True),
        ("true", True),
        ("false", False),
        (None, "none"),
    ],
)
def test_booleans_match_only_booleans(predicted, gold):
    assert value_match(predicted, gold) == 0.0


def test_booleans_match_the_same_boolean():
    assert value_match(True, True) == value_match(False, False) == 1.0
    assert value_match(False, True) == 0.0


def test_object_arguments_are_scored_by_their_values():
    gold = {"city": "Paris", "unit": "celsius"}
    assert value_match({"city": "Rome", "unit": "kelvin"}, gold) == 0.0  # right keys, wrong values
    assert value_match({"city": "Paris", "unit": "kelvin"}, gold) == pytest.approx(0.5)
    assert value_match({"city": "Paris", "unit": "celsius"}, gold) == 1.0
    # extra keys dilute (an F1 over keys weighted by the value match): 2·1 / (3 + 1)
    assert value_match({"city": "Paris", "a": 1, "b": 2}, {"city": "Paris"}) == pytest.approx(0.5)
    assert value_match({"city": True}, {"city": "Paris"}) == 0.0
    assert value_match({}, {}) == 1.0


def test_list_elements_keep_their_types():
    assert value_match([True, True], ["rain", "wind"]) == 0.0
    assert value_match([1, 0], [True, False]) == 0.0
    assert value_match(["1", 2.0], [1, 2]) == 1.0  # numeric text is a number, as for scalars
    assert value_match([{"a": 1}], [{"a": 1}]) == 1.0
    assert value_match([{"a": 2}], [{"a": 1}]) == 0.0


# ------------------------------------------------------------------------------ format
GOLD_RESPONSE: tuple[ToolCall, ...] = ()


@pytest.mark.parametrize(
    "text",
    [
        THINK,  # a think block alone where a response is due
        THINK + "\n<response> Hi </response>\n<response> again </response>",  # repeated response blocks
        "<response> Hi </response>\n" + THINK,  # out of order
        "<think> <response> Hi </response> </think>",  # the response inside the think block
        THINK + "\nextra text\n<response> Hi </response>",  # text between the blocks
        THINK + "\n<response> Hi </response> trailing",
    ],
)
def test_format_rejects_malformed_replies_to_a_response_gold(text):
    assert score_reply(text, GOLD_RESPONSE)[0] == 0.0


@pytest.mark.parametrize(
    "text",
    [
        THINK,  # a think block alone where calls are due
        f"<think> {CALLS} </think>",  # the calls inside the think block
        f"{CALLS}\n{THINK}",  # tags out of order
        f"{THINK}\n{CALLS}\n{CALLS}",  # repeated call blocks
        f"{THINK}\n{THINK}\n{CALLS}",  # repeated think blocks
        f"{THINK}\n<tool_call>\n{GOLD_LINE}\nnot json\n</tool_call>",  # a body that is not all calls
        f'{THINK}\n<tool_call>\n{GOLD_LINE}\n{{"parameters": {{}}}}\n</tool_call>',  # a call without a name
        f"{THINK}\n{CALLS}\n<response> done </response>",  # a response the gold does not have
        f"{THINK}\n{CALLS} and more",  # trailing text
    ],
)
def test_format_rejects_malformed_replies_to_a_call_gold(text):
    assert score_reply(text, GOLD)[0] == 0.0


def test_calls_inside_the_think_block_are_not_calls():
    np.testing.assert_array_equal(score_reply(f"<think> {CALLS} </think>", GOLD), [0, 0, 0, 0])


@pytest.mark.parametrize(
    "text",
    [
        f"{THINK}\n{CALLS}",
        f"  {THINK}\n\n{CALLS}\n",  # whitespace around and between blocks (Qwen3's no-think prefill writes \n\n)
        f"<think>\n\n</think>\n\n{CALLS}",
        f"{THINK}<tool_call>[{GOLD_LINE}]</tool_call>",  # a JSON array, no newlines
    ],
)
def test_format_accepts_well_formed_calls(text):
    np.testing.assert_array_equal(score_reply(text, GOLD), [1, 1, 1, 1])


def test_format_follows_the_gold_structure_when_it_has_both_blocks():
    both = f"{THINK}\n{CALLS}\n<response> Here it is. </response>"
    assert score_reply(both, GOLD, gold_response=True)[0] == 1.0
    assert score_reply(f"{THINK}\n{CALLS}", GOLD, gold_response=True)[0] == 0.0
    assert score_reply(THINK, (), gold_response=False)[0] == 1.0  # a gold with neither block: think alone


def test_every_real_gold_scores_the_maximum_and_a_think_alone_never_formats():
    env = ToolRLEnv(data_dir=DATA)
    tasks = env.tasks("test")
    assert len(tasks) == 80
    for task in tasks:
        np.testing.assert_array_equal(env.score(task, env.reference_completion(task)), [[1, 1, 1, 1]])
        np.testing.assert_array_equal(
            env.score(task, "<think>\n\n</think>\n\n" + task.payload.ground_truth.split("</think>", 1)[1].lstrip()),
            [[1, 1, 1, 1]],
        )
        assert env.score(task, "<think> hmm </think>")[0, 0] == 0.0
