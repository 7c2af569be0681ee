"""The exact solver: the dead-end cut changes no answer (same outcomes, routes and Pareto set as a full search)."""

from __future__ import annotations

import random
from collections import deque

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env_maze import Maze, MazeEnv, solve
from env_maze._reward import score_routes
from env_maze._solver import _moves_to


def _full_search(maze: Maze) -> tuple[np.ndarray, tuple[tuple[int, ...], ...]]:
    """The solver before the dead-end cut: every (cell, mask) state within the budget, layer by layer.

    Returns:
        The distinct reward vectors in the solver's order (best w*-score first) and a route for each.
    """
    n_cells, n_items = len(maze.flat), maze.item_cells.size
    n_states = n_cells << n_items
    parent = np.full(n_states, -1, dtype=np.int64)
    parent_move = np.zeros(n_states, dtype=np.int8)
    visited = np.zeros(n_states, dtype=bool)
    table, bits = maze.next_cell, maze.item_bit
    visited[maze.start] = True
    frontier = np.array([maze.start], dtype=np.int64)
    terminal = []
    for _ in range(maze.budget):
        if frontier.size == 0:
            break
        cells, masks = frontier % n_cells, frontier // n_cells
        targets = table[cells]
        moved = targets != cells[:, None]
        states = (targets + n_cells * (masks[:, None] | bits[targets]))[moved]
        sources = np.broadcast_to(frontier[:, None], targets.shape)[moved]
        moves = np.broadcast_to(np.arange(4, dtype=np.int8), targets.shape)[moved]
        fresh = ~visited[states]
        states, sources, moves = states[fresh], sources[fresh], moves[fresh]
        states, first = np.unique(states, return_index=True)
        visited[states] = True
        parent[states], parent_move[states] = sources[first], moves[first]
        at_end = states % n_cells == maze.end
        terminal.append(states[at_end])
        frontier = states[~at_end]
    finals = np.concatenate(terminal) if terminal else np.zeros(0, dtype=np.int64)
    if finals.size == 0:
        return np.zeros((0, 4)), ()
    rewards = maze.reward_from_masks(finals // n_cells, np.ones(finals.size, dtype=bool))
    _, first = np.unique(rewards, axis=0, return_index=True)
    first = np.sort(first)
    rewards, finals = rewards[first], finals[first]
    order = np.lexsort((-rewards[:, 3], -rewards[:, 2], -rewards[:, 1], -rewards.mean(axis=1)))
    routes = []
    for state in finals[order]:
        route: list[int] = []
        while state != maze.start:
            route.append(int(parent_move[state]))
            state = parent[state]
        routes.append(tuple(reversed(route)))
    return rewards[order], tuple(routes)


def _assert_same_as_full_search(maze: Maze) -> None:
    solve.cache_clear()
    solution = solve(maze)
    rewards, routes = _full_search(maze)
    np.testing.assert_array_equal(solution.rewards, rewards)
    assert solution.routes == routes  # the same route for every outcome, not only the same outcomes
    if routes:
        np.testing.assert_array_equal(score_routes(maze, list(solution.routes)), solution.rewards)


def test_solver_equals_the_full_search_on_maze_v1():
    env = MazeEnv()
    tasks = env.tasks("train")[::10] + env.tasks("test")[::2]  # 100 train and 50 test mazes
    for task in tasks:
        _assert_same_as_full_search(task.payload)


@st.composite
def _grids(draw: st.DrawFn) -> Maze:
    height, width = draw(st.integers(1, 5)), draw(st.integers(2, 5))
    cells = draw(st.lists(st.sampled_from("..#GDLB"), min_size=height * width, max_size=height * width))
    start, end = draw(st.lists(st.integers(0, height * width - 1), min_size=2, max_size=2, unique=True))
    cells[start], cells[end] = "S", "E"
    rows = tuple("".join(cells[r * width : (r + 1) * width]) for r in range(height))
    return Maze(rows=rows, budget=draw(st.integers(1, 40)))  # budgets past the cell count too


@settings(max_examples=150, deadline=None)
@given(_grids())
def test_solver_equals_the_full_search_on_random_grids(maze):
    _assert_same_as_full_search(maze)


def test_unreachable_exit_has_no_outcome():
    maze = Maze.from_text("S G #\n. # .\n# . E", budget=30)
    solution = solve(maze)
    assert solution.rewards.shape == (0, 4)
    assert solution.routes == ()


def test_moves_to_equals_a_breadth_first_search():
    rng = random.Random(3)
    for _ in range(30):
        cells = [rng.choice("...#") for _ in range(36)]
        cells[0], cells[35] = "S", "E"
        maze = Maze(rows=tuple("".join(cells[r * 6 : (r + 1) * 6]) for r in range(6)), budget=5)
        target = rng.randrange(36)
        dist = {target: 0}
        queue = deque([target])
        while queue:  # backwards: p reaches c in one move if some move of p lands on c
            cell = queue.popleft()
            for p in range(36):
                if p not in dist and p != cell and cell in maze.next_cell[p]:
                    dist[p] = dist[cell] + 1
                    queue.append(p)
        expected = [dist.get(p, 37) for p in range(36)]
        assert _moves_to(maze.next_cell, target).tolist() == expected


@pytest.mark.parametrize("budget", [8, 9, 12])
def test_a_tight_budget_keeps_only_routes_that_reach_the_exit(budget):
    maze = Maze.from_text("S . . G\n. # # .\n. . . E\nD . # .", budget=budget)
    _assert_same_as_full_search(maze)
    assert all(len(route) <= budget for route in solve(maze).routes)
