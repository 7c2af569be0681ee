"""Reward hacks of issue 22 on the maze: copies of one route must not look distinct to de-duplication."""

from __future__ import annotations

import numpy as np
import pytest

from env_maze import MazeEnv
from vpo_core.objectives import multi_rlvr_reward

ENV = MazeEnv(train_size=1, test_size=1)
TASK = ENV.task_from_grid("S . G\n. # .\nD . E", 10)  # gold route: right, right, down, down; diamond: down first
GOLD, DIAMOND = "RIGHT RIGHT DOWN DOWN", "DOWN DOWN RIGHT RIGHT"


def _training(*routes: str) -> np.ndarray:
    text = "".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(routes, start=1))
    return ENV.score_completion(TASK, text, mode="multi", m=len(routes)).training_rewards


@pytest.mark.parametrize(
    "copy",
    [
        GOLD + " UP",  # moves after reaching E
        GOLD + " UP LEFT LEFT UP",
        "RIGHT DOWN RIGHT DOWN DOWN",  # a move into a wall (no-op) on the way
        "UP LEFT " + GOLD,  # moves off the grid (no-ops) first
    ],
)
def test_a_copy_of_a_route_with_moves_that_change_nothing_is_a_duplicate(copy):
    training = _training(GOLD, copy, DIAMOND)
    rewards = ENV.rewards(TASK, ENV.parse(TASK, f"<route_1>{copy}</route_1>", mode="multi", m=1))
    np.testing.assert_array_equal(rewards, [[1, 1, 0, 1]])  # the copy scores what the gold route scores
    np.testing.assert_array_equal(training, [[1, 1, 0, 1], [1, 0, 1, 1], [0, 0, 0, 0]])


def test_multi_rlvr_gold_gold_plus_trailing_up_diamond_scores_two_routes():
    # Multi-RLVR's trace: "gold, gold + trailing UP, diamond" scored three distinct routes (2.25 > 1.5).
    w = ENV.reward_spec.w_star
    three = multi_rlvr_reward(_training(GOLD, GOLD + " UP", DIAMOND), w)
    two = multi_rlvr_reward(_training(GOLD, DIAMOND, ""), w)
    assert three == pytest.approx(two) == pytest.approx(1.5)


def test_routes_that_differ_in_what_is_scored_stay_distinct():
    detour = "RIGHT LEFT RIGHT RIGHT DOWN DOWN"  # a detour into a free cell and back: a copy (issue 37)
    training = _training(GOLD, detour, DIAMOND)
    assert np.count_nonzero(training.any(axis=1)) == 2
    short = ENV.task_from_grid("S . G\n. # .\nD . E", 4)
    bumped = ENV.parse(
        short, "<route_1>RIGHT DOWN RIGHT DOWN DOWN</route_1><route_2>" + GOLD + "</route_2>", mode="multi", m=2
    )
    # with a budget of 4 the wall bump costs the exit: the routes are scored differently, so not duplicates
    np.testing.assert_array_equal(
        ENV.dedupe_rewards(short, bumped, ENV.rewards(short, bumped)), [[0, 0, 0, 0], [1, 1, 0, 1]]
    )
