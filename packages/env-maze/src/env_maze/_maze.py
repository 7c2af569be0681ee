"""The `Maze` record: a grid with start, exit, items and a step budget, plus lookup tables.

Cells are numbered row-major (``cell = row * width + col``). Moves are numbered 0..3 in the order
UP, DOWN, LEFT, RIGHT; `next_cell` maps (cell, move) to the cell the walker ends on (itself when a
wall or the border blocks the move).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

import numpy as np
from numpy.typing import NDArray

__all__ = ["MOVES", "MOVE_DELTAS", "Maze"]

MOVES = ("UP", "DOWN", "LEFT", "RIGHT")
MOVE_DELTAS = ((-1, 0), (1, 0), (0, -1), (0, 1))
WALL, START, END, GOLD, DIAMOND, LAVA, BONUS, EMPTY = "#", "S", "E", "G", "D", "L", "B", "."
_CELLS = {WALL, START, END, GOLD, DIAMOND, LAVA, BONUS, EMPTY}


@dataclass(frozen=True, eq=True)
class Maze:
    """One maze.

    Attributes:
        rows: The grid, one string of cell characters per row (``#`` wall, ``.`` empty, ``S`` start,
            ``E`` exit, ``G`` gold, ``D`` diamond, ``L`` lava, ``B`` bonus).
        budget: Step budget: only the first `budget` moves count.
        seed: The generator seed (None for a user-supplied grid).
    """

    rows: tuple[str, ...]
    budget: int
    seed: int | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if not self.rows or len({len(r) for r in self.rows}) != 1 or not self.rows[0]:
            raise ValueError("a maze grid must be a non-empty rectangle of cells (every row the same length).")
        bad = {ch for row in self.rows for ch in row} - _CELLS
        if bad:
            raise ValueError(f"unknown maze cell(s) {sorted(bad)}; use # . S E G D L B.")
        text = "".join(self.rows)
        if text.count(START) != 1 or text.count(END) != 1:
            raise ValueError(
                f"a maze needs exactly one S and one E, got {text.count(START)} S and {text.count(END)} E."
            )
        if not isinstance(self.budget, int) or self.budget < 1:
            raise ValueError(f"budget must be a positive int, got {self.budget!r}.")

    def __reduce__(self) -> tuple[type[Maze], tuple[tuple[str, ...], int, int | None]]:
        # pickle the definition only, never the cached lookup tables
        return (Maze, (self.rows, self.budget, self.seed))

    @classmethod
    def from_text(cls, grid: str, budget: int, seed: int | None = None) -> Maze:
        """Build a maze from prompt-style text: one row per line, cells separated by spaces."""
        if not isinstance(grid, str):
            raise ValueError(f"grid must be a str, got {type(grid).__name__}.")
        lines = [line.split() for line in grid.strip().splitlines() if line.strip()]
        if any(len(cell) != 1 for line in lines for cell in line):
            raise ValueError("grid cells must be single characters separated by spaces, e.g. 'S . #'.")
        return cls(rows=tuple("".join(line) for line in lines), budget=budget, seed=seed)

    # ------------------------------------------------------------------------------- geometry
    @property
    def height(self) -> int:
        """Number of rows."""
        return len(self.rows)

    @property
    def width(self) -> int:
        """Number of columns."""
        return len(self.rows[0])

    @property
    def text(self) -> str:
        """The grid as in the prompt: rows of space-separated cells."""
        return "\n".join(" ".join(row) for row in self.rows)

    @cached_property
    def flat(self) -> str:
        """All cells, row-major."""
        return "".join(self.rows)

    def cell(self, row: int, col: int) -> int:
        """Row-major index of (row, col)."""
        return row * self.width + col

    @cached_property
    def start(self) -> int:
        """Cell index of S."""
        return self.flat.index(START)

    @cached_property
    def end(self) -> int:
        """Cell index of E."""
        return self.flat.index(END)

    def count(self, kind: str) -> int:
        """Number of cells of a kind (``"G"``, ``"D"``, ``"L"``, ...)."""
        return self.flat.count(kind)

    @cached_property
    def next_cell(self) -> NDArray[np.int64]:
        """Transition table, shape (cells, 4): the cell after each move (blocked moves stay)."""
        h, w = self.height, self.width
        table = np.empty((h * w, 4), dtype=np.int64)
        for r in range(h):
            for c in range(w):
                for m, (dr, dc) in enumerate(MOVE_DELTAS):
                    nr, nc = r + dr, c + dc
                    ok = 0 <= nr < h and 0 <= nc < w and self.rows[nr][nc] != WALL
                    table[r * w + c, m] = nr * w + nc if ok else r * w + c
        table.setflags(write=False)
        return table

    @cached_property
    def step_table(self) -> NDArray[np.int64]:
        """`next_cell` with a fifth "stay" column (move code 4 pads routes of different lengths), shape (cells, 5)."""
        table = np.concatenate([self.next_cell, np.arange(self.next_cell.shape[0])[:, None]], axis=1)
        table.setflags(write=False)
        return table

    @cached_property
    def item_cells(self) -> NDArray[np.int64]:
        """Cells holding gold, diamonds and lava (in that order, each row-major), shape (n_items,)."""
        cells = [i for kind in (GOLD, DIAMOND, LAVA) for i, ch in enumerate(self.flat) if ch == kind]
        return np.asarray(cells, dtype=np.int64)

    @cached_property
    def item_bit(self) -> NDArray[np.int64]:
        """Per cell, the bit of its item in a collected-items mask (0 for cells without one), shape (cells,)."""
        bits = np.zeros(len(self.flat), dtype=np.int64)
        bits[self.item_cells] = 1 << np.arange(self.item_cells.size, dtype=np.int64)
        bits.setflags(write=False)
        return bits

    @cached_property
    def kind_masks(self) -> tuple[int, int, int]:
        """Bit masks selecting the gold, diamond and lava bits of a collected-items mask."""
        n_gold, n_diamond, n_lava = self.count(GOLD), self.count(DIAMOND), self.count(LAVA)
        gold = (1 << n_gold) - 1
        diamond = ((1 << n_diamond) - 1) << n_gold
        lava = ((1 << n_lava) - 1) << (n_gold + n_diamond)
        return gold, diamond, lava

    def reward_from_masks(self, masks: NDArray[np.int64], reached: NDArray[np.bool_]) -> NDArray[np.float64]:
        """Reward vectors from collected-item masks.

        Args:
            masks: Collected-items masks, shape (n,).
            reached: Whether each trajectory reached E within the budget, shape (n,).

        Returns:
            Rewards (completion, gold, diamond, avoid_lava), shape (n, 4); zeros where not reached.
        """
        gold_mask, diamond_mask, lava_mask = self.kind_masks
        counts = np.stack([_popcount(masks & km) for km in (gold_mask, diamond_mask, lava_mask)], axis=-1)
        totals = np.array([self.count(GOLD), self.count(DIAMOND), self.count(LAVA)], dtype=np.float64)
        frac = np.divide(counts, totals, out=np.zeros(counts.shape), where=totals > 0)
        lava = np.where(totals[2] > 0, 1.0 - frac[:, 2], 1.0)
        rewards = np.stack([np.ones(len(masks)), frac[:, 0], frac[:, 1], lava], axis=-1)
        return np.where(np.asarray(reached)[:, None], np.clip(rewards, 0.0, 1.0), 0.0)


def _popcount(x: NDArray[np.int64]) -> NDArray[np.int64]:
    x = np.asarray(x, dtype=np.int64)
    count = np.zeros_like(x)
    while np.any(x):
        count += x & 1
        x = x >> 1
    return count
