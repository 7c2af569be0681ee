"""MuSiQue parsing is total and linear: any completion gives m candidates with rewards in [0, 1]^5."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from hypothesis import given, settings

from env_musique import MusiqueEnv, parse_reply, score_reply
from vpo_core.testing import check_completion, hostile_completions

DATA = Path(__file__).parent / "data"
_ENV = MusiqueEnv(data_dir=DATA, test_per_hop=2)
SUPPORT3 = (7, 2, 15)
GOLDS = ("Green Bay Packers",)
HUGE = "9" * 5000

PIECES = [
    *("<support>", "</support>", "<answer>", "</answer>"),
    *("<response_1>", "</response_1>", "<response_2 >", "</RESPONSE_2>", "<response_3>"),
    *(",", " 7", "007", HUGE, "-" + HUGE, "1e999999", "\x00", "\ud800", "[" * 3000, "<support>" * 500),
]


def test_a_5000_digit_citation_is_an_out_of_range_citation():
    # int("9" * 5000) raises ValueError (Python's 4,300-digit limit); it used to crash scoring.
    cited, answer = parse_reply(f"<support>{HUGE}, 7, 007, {HUGE}</support><answer>x</answer>")
    assert cited == (HUGE, 7)
    assert answer == "x"
    np.testing.assert_array_equal(
        score_reply(f"<support>{HUGE}, 2</support><answer>Green Bay Packers</answer>", SUPPORT3, GOLDS),
        [0, 1, 0, 1, 1],
    )
    # a huge index still counts against the cap of four distinct citations
    text = f"<support>{HUGE}, 1{HUGE}, 2{HUGE}, 3{HUGE}, 7</support><answer>Green Bay Packers</answer>"
    np.testing.assert_array_equal(score_reply(text, SUPPORT3, GOLDS), [0, 0, 0, 1, 1])
    assert parse_reply("<support>0007, 7, 0</support><answer>a</answer>")[0] == (7, 0)


def test_a_megabyte_of_unmatched_tags_parses_in_linear_time():
    task = _ENV.tasks("test")[0]
    for text in ("<support>" * 120_000, "<answer>" * 130_000 + "</support>", "<response_1>" * 90_000):
        assert len(text) >= 1_000_000
        for mode, m in (("single", 1), ("multi", 3)):
            start = time.perf_counter()
            rewards = _ENV.score(task, text, mode=mode, m=m)
            assert time.perf_counter() - start < 2.0
            np.testing.assert_array_equal(rewards, np.zeros((m, 5)))
    # a megabyte of citations still reads only the first four distinct ones
    text = "<support>" + "7, " * 400_000 + "</support><answer>x</answer>"
    start = time.perf_counter()
    assert parse_reply(text) == ((7,), "x")
    assert time.perf_counter() - start < 2.0


@settings(max_examples=300, deadline=None)
@given(hostile_completions(PIECES))
def test_hostile_text_gives_m_candidates_with_rewards_in_bounds(completion):
    text, mode, m = completion
    assert check_completion(_ENV, _ENV.tasks("test")[0], text, mode=mode, m=m).shape == (m, 5)
