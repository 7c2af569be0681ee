"""Warm-start demonstrations of maze-v1: complete completions in the env's own format.

Two styles (the env option ``demonstrations=``):

- ``"random"`` (default): a base-model-like warm start. Each answer slot holds an independent route
  drawn uniformly at random among all the maze's achievable outcomes (one shortest route per
  distinct reward vector, from the exact solver), so every route is valid-looking and reaches E
  within the budget, but the slots are neither Pareto-first nor spread across trade-offs on purpose:
  two slots may repeat an outcome, and a Pareto-optimal route is no likelier than any other.
- ``"solver"``: the earlier warm start, kept as an ablation: routes from the solver's list with the
  Pareto-optimal outcomes first (up to 16 candidates), m distinct ones per multi-answer completion,
  which builds answer diversity and near-optimality into the starting policy.
- ``"direct"``: a zero-shot-like warm start that heads for E: like ``"random"``, each slot holds an
  independent achievable outcome's route, but outcomes are drawn with probability proportional to
  ``exp(-0.7 * treasures)`` (treasures = gold + diamond tiles collected), so the direct S -> E routes
  dominate and full treasure corners are rare (miniature v2's second start; the audit's ``warm_hard``
  prior, in which scalar RL can settle on a poorer route).
"""

from __future__ import annotations

import numpy as np

from env_maze._maze import Maze
from env_maze._solver import route_text, solve
from vpo_core.multi_answer import render_numbered
from vpo_core.types import Mode

__all__ = ["DEMONSTRATION_STYLES", "demonstration_routes", "render_demonstration", "treasures_collected"]

DEMONSTRATION_STYLES = ("random", "solver", "direct")
DIRECT_DECAY = 0.7  # the direct style's weight per treasure tile collected
_SOLVER_POOL = 16  # the solver style draws among the first 16 routes (Pareto-optimal first)


def demonstration_routes(maze: Maze, *, style: str, n: int, rng: np.random.Generator, index: int = 0) -> list[str]:
    """The route texts of one completion in the given style (fewer only if the maze has no valid route).

    Args:
        maze: The maze.
        style: ``"random"``, ``"solver"`` or ``"direct"`` (see the module docstring).
        n: Routes wanted (1 in single mode, m in multi mode).
        rng: Source of the draws.
        index: The task's index (orders the solver style's non-Pareto routes, as before).

    Returns:
        Route texts such as ``"RIGHT DOWN ..."``; empty if no route reaches E.
    """
    solution = solve(maze)
    routes = solution.routes
    if not routes:
        return []
    if style == "random":
        picks = rng.integers(len(routes), size=n)
        return [route_text(routes[int(i)]) for i in picks]
    if style == "direct":
        weights = np.exp(-DIRECT_DECAY * treasures_collected(maze, solution.rewards))
        picks = rng.choice(len(routes), size=n, p=weights / weights.sum())
        return [route_text(routes[int(i)]) for i in picks]
    if style != "solver":
        raise ValueError(f"demonstrations must be one of {DEMONSTRATION_STYLES}, got {style!r}.")
    pareto = [r for r, keep in zip(routes, solution.pareto, strict=True) if keep]
    rest = [r for r, keep in zip(routes, solution.pareto, strict=True) if not keep]
    order = np.random.default_rng([0, index]).permutation(len(rest))
    pool = (pareto + [rest[i] for i in order])[:_SOLVER_POOL]
    if n == 1:
        return [route_text(pool[int(rng.integers(len(pool)))])]
    picks = rng.choice(len(pool), size=n, replace=len(pool) < n)
    return [route_text(pool[int(i)]) for i in picks]


def treasures_collected(maze: Maze, rewards: np.ndarray) -> np.ndarray:
    """Gold and diamond tiles collected by routes with these rewards.

    Args:
        maze: The maze.
        rewards: Reward vectors (completion, gold, diamond, avoid_lava), shape (n, 4).

    Returns:
        Tile counts, shape (n,) (integers stored as float).
    """
    return np.rint(rewards[:, 1] * maze.count("G") + rewards[:, 2] * maze.count("D"))


def render_demonstration(routes: list[str], *, mode: Mode, m: int) -> str | None:
    """Routes in the env's completion format (``<answer>`` in single mode, numbered tags in multi mode)."""
    if not routes:
        return None
    if mode == "single":
        return f"<answer>{routes[0]}</answer>"
    return render_numbered("route", routes[:m])
