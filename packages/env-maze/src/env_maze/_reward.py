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

__all__ = ["ReducedWalk", "reduced_walk", "score_routes", "scored_walk", "simulate_reference"]

ReducedWalk = tuple[tuple[int, ...], tuple[int, ...]]
"""A route's de-duplication key: (its loop-erased path of cells, the item cells it collects)."""

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


def reduced_walk(maze: Maze, route: Sequence[int]) -> ReducedWalk:
    """What the reward sees of a route, as a route: its reduced path and the items it collects.

    The walk (`scored_walk`) is reduced in two steps. First every back-and-forth cancels (a step into
    a cell and straight back, repeatedly, as in a free reduction): the result is the same wherever such
    pairs are inserted or removed. Then the loops left are erased in order (on re-entering a cell
    already on the path, the loop since that cell is cut), which leaves a simple path from S to where
    the walk ends. The item cells (gold, diamond, lava) the walk enters are kept as a set beside the
    path, so a detour that collects an item no other part of the route collects still makes a
    different route, and one that collects nothing new does not. Two routes with the same key have the
    same reward: the reward depends only on whether the walk reaches E (both reductions keep the
    walk's end, so the path ends on E exactly when the route reaches it) and on the set of items
    collected before E. Routes whose reduced paths differ (around an obstacle on the left and on the
    right) stay distinct even when their rewards are equal. Linear in the walk.

    Args:
        maze: The maze.
        route: Move codes.

    Returns:
        (path, items): the cells of the reduced path after S, shape (n_path,), ending on E if the
        route reaches it; the collected item cells in increasing order, shape (n_items,).
    """
    walk = scored_walk(maze, route)
    bits = maze.item_bit
    reduced = [maze.start]  # free reduction: a step back to the cell before the last one cancels both
    for cell in walk:
        if len(reduced) >= 2 and reduced[-2] == cell:
            reduced.pop()
        else:
            reduced.append(cell)
    path: list[int] = []  # loop erasure, in order
    where: dict[int, int] = {}
    for cell in reduced:
        at = where.get(cell)
        if at is None:
            where[cell] = len(path)
            path.append(cell)
            continue
        for dropped in path[at + 1 :]:
            del where[dropped]
        del path[at + 1 :]
    items = sorted({cell for cell in walk if bits[cell]})
    return tuple(path[1:]), tuple(items)


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
