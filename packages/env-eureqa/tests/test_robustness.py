"""EUREQA parsing is total and linear: any completion gives m candidates with rewards in {0, 1}^5."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from hypothesis import given, settings

from env_eureqa import EureqaEnv, parse_entities
from vpo_core.testing import check_completion, hostile_completions

DATA = Path(__file__).parent / "data"
_ENV = EureqaEnv(data_dir=DATA)
HUGE = "9" * 5000

PIECES = [
    *(f"<entity_{x}>" for x in "ABCDEa"),
    *(f"</entity_{x}>" for x in "ABCDEe"),
    *("<response_1>", "</response_1>", "<response_2>", "</Response_2>"),
    *("Robert_Rodriguez", HUGE, "\x00", "\ud800", "<entity_A>" * 500, "[" * 3000),
]


def test_a_megabyte_of_unmatched_tags_parses_in_linear_time():
    task = _ENV.tasks("test")[0]
    for text in ("<entity_A>" * 100_000, "<entity_b>" * 100_000 + "</entity_A>", "<response_1>" * 90_000):
        assert len(text) >= 1_000_000
        start = time.perf_counter()
        assert parse_entities(text) == ("",) * 5
        for mode, m in (("single", 1), ("multi", 3)):
            np.testing.assert_array_equal(_ENV.score(task, text, mode=mode, m=m), np.zeros((m, 5)))
        assert time.perf_counter() - start < 3.0
    assert parse_entities(f"<entity_A>{HUGE}</entity_A><ENTITY_B>\x00x</entity_b>") == (HUGE, "\x00x", "", "", "")


@settings(max_examples=300, deadline=None)
@given(hostile_completions(PIECES))
def test_hostile_text_gives_m_candidates_with_rewards_in_bounds(completion):
    text, mode, m = completion
    rewards = check_completion(_ENV, _ENV.tasks("test")[0], text, mode=mode, m=m)
    assert rewards.shape == (m, 5)
    assert np.all((rewards == 0) | (rewards == 1))
