"""Maze parsing is total and linear: any completion gives m routes with rewards in [0, 1]^4."""

from __future__ import annotations

import time

from hypothesis import given, settings

from env_maze import MazeEnv
from env_maze._parse import extract_answer, parse_moves, split_routes
from vpo_core.testing import check_completion, hostile_completions

_ENV = MazeEnv(train_size=2, test_size=2)

PIECES = [
    *("<answer>", "</answer>", "<ANSWER>", "<route_1>", "</route_1>", "<route_2 >", "</ROUTE_2>", "<route_3>"),
    *("---", "UP", " DOWN", ", LEFT", "->RIGHT", "right "),
    *("9" * 5000, "\x00", "\ud800", "ǅ", "<route_1>" * 500),
]


def test_a_megabyte_of_unmatched_tags_parses_in_linear_time():
    task = _ENV.tasks("test")[0]
    for text in ("<answer>" * 130_000, "<route_1>" * 112_000 + "</answer>", "<answer>UP " * 100_000 + "</answer>"):
        assert len(text) >= 1_000_000
        start = time.perf_counter()
        extract_answer(text)
        assert len(split_routes(text, 3)) == 3
        for mode, m in (("single", 1), ("multi", 3)):
            rewards = _ENV.score(task, text, mode=mode, m=m)
            assert rewards.shape == (m, 4)
        assert time.perf_counter() - start < 3.0
    text = "<answer>x" * 100_000 + "</answer>"
    start = time.perf_counter()
    assert len(split_routes("---".join([text, text]), 3)) == 3
    assert time.perf_counter() - start < 2.0


def test_moves_survive_nul_bytes_and_surrogates():
    assert parse_moves("UP\x00DOWN \ud800 LEFT") == (0, 1, 2)


@settings(max_examples=300, deadline=None)
@given(hostile_completions(PIECES))
def test_hostile_text_gives_m_candidates_with_rewards_in_bounds(completion):
    text, mode, m = completion
    assert check_completion(_ENV, _ENV.tasks("train")[0], text, mode=mode, m=m).shape == (m, 4)
