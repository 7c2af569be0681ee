"""The maze reward (paper appendix "Maze / Reward"), vectorised over many routes.

r = (completion, gold, diamond, avoid_lava): only the first `budget` moves count; walls and borders
block (the move still costs a step); the trajectory ends the moment it steps on E; gold, diamonds and
lava count once per distinct cell, only if visited before E; the bonus tile B has no effect. A route
that never reaches E scores (0, 0, 0, 0); otherwise r = (1, #G/n_G, #D/n_D, 1 − #L/n_L).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from env_maze._maze import MOVE_DELTAS, WALL, Maze

__all__ = ["score_routes", "scored_walk", "simulate_reference"]

_NO_MOVE = 4  # padding code: the walker stays and the step is not taken


def score_routes(maze: Maze, routes: Sequence[Sequence[int]]) -> NDArray[np.float64]:
    """Rewards of many routes on one maze, simulated together step by step.

    Args:
        maze: The maze.
        routes: Move-code sequences (0 UP, 1 DOWN, 2 LEFT, 3 RIGHT), n of them.

    Returns:
        Rewards, shape (n, 4).
    """
    n = len(routes)
    if n == 0:
        return np.zeros((0, 4))
    steps = min(maze.budget, max((len(r) for r in routes), default=0))
    moves = np.full((n, max(steps, 1)), _NO_MOVE, dtype=np.int64)
    for i, route in enumerate(routes):
        cut = list(route[:steps])
        moves[i, : len(cut)] = cut
    table = maze.step_table
    bits = maze.item_bit
    position = np.full(n, maze.start, dtype=np.int64)
    collected = np.zeros(n, dtype=np.int64)
    reached = np.zeros(n, dtype=bool)
    for t in range(steps):
        position = np.where(reached, position, table[position, moves[:, t]])
        reached |= position == maze.end
        collected |= np.where(reached, 0, bits[position])
    return maze.reward_from_masks(collected, reached)


def scored_walk(maze: Maze, route: Sequence[int]) -> tuple[int, ...]:
    """What the reward of a route depends on: the cells it enters, in order, up to E.

    The first `budget` moves are simulated; a move that leaves the walker in place (into a wall or off
    the grid) enters no cell, and the walk ends on the first arrival at E. Routes with the same walk
    score the same: they differ only by moves after E, beyond the budget, or into walls, and so are
    copies of one route (the maze's de-duplication key). A walk that does not end on E scores zero.

    Args:
        maze: The maze.
        route: Move codes.

    Returns:
        The flat indices of the cells entered, shape (n_cells,), the last one E if the route reaches it.
    """
    table = maze.next_cell
    position, walk = maze.start, []
    for move in list(route)[: maze.budget]:
        following = int(table[position, move])
        if following == position:
            continue
        position = following
        walk.append(position)
        if position == maze.end:
            break
    return tuple(walk)


def simulate_reference(maze: Maze, route: Sequence[int]) -> NDArray[np.float64]:
    """A plain move-by-move simulator of the reward definition, for tests and benchmarks.

    Args:
        maze: The maze.
        route: Move codes.

    Returns:
        The reward, shape (4,).
    """
    r, c = divmod(maze.start, maze.width)
    seen: set[tuple[int, int]] = set()
    reached = False
    for move in list(route)[: maze.budget]:
        dr, dc = MOVE_DELTAS[move]
        nr, nc = r + dr, c + dc
        if 0 <= nr < maze.height and 0 <= nc < maze.width and maze.rows[nr][nc] != WALL:
            r, c = nr, nc
        if maze.rows[r][c] == "E":
            reached = True
            break
        if maze.rows[r][c] in "GDL":
            seen.add((r, c))
    if not reached:
        return np.zeros(4)
    got = {kind: sum(maze.rows[rr][cc] == kind for rr, cc in seen) for kind in "GDL"}
    n_gold, n_diamond, n_lava = maze.count("G"), maze.count("D"), maze.count("L")
    return np.array(
        [
            1.0,
            got["G"] / n_gold if n_gold else 0.0,
            got["D"] / n_diamond if n_diamond else 0.0,
            1.0 - got["L"] / n_lava if n_lava else 1.0,
        ]
    )
