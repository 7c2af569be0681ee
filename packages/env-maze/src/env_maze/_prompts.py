"""The maze prompts of the paper's appendix ("Domain Prompts / Maze"), filled in per maze.

Choices where the paper's example is inconsistent (written down in the README):
* The multi-route block says "its own 14-step budget" while the same prompt says 27 steps per
  route; we render the maze's own budget in both places.
* The paper's box wraps the route instructions over four lines at arbitrary points; we render
  them as one paragraph line (the tag list grows with m), keeping every other line as printed.
* The paper prints ``--`` in two bullets where the authors' code has an em dash; we follow the paper.
"""

from __future__ import annotations

from env_maze._maze import DIAMOND, GOLD, LAVA, Maze
from vpo_core.multi_answer import numbered_tag_list

__all__ = ["multi_prompt", "single_prompt"]

_HEADER = """\
Navigate a {height}x{width} maze from S to E. Collect gold and diamonds, avoid lava.

Grid:
{grid}

- Move: UP, DOWN, LEFT, RIGHT. # is a wall -- you cannot enter it.
- Do not leave the grid.
- Collect: G (Gold), D (Diamond), B (Bonus) tiles by stepping on them.
- Avoid: L (Lava) tiles. Stepping on lava costs you.
- Visiting a B cell multiplies your other scores -- explore!
- You MUST reach E. If you don't reach E, your score is zero everywhere.
- Items only count if collected BEFORE you reach E (the trajectory ends at E).
- You have {budget} steps{per_route}.

This maze has {gold} Gold, {diamond} Diamond, {lava} Lava, and 1 Bonus tiles.
"""

_SINGLE_TAIL = "Output moves in <answer>...</answer> tags, e.g., <answer>UP UP RIGHT</answer>."

_MULTI_TAIL = """\
Reason briefly about the maze, then provide {m} genuinely different routes from S to E.
Each route is a sequence of UP/DOWN/LEFT/RIGHT moves (space-separated).
Wrap each route in numbered tags ({tags}). Inside each tag put ONLY moves (no arrows, no coordinates, \
no prose); any reasoning goes outside the tags. Each route has its own {budget}-step budget and must reach E \
(score is zero if it doesn't).
Format example (m=3):
  <route_1>RIGHT RIGHT RIGHT RIGHT DOWN DOWN DOWN DOWN</route_1>
  <route_2>DOWN DOWN DOWN DOWN RIGHT RIGHT RIGHT RIGHT</route_2>
  <route_3>RIGHT DOWN RIGHT DOWN RIGHT DOWN RIGHT DOWN</route_3>"""


def _header(maze: Maze, per_route: bool) -> str:
    return _HEADER.format(
        height=maze.height,
        width=maze.width,
        grid=maze.text,
        budget=maze.budget,
        per_route=" per route" if per_route else "",
        gold=maze.count(GOLD),
        diamond=maze.count(DIAMOND),
        lava=maze.count(LAVA),
    )


def single_prompt(maze: Maze) -> str:
    """The single-solution prompt (GRPO, MaxRL, GDPO, Max@k, Random-w, Goal-cond)."""
    return _header(maze, per_route=False) + _SINGLE_TAIL


def multi_prompt(maze: Maze, m: int) -> str:
    """The multi-solution rewrite (VPO, Multi-RLVR): m routes in ``<route_i>`` tags."""
    return _header(maze, per_route=True) + _MULTI_TAIL.format(
        m=m, tags=numbered_tag_list("route", m), budget=maze.budget
    )
