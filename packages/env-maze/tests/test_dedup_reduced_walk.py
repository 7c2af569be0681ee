"""Issue 37: routes are de-duplicated by what the reward sees (`reduced_walk`), not by their surface walk.

The same route three times, two of them with a one-step detour (into a free cell and straight
back), used to be three rows with one reward vector, so Multi-RLVR's set reward tripled (19 of the
20 test mazes).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env_maze import Maze, MazeEnv
from env_maze._parse import parse_moves
from env_maze._reward import reduced_walk, score_routes, scored_walk
from env_maze._solver import route_text
from vpo_core.objectives import multi_rlvr_reward

ENV = MazeEnv(train_size=1, test_size=20)
W = ENV.reward_spec.w_star
OPPOSITE = {0: 1, 1: 0, 2: 3, 3: 2}
INERT = {".", "S", "B"}  # cells whose entry the reward does not see


def _training(task, *routes: str) -> np.ndarray:
    text = "".join(f"<route_{i}>{r}</route_{i}>" for i, r in enumerate(routes, start=1))
    return ENV.score_completion(task, text, mode="multi", m=len(routes)).training_rewards


def _detours(maze: Maze, route: tuple[int, ...]) -> list[tuple[int, ...]]:
    """Copies of `route` with one step into an inert neighbour and straight back, within the budget."""
    if len(route) + 2 > maze.budget:
        return []
    out, position = [], maze.start
    for i, move in enumerate(route):
        for side in range(4):
            neighbour = int(maze.next_cell[position, side])
            if neighbour != position and maze.flat[neighbour] in INERT:
                out.append((*route[:i], side, OPPOSITE[side], *route[i:]))
        position = int(maze.next_cell[position, move])
    return out


def test_a_route_with_one_step_detours_is_one_row_on_the_test_mazes():
    checked = 0
    for task in ENV.tasks("test"):
        maze = task.payload
        route = parse_moves(ENV.reference_completion(task))
        detours = _detours(maze, route)
        if len(detours) < 2:
            continue
        first, second = detours[0], detours[-1]
        assert len({scored_walk(maze, r) for r in (route, first, second)}) == 3  # three different walks ...
        rewards = score_routes(maze, [route, first, second])
        np.testing.assert_array_equal(rewards, np.repeat(rewards[:1], 3, axis=0))  # ... one reward
        training = _training(task, route_text(route), route_text(first), route_text(second))
        np.testing.assert_array_equal(training, [rewards[0], np.zeros(4), np.zeros(4)])
        single = multi_rlvr_reward(training[:1], W)
        assert multi_rlvr_reward(training, W) == pytest.approx(single)  # not tripled
        checked += 1
    assert checked >= 15


TASK = ENV.task_from_grid("S . G\n. # .\nD . E", 12)
GOLD, DIAMOND = "RIGHT RIGHT DOWN DOWN", "DOWN DOWN RIGHT RIGHT"


@pytest.mark.parametrize(
    "copy",
    [
        "RIGHT LEFT RIGHT RIGHT DOWN DOWN",  # into a free cell and straight back (from S)
        "RIGHT RIGHT LEFT RIGHT DOWN DOWN",  # back-and-forth through a cell already on the path
        "RIGHT RIGHT LEFT LEFT RIGHT RIGHT DOWN DOWN",  # a longer back-and-forth
        "RIGHT RIGHT DOWN UP DOWN DOWN",
        "RIGHT RIGHT DOWN DOWN UP",  # after E (issue 22)
        "UP LEFT RIGHT RIGHT DOWN DOWN",  # into the border first (issue 22)
    ],
)
def test_copies_of_a_route_with_detours_that_collect_nothing_new_are_duplicates(copy):
    assert reduced_walk(TASK.payload, parse_moves(copy)) == reduced_walk(TASK.payload, parse_moves(GOLD))
    np.testing.assert_array_equal(_training(TASK, GOLD, copy, DIAMOND), [[1, 1, 0, 1], [1, 0, 1, 1], [0, 0, 0, 0]])


def test_a_closed_tour_through_free_cells_is_a_duplicate():
    task = ENV.task_from_grid("\n".join(["S . . . ."] + [". . . . ."] * 3 + [". . . . E"]), 20)
    straight = "RIGHT RIGHT RIGHT RIGHT DOWN DOWN DOWN DOWN"
    tour = "RIGHT RIGHT DOWN LEFT UP RIGHT RIGHT RIGHT DOWN DOWN DOWN DOWN"  # round a square back to (0, 2)
    assert scored_walk(task.payload, parse_moves(tour)) != scored_walk(task.payload, parse_moves(straight))
    np.testing.assert_array_equal(_training(task, straight, tour), [[1, 0, 0, 1], [0, 0, 0, 0]])
    # going round the square instead of along its edge is another path, not a tour
    around = "RIGHT DOWN RIGHT UP RIGHT RIGHT DOWN DOWN DOWN DOWN"
    np.testing.assert_array_equal(_training(task, straight, around), [[1, 0, 0, 1], [1, 0, 0, 1]])


def test_genuinely_different_routes_stay_distinct():
    # the two treasure corners
    assert np.count_nonzero(_training(TASK, GOLD, DIAMOND).any(axis=1)) == 2
    # equal rewards, different loop-erased paths (around the wall on the right and on the left)
    loop = ENV.task_from_grid("S . .\n. # .\n. . E", 10)
    training = _training(loop, "RIGHT RIGHT DOWN DOWN", "DOWN DOWN RIGHT RIGHT")
    np.testing.assert_array_equal(training[0], training[1])
    assert np.count_nonzero(training.any(axis=1)) == 2
    # a detour that collects an item no other part of the route collects is a different route
    side = ENV.task_from_grid("S . E\nG . .", 10)
    direct, grab = "RIGHT RIGHT", "DOWN UP RIGHT RIGHT"
    assert reduced_walk(side.payload, parse_moves(direct))[0] == reduced_walk(side.payload, parse_moves(grab))[0]
    np.testing.assert_array_equal(_training(side, direct, grab), [[1, 0, 0, 1], [1, 1, 0, 1]])
    # a detour that costs the exit (budget) is not a copy
    tight = ENV.task_from_grid("S . G\n. # .\nD . E", 4)
    np.testing.assert_array_equal(_training(tight, GOLD, "RIGHT LEFT " + GOLD), [[1, 1, 0, 1], [0, 0, 0, 0]])


def test_reduced_walk_is_linear_and_loop_erased():
    maze = Maze.from_text("S . .\n. . .\n. . E", 10_000)
    back_and_forth = (3, 2) * 4_000 + (3, 3, 1, 1)
    path, items = reduced_walk(maze, back_and_forth)
    assert path == (1, 2, 5, 8)
    assert items == ()


# ------------------------------------------------------------------------------ property
SMALL = Maze.from_text("S . G .\n. L # .\nD . . B\n. G . E", 14)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 3), max_size=20), st.lists(st.integers(0, 3), max_size=20))
def test_the_same_key_means_the_same_reward(a, b):
    """A key never merges routes the reward tells apart (so no right answer is ever dropped)."""
    ra, rb = score_routes(SMALL, [tuple(a), tuple(b)])
    if reduced_walk(SMALL, a) == reduced_walk(SMALL, b):
        np.testing.assert_array_equal(ra, rb)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=12), st.integers(0, 12), st.integers(0, 3))
def test_a_back_and_forth_into_an_inert_cell_never_makes_a_new_route(route, at, side):
    """Inserting a step into a free cell and straight back, before E and within the budget, keeps the key."""
    at = min(at, len(route))
    walk = scored_walk(SMALL, route[:at])
    if walk and walk[-1] == SMALL.end:
        return
    position = walk[-1] if walk else SMALL.start
    neighbour = int(SMALL.next_cell[position, side])
    if neighbour == position or SMALL.flat[neighbour] not in INERT or len(route) + 2 > SMALL.budget:
        return
    detoured = [*route[:at], side, OPPOSITE[side], *route[at:]]
    assert reduced_walk(SMALL, detoured) == reduced_walk(SMALL, route)
