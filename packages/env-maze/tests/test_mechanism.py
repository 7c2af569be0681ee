"""The maze's outcome table (`TextEnv.outcome_table`, the input of vpo-lab's tabular mechanism study).

The study's claim pinned on these tables lives with the study: packages/vpo-lab/tests/test_maze_mechanism.py.
"""

import numpy as np
import pytest

import vpo_core
from env_maze import solve


@pytest.fixture(scope="module")
def env():
    return vpo_core.make("maze-v1", test_size=8)


def test_outcome_table_rescored_by_env_score_equals_stored_vectors(env):
    for task in env.tasks("test")[:3]:
        table = env.outcome_table(task, invalid=4)
        rescored = np.concatenate([env.score(task, text) for text in table.texts])
        np.testing.assert_array_equal(rescored, table.rewards)
        solution = solve(task.payload)
        assert table.valid.sum() == len(solution.routes)
        assert (~table.valid).sum() == 4
        np.testing.assert_array_equal(table.rewards[table.pareto], env.pareto_front(task))
        assert np.all(table.rewards[~table.valid] == 0)
        assert len(set(table.texts)) == len(table.texts)
        # effort = treasure tiles collected: a full corner is the most demanding outcome
        best = np.argmax(table.effort)
        assert table.rewards[best, 1] == 1.0 or table.rewards[best, 2] == 1.0


def test_pareto_front_is_the_solver_front(env):
    task = env.tasks("test")[0]
    front = env.pareto_front(task)
    assert front.shape[1] == 4
    assert front.shape[0] >= 2
    np.testing.assert_array_equal(front, solve(task.payload).pareto_rewards)
    front[0, 0] = -1  # a copy: the solver's cached answer is untouched
    assert solve(task.payload).pareto_rewards[0, 0] == 1.0


def test_outcome_table_refuses_bad_invalid_counts(env):
    with pytest.raises(ValueError, match="invalid must be"):
        env.outcome_table(env.tasks("test")[0], invalid=-1)
