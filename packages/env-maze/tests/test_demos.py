"""Warm-start demonstrations: the default is base-model-like (random valid routes), `solver` the ablation."""

from __future__ import annotations

import numpy as np
import pytest

from env_maze import MazeEnv, solve


@pytest.mark.parametrize("style", ["random", "solver"])
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
    assert env.demonstration_style == "random"
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
