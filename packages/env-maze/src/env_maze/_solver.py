"""Exact optimum of a maze: every achievable reward vector, its Pareto set, and a route for each.

A breadth-first search over states (cell, collected-items mask), vectorised layer by layer with
numpy: a state reached at step t is never worth reaching later (waiting only burns budget), so the
first visit is kept with a parent pointer. Every state on E within the budget is an achievable
outcome; its mask gives the reward vector.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from env_maze._maze import MOVES, Maze

__all__ = ["MazeSolution", "solve"]


@dataclass(frozen=True)
class MazeSolution:
    """Everything achievable on one maze.

    Attributes:
        rewards: Every distinct achievable reward vector, shape (n, 4), sorted by w*-score
            (descending).
        routes: A shortest route (move codes) achieving each row of `rewards`.
        pareto: Boolean mask over `rewards`: the Pareto-optimal vectors.
        best_score: The largest achievable w*-score (uniform mean): the ceiling of best@k.
    """

    rewards: NDArray[np.float64]
    routes: tuple[tuple[int, ...], ...]
    pareto: NDArray[np.bool_]
    best_score: float

    @property
    def pareto_rewards(self) -> NDArray[np.float64]:
        """The Pareto set, shape (p, 4), best w*-score first."""
        return self.rewards[self.pareto]

    @property
    def pareto_routes(self) -> tuple[tuple[int, ...], ...]:
        """One route per Pareto point, aligned with `pareto_rewards`."""
        return tuple(route for route, keep in zip(self.routes, self.pareto, strict=True) if keep)


def route_text(route: tuple[int, ...]) -> str:
    """Moves as words separated by spaces, e.g. ``"RIGHT DOWN"``."""
    return " ".join(MOVES[m] for m in route)


def _pareto_mask(points: NDArray[np.float64]) -> NDArray[np.bool_]:
    """Rows not weakly dominated by another distinct row (all dims maximised)."""
    ge = np.all(points[None, :, :] >= points[:, None, :], axis=-1)  # ge[i, j]: j >= i everywhere
    gt = np.any(points[None, :, :] > points[:, None, :], axis=-1)
    dominated = np.any(ge & gt, axis=1)
    return ~dominated


@lru_cache(maxsize=2048)
def solve(maze: Maze) -> MazeSolution:
    """Solve a maze exactly.

    Args:
        maze: The maze.

    Returns:
        The achievable reward vectors, their Pareto set and a route for each.

    Raises:
        ValueError: If the maze has more than 20 item cells (the state space would be too large).
    """
    n_cells = len(maze.flat)
    n_items = maze.item_cells.size
    if n_items > 20:
        raise ValueError(f"the exact solver supports at most 20 gold/diamond/lava cells, this maze has {n_items}.")
    n_states = n_cells << n_items
    parent = np.full(n_states, -1, dtype=np.int64)
    parent_move = np.zeros(n_states, dtype=np.int8)
    visited = np.zeros(n_states, dtype=bool)
    table, bits, end = maze.next_cell, maze.item_bit, maze.end

    start_state = maze.start
    visited[start_state] = True
    frontier = np.array([start_state], dtype=np.int64)
    terminal: list[NDArray[np.int64]] = []
    for _ in range(maze.budget):
        if frontier.size == 0:
            break
        cells = frontier % n_cells
        masks = frontier // n_cells
        targets = table[cells]  # (f, 4)
        moved = targets != cells[:, None]
        new_masks = masks[:, None] | bits[targets]
        states = (targets + n_cells * new_masks)[moved]
        sources = np.broadcast_to(frontier[:, None], targets.shape)[moved]
        moves = np.broadcast_to(np.arange(4, dtype=np.int8), targets.shape)[moved]
        fresh = ~visited[states]
        states, sources, moves = states[fresh], sources[fresh], moves[fresh]
        states, first = np.unique(states, return_index=True)
        visited[states] = True
        parent[states] = sources[first]
        parent_move[states] = moves[first]
        at_end = states % n_cells == end
        terminal.append(states[at_end])
        frontier = states[~at_end]

    finals = np.concatenate(terminal) if terminal else np.zeros(0, dtype=np.int64)
    if finals.size == 0:
        return MazeSolution(np.zeros((0, 4)), (), np.zeros(0, dtype=bool), 0.0)
    rewards = maze.reward_from_masks(finals // n_cells, np.ones(finals.size, dtype=bool))
    # one representative (the earliest found, i.e. shortest) per distinct reward vector
    _, first = np.unique(rewards, axis=0, return_index=True)
    first = np.sort(first)
    rewards, finals = rewards[first], finals[first]
    order = np.lexsort((-rewards[:, 3], -rewards[:, 2], -rewards[:, 1], -rewards.mean(axis=1)))
    rewards, finals = rewards[order], finals[order]
    routes = []
    for state in finals:
        route: list[int] = []
        while state != start_state:
            route.append(int(parent_move[state]))
            state = parent[state]
        routes.append(tuple(reversed(route)))
    return MazeSolution(
        rewards=rewards,
        routes=tuple(routes),
        pareto=_pareto_mask(rewards),
        best_score=float(rewards.mean(axis=1).max()),
    )
