"""EUREQA parsing is total and linear: any completion gives m candidates with rewards in {0, 1}^5."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from env_eureqa import EureqaEnv, parse_entities

DATA = Path(__file__).parent / "data"
_ENV = EureqaEnv(data_dir=DATA)
HUGE = "9" * 5000

_PIECES = st.one_of(
    st.text(max_size=30),
    st.sampled_from(
        [
            *(f"<entity_{x}>" for x in "ABCDEa"),
            *(f"</entity_{x}>" for x in "ABCDEe"),
            "<response_1>",
            "</response_1>",
            "<response_2>",
            "</Response_2>",
            "Robert_Rodriguez",
            HUGE,
            "\x00",
            "\ud800",
            "<entity_A>" * 500,
            "[" * 3000,
        ]
    ),
)
_HOSTILE = st.lists(_PIECES, max_size=25).map("".join)


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
@given(_HOSTILE, st.sampled_from(["single", "multi"]), st.integers(1, 4))
def test_hostile_text_gives_m_candidates_with_rewards_in_bounds(text, mode, m):
    m = 1 if mode == "single" else m
    task = _ENV.tasks("test")[0]
    candidates = _ENV.parse(task, text, mode=mode, m=m)
    assert len(candidates) == m
    rewards = _ENV.rewards(task, candidates)
    assert rewards.shape == (m, 5)
    assert np.all((rewards == 0) | (rewards == 1))
