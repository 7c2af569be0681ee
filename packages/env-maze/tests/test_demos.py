"""Warm-start demonstrations: the default is base-model-like (random valid routes), `solver` the ablation."""

from __future__ import annotations

import numpy as np
import pytest

from env_maze import MazeEnv, solve


@pytest.mark.parametrize("style", ["random", "solver", "direct"])
def test_every_demonstration_is_valid_and_in_format(style):
    env = MazeEnv(train_size=20, test_size=1, demonstrations=style)
    rng = np.random.default_rng(0)
    for task in env.tasks("train"):
        single = env.demonstration(task, mode="single", m=1, rng=rng)
        assert env.score(task, single)[0, 0] == 1.0  # reaches E within the budget
        multi = env.demonstration(task, mode="multi", m=3, rng=rng)
        rewards = env.score(task, multi, mode="multi", m=3)
        assert rewards.shape == (3, 4)
        assert (rewards[:, 0] == 1.0).all()


def test_random_style_is_not_pareto_first():
    env = MazeEnv(train_size=30, test_size=1)
    assert env.config.demonstrations == "random"
    rng = np.random.default_rng(1)
    pareto_share, expected = [], []
    for task in env.tasks("train"):
        solution = solve(task.payload)
        front = {tuple(r) for r in solution.pareto_rewards}
        for _ in range(20):
            rewards = env.score(task, env.demonstration(task, mode="multi", m=3, rng=rng), mode="multi", m=3)
            pareto_share.append(np.mean([tuple(r) in front for r in rewards]))
        expected.append(solution.pareto.mean())
    # slots are uniform over all outcomes: their Pareto share matches the share of Pareto outcomes
    assert np.mean(pareto_share) == pytest.approx(np.mean(expected), abs=0.05)
    solver = MazeEnv(train_size=30, test_size=1, demonstrations="solver")
    solver_share = [
        np.mean(
            [
                tuple(r) in {tuple(p) for p in solve(t.payload).pareto_rewards}
                for r in solver.score(t, solver.demonstration(t, mode="multi", m=3, rng=rng), mode="multi", m=3)
            ]
        )
        for t in solver.tasks("train")
    ]
    # the solver style draws among the first 16 routes, Pareto-optimal ones first
    assert np.mean(solver_share) > 1.5 * np.mean(pareto_share)


def test_unknown_style_is_refused():
    with pytest.raises(ValueError, match="demonstrations must be one of"):
        MazeEnv(demonstrations="oracle")


def test_direct_style_favours_routes_with_few_treasures():
    """The direct style's outcomes carry fewer treasures than the random style's, and all reach E."""
    from env_maze._demos import treasures_collected

    counts = {}
    for style in ("random", "direct"):
        env = MazeEnv(train_size=40, test_size=1, demonstrations=style)
        rng = np.random.default_rng(0)
        per_style = []
        for task in env.tasks("train"):
            for _ in range(5):
                rewards = env.score(task, env.demonstration(task, mode="multi", m=3, rng=rng), mode="multi", m=3)
                assert np.all(rewards[:, 0] == 1.0)  # every route reaches E
                per_style.extend(treasures_collected(task.payload, rewards))
        counts[style] = np.array(per_style)
    assert counts["direct"].mean() < 0.6 * counts["random"].mean()
    # the direct routes are mostly treasure-free or nearly so; the random ones are not
    assert np.mean(counts["direct"] <= 1) > np.mean(counts["random"] <= 1) + 0.2


def test_treasures_collected_matches_the_tiles_on_the_route():
    from env_maze._demos import treasures_collected
    from env_maze._solver import solve

    task = MazeEnv(train_size=1, test_size=1).tasks("train")[0]
    solution = solve(task.payload)
    counts = treasures_collected(task.payload, solution.rewards)
    maze = task.payload
    for route, count in zip(solution.routes, counts, strict=True):
        r, c = divmod(maze.start, maze.width)
        seen = set()
        from env_maze._maze import MOVE_DELTAS, WALL

        for move in route:
            dr, dc = MOVE_DELTAS[move]
            nr, nc = r + dr, c + dc
            if 0 <= nr < maze.height and 0 <= nc < maze.width and maze.rows[nr][nc] != WALL:
                r, c = nr, nc
            if maze.rows[r][c] == "E":
                break
            if maze.rows[r][c] in "GD":
                seen.add((r, c))
        assert count == len(seen)
