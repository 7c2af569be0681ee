"""The named-reward rules and the settings check, without verifiers (they run in every venv)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import vpo_core
import vpo_verifiers
from vpo_core.spec import RewardSpec
from vpo_verifiers._core import check_taskset_options, env_handle, score_reply

SPEC = RewardSpec(
    names=("a", "b", "c"),
    w_star=(0.5, 0.25, 0.25),
    low=(0.0, 0.0, -1.0),
    high=(1.0, 1.0, 1.0),
    descriptions=("a", "b", "c"),
)
R = np.array([[0.2, 1.0, 0.0], [0.6, 0.0, 0.4], [0.6, 0.0, 0.4], [0.0, 0.5, 1.0]])  # w*-scores .35 .40 .40 .375


def test_best_is_the_first_w_star_best_answers_whole_vector():
    named, chosen = vpo_verifiers.named_rewards(R, SPEC, "best")
    assert chosen == 1  # a tie with row 2 goes to the first
    assert named.tolist() == [0.6, 0.0, 0.4]
    assert named @ SPEC.w_star_array == pytest.approx((R @ SPEC.w_star_array).max())


def test_max_is_the_per_dimension_ideal_point():
    named, chosen = vpo_verifiers.named_rewards(R, SPEC, "max")
    assert chosen is None
    assert named.tolist() == [0.6, 1.0, 1.0]
    assert named @ SPEC.w_star_array > (R @ SPEC.w_star_array).max()  # an upper bound, strict here


def test_one_answer_gives_its_own_vector_under_both_rules():
    row = np.array([[0.1, 0.2, -0.3]])
    for rule in vpo_verifiers.SET_REWARDS:
        assert vpo_verifiers.named_rewards(row, SPEC, rule)[0].tolist() == [0.1, 0.2, -0.3]


@pytest.mark.parametrize(
    ("rewards", "rule", "message"),
    [
        (np.zeros((2, 2)), "best", r"shape \(\.\.\., 3\)"),
        (np.full((1, 3), 2.0), "best", "out of bounds"),
        (np.full((1, 3), np.nan), "max", "NaN"),
        (np.zeros((1, 3)), "mean", "set_reward must be one of"),
    ],
)
def test_bad_matrices_and_rules_are_refused(rewards, rule, message):
    with pytest.raises(ValueError, match=message):
        vpo_verifiers.named_rewards(rewards, SPEC, rule)


def test_settings_check_infers_the_mode_and_names_bad_values():
    assert check_taskset_options("maze-v1", {}, "test", None, 1, "best") == "single"
    assert check_taskset_options("maze", {}, "train", None, 3, "max") == "multi"  # unversioned: latest
    assert check_taskset_options("maze-v1", {}, "test", "multi", 1, "best") == "multi"
    for args, message in [
        (("nope-v1", {}, "test", None, 1, "best"), "unknown env id 'nope-v1'"),
        (("maze-v1", {}, "dev", None, 1, "best"), "splits"),
        (("maze-v1", {1: 2}, "test", None, 1, "best"), "option names"),
        (("maze-v1", {"x": object()}, "test", None, 1, "best"), "JSON values"),
        (("maze-v1", {}, "test", "single", 2, "best"), "m must be 1"),
        (("maze-v1", {}, "test", None, True, "best"), "positive int"),
        (("maze-v1", {}, "test", None, 1, "sum"), "set_reward"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_taskset_options(*args)


def test_score_reply_scores_once_with_the_envs_own_call():
    handle = env_handle("maze-v1", {})
    assert env_handle("maze-v1", {}) is handle  # one env per (id, options)
    maze = vpo_core.make("maze-v1")
    task = maze.tasks("test")[0]
    reply = maze.reference_completion(task, mode="multi", m=3)
    score = score_reply(handle, handle.task("test", 0), reply, mode="multi", m=3, set_reward="best")
    matrix = maze.score(task, reply, mode="multi", m=3)
    assert score.rewards.tolist() == matrix.tolist()
    assert score.info()["rewards"] == matrix.tolist()
    assert score.metrics()["parsed"] == 1.0
    assert score.metrics()["success"] == 1.0
    assert [score.metrics()[f"max/{n}"] for n in maze.reward_spec.names] == matrix.max(axis=0).tolist()
    floor = score_reply(handle, handle.task("test", 0), "no answer", mode="single", m=1, set_reward="best")
    assert floor.rewards.tolist() == maze.score(task, "no answer").tolist() == [[0.0, 0.0, 0.0, 0.0]]
    assert floor.metrics()["success"] == 0.0
    with pytest.raises(IndexError, match="100 'test' tasks"):
        handle.task("test", 100)


@pytest.mark.skipif(importlib.util.find_spec("verifiers") is not None, reason="verifiers is installed here")
def test_without_verifiers_the_classes_say_what_to_install():
    with pytest.raises(ImportError, match=r"vpo-verifiers\[verifiers\]"):
        _ = vpo_verifiers.VPOTaskset
