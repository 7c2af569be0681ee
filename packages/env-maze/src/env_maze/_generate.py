"""The paper's maze generator (appendix "Maze / Generation"), draw for draw.

Each maze comes from a fresh ``random.Random(seed)``; a rejected seed is skipped, never retried.
The random draws are made in the same order as the authors' released generator, so seed s gives
the same maze as theirs and the splits are the paper's mazes: train = the first 1000 surviving seeds
from 42, test = the first 100 from 4242.
"""

from __future__ import annotations

import random
from collections import deque
from functools import cache
from typing import cast

from env_maze._maze import BONUS, DIAMOND, EMPTY, END, GOLD, LAVA, START, WALL, Maze

__all__ = ["SPLITS", "generate", "split_mazes", "split_seeds"]

SIZE = 9
BUDGET_SLACK = 7
UNREACHABLE_LEG = 98  # the authors' stand-in length for a leg with no path
SPLITS = {"train": (42, 1000), "test": (4242, 100)}
_DIRS = ((-1, 0), (1, 0), (0, -1), (0, 1))  # up, down, left, right: the order of every neighbour scan


# each cell's in-grid neighbours in `_DIRS` order, computed once (the generator scans them millions of times)
_NEIGHBOURS = tuple(
    tuple(tuple((r + dr, c + dc) for dr, dc in _DIRS if 0 <= r + dr < SIZE and 0 <= c + dc < SIZE) for c in range(SIZE))
    for r in range(SIZE)
)


def _open_neighbours(grid: list[list[str]], r: int, c: int) -> int:
    return sum(grid[nr][nc] == EMPTY for nr, nc in _NEIGHBOURS[r][c])


def _carve_spanning_tree(rng: random.Random) -> list[list[str]]:
    grid = [[WALL] * SIZE for _ in range(SIZE)]
    r0 = rng.randrange(SIZE)
    c0 = rng.randrange(SIZE)
    grid[r0][c0] = EMPTY
    frontier = list(_NEIGHBOURS[r0][c0])
    while frontier:
        r, c = frontier.pop(rng.randrange(len(frontier)))
        if grid[r][c] != WALL or _open_neighbours(grid, r, c) != 1:
            continue
        grid[r][c] = EMPTY
        frontier.extend((nr, nc) for nr, nc in _NEIGHBOURS[r][c] if grid[nr][nc] == WALL)
    return grid


def _open_cycles(grid: list[list[str]], rng: random.Random, n_openings: int) -> None:
    candidates = [
        (r, c) for r in range(SIZE) for c in range(SIZE) if grid[r][c] == WALL and _open_neighbours(grid, r, c) >= 2
    ]
    rng.shuffle(candidates)
    for r, c in candidates[:n_openings]:
        grid[r][c] = EMPTY


def _distances(grid: list[list[str]], source: tuple[int, int], blocked: str = WALL) -> dict[tuple[int, int], int]:
    """BFS distances from `source` to every reachable cell; cells whose char is in `blocked` are walls."""
    dist = {source: 0}
    queue = deque([source])
    while queue:
        r, c = queue.popleft()
        for nr, nc in _NEIGHBOURS[r][c]:
            if (nr, nc) not in dist and grid[nr][nc] not in blocked:
                dist[(nr, nc)] = dist[(r, c)] + 1
                queue.append((nr, nc))
    return dist


def _leg(dist: dict[tuple[int, int], int], target: tuple[int, int]) -> int:
    return dist.get(target, UNREACHABLE_LEG)


def generate(seed: int) -> Maze | None:
    """The maze of one seed, or None if the generator rejects that seed.

    Args:
        seed: Seed of ``random.Random``.

    Returns:
        The maze (9×9, budget = max(via_gold, via_diam) + 7), or None.
    """
    rng = random.Random(seed)
    grid = _carve_spanning_tree(rng)
    _open_cycles(grid, rng, rng.randint(18, 28))

    corners = [(0, 0), (0, SIZE - 1), (SIZE - 1, 0), (SIZE - 1, SIZE - 1)]
    start, end = rng.choice([((0, 0), (SIZE - 1, SIZE - 1)), ((0, SIZE - 1), (SIZE - 1, 0))])
    others = [corner for corner in corners if corner not in (start, end)]
    rng.shuffle(others)
    gold_corner, diamond_corner = others
    centre = (SIZE // 2, SIZE // 2)
    for r, c in (start, end, gold_corner, diamond_corner, centre):
        grid[r][c] = EMPTY

    from_start = _distances(grid, start)
    if end not in from_start:
        return None
    from_gold = _distances(grid, gold_corner)
    from_diamond = _distances(grid, diamond_corner)
    from_centre = _distances(grid, centre)
    via_gold = _leg(from_start, gold_corner) + _leg(from_gold, end)
    via_diamond = _leg(from_start, diamond_corner) + _leg(from_diamond, end)
    via_centre = _leg(from_start, centre) + _leg(from_centre, end)
    if max(via_gold, via_diamond, via_centre) > 90:
        return None
    budget = max(via_gold, via_diamond) + BUDGET_SLACK
    via_both = _leg(from_start, gold_corner) + _leg(from_gold, diamond_corner) + _leg(from_diamond, end)
    if via_both <= budget:
        return None

    grid[start[0]][start[1]] = START
    grid[end[0]][end[1]] = END
    grid[centre[0]][centre[1]] = BONUS

    def zone(corner: tuple[int, int]) -> list[tuple[int, int]]:
        return [
            (r, c)
            for r in range(SIZE)
            for c in range(SIZE)
            if abs(r - corner[0]) + abs(c - corner[1]) <= 2 and grid[r][c] == EMPTY
        ]

    gold_zone, diamond_zone = zone(gold_corner), zone(diamond_corner)
    if len(gold_zone) < 3 or len(diamond_zone) < 3:
        return None
    n_gold = rng.randint(3, min(5, len(gold_zone)))
    n_diamond = rng.randint(3, min(5, len(diamond_zone)))
    for r, c in rng.sample(gold_zone, n_gold):
        grid[r][c] = GOLD
    for r, c in rng.sample(diamond_zone, n_diamond):
        grid[r][c] = DIAMOND
    interior = [(r, c) for r in range(2, SIZE - 2) for c in range(2, SIZE - 2) if grid[r][c] == EMPTY]
    n_lava = min(rng.randint(3, 5), len(interior))
    for r, c in rng.sample(interior, n_lava):
        grid[r][c] = LAVA

    if _leg(_distances(grid, start, blocked=WALL + LAVA), end) > budget:
        return None
    return Maze(rows=tuple("".join(row) for row in grid), budget=budget, seed=seed)


@cache
def split_mazes(split: str) -> tuple[Maze, ...]:
    """The mazes of a split, in order (generated once per process; `Maze` is immutable).

    Raises:
        ValueError: For an unknown split.
    """
    if split not in SPLITS:
        raise ValueError(f"unknown maze split {split!r}; choose one of {sorted(SPLITS)}.")
    first, count = SPLITS[split]
    mazes: list[Maze] = []
    seed = first
    while len(mazes) < count:
        maze = generate(seed)
        if maze is not None:
            mazes.append(maze)
        seed += 1
    return tuple(mazes)


def split_seeds(split: str) -> tuple[int, ...]:
    """The seeds of a split's mazes, in order.

    Raises:
        ValueError: For an unknown split.
    """
    return tuple(cast(int, maze.seed) for maze in split_mazes(split))
