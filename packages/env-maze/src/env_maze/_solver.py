"""Exact optimum of a maze: every achievable reward vector, its Pareto set, and a route for each.

A breadth-first search over states (cell, collected-items mask), vectorised layer by layer with
numpy: a state reached at step t is never worth reaching later (waiting only burns budget), so the
first visit is kept with a parent pointer. Every state on E within the budget is an achievable
outcome; its mask gives the reward vector.

States that can no longer reach E in the budget left (their cell's distance to E is larger) are
dropped as they appear: they end no route, and every parent of a state that can still reach E can
too, so the live states' first visits and parent pointers are the same as without the cut (about
half the states of a maze-v1 maze are such dead ends).
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


def _moves_to(table: NDArray[np.int64], target: int) -> NDArray[np.int64]:
    """Fewest moves from each cell to `target` (walls respected), shape (cells,).

    A cell that cannot reach `target` gets more moves than there are cells.

    Args:
        table: The maze's transition table `Maze.next_cell`, shape (cells, 4).
        target: The cell to reach.
    """
    n_cells = table.shape[0]
    dist = np.full(n_cells, n_cells + 1, dtype=np.int64)
    dist[target] = 0
    for _ in range(n_cells):  # Bellman-Ford rounds: each extends the shortest paths by one move
        best = np.minimum(dist, dist[table].min(axis=1) + 1)
        best[target] = 0
        if np.array_equal(best, dist):
            break
        dist = best
    return dist


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
    visited = np.zeros(n_states, dtype=bool)
    parent = np.empty(n_states, dtype=np.int64)  # set on a state's first visit, read only for visited states
    parent_move = np.empty(n_states, dtype=np.int8)
    table, bits, end = maze.next_cell, maze.item_bit, maze.end
    to_end = _moves_to(table, end)

    start_state = maze.start
    visited[start_state] = True
    frontier = np.array([start_state], dtype=np.int64)  # states, cells and masks of the frontier
    cells = np.array([maze.start], dtype=np.int64)
    masks = np.zeros(1, dtype=np.int64)
    terminal: list[NDArray[np.int64]] = []
    for step in range(maze.budget):
        if frontier.size == 0:
            break
        targets = table[cells]  # (f, 4)
        # a move that stays put wastes a step; a cell farther from E than the budget left ends no route
        keep = (targets != cells[:, None]) & (to_end[targets] <= maze.budget - step - 1)
        rows, moves = np.nonzero(keep)  # row-major: the same order as the unpruned candidates
        new_cells = targets[rows, moves]
        new_masks = masks[rows] | bits[new_cells]
        states = new_cells + n_cells * new_masks
        fresh = np.flatnonzero(~visited[states])
        states, first = np.unique(states[fresh], return_index=True)  # the first candidate of each state
        pick = fresh[first]
        visited[states] = True
        parent[states] = frontier[rows[pick]]
        parent_move[states] = moves[pick]
        cells, masks = new_cells[pick], new_masks[pick]
        at_end = cells == end
        terminal.append(states[at_end])
        going = ~at_end
        frontier, cells, masks = states[going], cells[going], masks[going]

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
