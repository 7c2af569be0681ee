"""The maze's outcome table and the qualitative outcome of the tabular mechanism study, pinned at a fixed seed.

The pinned claim (the VPO paper's mechanism, issue 21): trained from a warm start on the maze's
enumerated outcomes, GRPO collapses in reward space (valid-only diversity near 0) while VPO keeps its
spread and covers the front: higher E_w[best@5] than every single-answer method by a clear margin, and
at least their Pareto coverage. The control `vpo_w_star_max` (VPO's best-of-m with the Dirichlet draws
replaced by w*) keeps VPO's m slots and its max but drops the incentive; it must fail the same check,
so a change that removes VPO's incentive fails this test.
"""

import numpy as np
import pytest

import vpo_core
from env_maze import solve
from vpo_core.methods import METHODS
from vpo_core.tabular import Start, run_study, stack_tables
from vpo_core.tabular.study import StudyResult, arm

SINGLE = [name for name, spec in METHODS.items() if spec.mode == "single"]
STEPS = 300


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


@pytest.fixture(scope="module")
def study(env) -> StudyResult:
    tasks = env.tasks("test")[:4]
    candidates = stack_tables([env.outcome_table(t) for t in tasks], variants=1)
    w_star = np.asarray(env.reward_spec.w_star)
    arms = [arm(name, w_star=w_star, task_ids=candidates.task_ids) for name in [*SINGLE, "vpo", "vpo_w_star_max"]]
    return run_study(
        candidates,
        w_star=w_star,
        starts=[Start("warm_uniform", 0.75, 0.0)],
        arms=arms,
        seeds=[0],
        steps=STEPS,
        checkpoints=[STEPS],
        lr=0.1,
    )


def _mean(study: StudyResult, name: str, metric: str) -> float:
    return float(study.metric("warm_uniform", name, STEPS, metric).mean())


def _incentive_holds(study: StudyResult, name: str) -> bool:
    best_single_ew = max(_mean(study, s, "e_w_best_at_5") for s in SINGLE)
    best_single_pareto = max(_mean(study, s, "pareto_covered") for s in SINGLE)
    return (
        _mean(study, name, "diversity_valid") > 0.9
        and _mean(study, name, "e_w_best_at_5") > best_single_ew + 0.04
        and _mean(study, name, "pareto_covered") >= best_single_pareto
    )


def test_grpo_collapses_in_reward_space(study):
    assert _mean(study, "grpo", "diversity_valid") < 0.1
    assert _mean(study, "grpo", "completion") > 0.99  # it collapsed onto valid routes, not onto failures


def test_vpo_keeps_its_spread_and_covers_the_front(study):
    assert _incentive_holds(study, "vpo")


def test_the_check_fails_without_vpos_incentive(study):
    assert not _incentive_holds(study, "vpo_w_star_max")
