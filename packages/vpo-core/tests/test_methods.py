"""The method registry: records, decorators, and the two rules that live only there."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from vpo_core import METHODS, AdvantageConfig, RolloutBatch, compute_advantages, get_method
from vpo_core.methods import (
    NORMALIZERS,
    OBJECTIVES,
    check_mode_m,
    goal_weights,
    register_method,
    register_normalizer,
    register_objective,
)
from vpo_core.normalizers import group_zscore
from vpo_core.weights import dirichlet_weights

ROOT = Path(__file__).resolve().parents[3]


def test_every_method_names_a_registered_objective_and_normaliser():
    paper = {"grpo", "random_w", "goal_cond", "gdpo", "max_at_k", "maxrl", "multi_rlvr", "vpo"}
    controls = {"vpo_w_star_max", "vpo_k1", "vpo_unshared"}  # issue 38's controls of the mechanism
    assert set(METHODS) == paper | controls
    assert all(METHODS[name].description.startswith("control:") for name in controls)
    for method in METHODS.values():
        assert method.objective in OBJECTIVES, method
        assert method.normalizer in NORMALIZERS, method
        assert method.resolve_m() == method.m
        assert method.description


@pytest.mark.parametrize(
    ("name", "m", "expected"),
    [("vpo", None, 3), ("vpo", 5, 5), ("grpo", None, 1), ("grpo", 1, 1), ("multi_rlvr", 2, 2)],
)
def test_resolve_m_defaults_and_accepts(name, m, expected):
    assert get_method(name).resolve_m(m) == expected


@pytest.mark.parametrize(
    ("name", "m", "message"),
    [
        ("grpo", 3, "'grpo' is single-answer, so m must be 1"),
        ("vpo", 1, r"m must be >= 2 \(got m=1\)"),
        ("vpo", 0, "m must be a positive int"),
        ("vpo", 2.5, "m must be a positive int"),
        ("vpo", True, "m must be a positive int"),
    ],
)
def test_resolve_m_refuses_what_does_not_fit(name, m, message):
    with pytest.raises(ValueError, match=message):
        get_method(name).resolve_m(m)


def test_check_mode_m_is_the_prompt_rule():
    check_mode_m("single", 1)
    check_mode_m("multi", 1)  # a prompt may ask for one numbered answer; methods ask for more
    with pytest.raises(ValueError, match="mode must be one of"):
        check_mode_m("pair", 2)
    with pytest.raises(ValueError, match="m must be 1"):
        check_mode_m("single", 2)


def test_goal_weights_are_keyed_by_task_and_shared_by_every_caller():
    w = goal_weights(4, seed=3, task_id="maze-17")
    assert w.shape == (4,)
    assert np.all(w >= 0)
    assert w.sum() == pytest.approx(1.0)
    assert np.array_equal(w, dirichlet_weights(4, 1, seed=3, key=("goal", "maze-17"))[0])
    assert not np.array_equal(w, goal_weights(4, seed=3, task_id="maze-18"))
    assert np.array_equal(get_method("goal_cond").prompt_goal_weights(4, seed=3, task_id="maze-17"), w)
    assert get_method("grpo").prompt_goal_weights(4, seed=3, task_id="maze-17") is None


def test_unknown_and_duplicate_names_are_refused():
    with pytest.raises(ValueError, match="unknown method 'ppo'; choose one of"):
        get_method("ppo")
    with pytest.raises(ValueError, match="already registered"):
        register_method("vpo", mode="multi", m=3, objective="vpo", normalizer="zscore")
    with pytest.raises(ValueError, match="already registered"):
        register_normalizer("zscore")(lambda scores, **_: scores)
    with pytest.raises(ValueError, match="m must be 1"):
        register_method("bad", mode="single", m=2, objective="w_star", normalizer="zscore")
    assert "bad" not in METHODS


def test_a_new_method_is_one_registration_away():
    added_objective = "best_of_m_w_star"
    added_normaliser = "centre"

    @register_objective(added_objective)
    def best_answer(r, inputs):
        return (r @ inputs.w_star).max(axis=-1)

    @register_normalizer(added_normaliser, options=())
    def centre(scores, *, std, eps):
        x = np.asarray(scores, dtype=np.float64)
        return x - x.mean(axis=1, keepdims=True)

    try:
        register_method("best_of_m", mode="multi", m=2, objective=added_objective, normalizer=added_normaliser)
        rewards = np.array([[[[1.0, 0.0], [0.0, 0.0]], [[0.0, 0.0], [0.0, 0.5]]]])  # (1, 2, 2, 2)
        got = compute_advantages(RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse("best_of_m"))
        np.testing.assert_allclose(got, [[0.125, -0.125]])
        with pytest.raises(ValueError, match=r"\['k'\] do not apply to method 'best_of_m'"):
            compute_advantages(
                RolloutBatch.of(rewards, w_star=[0.5, 0.5]), AdvantageConfig.parse("best_of_m", options={"k": 2})
            )
    finally:
        METHODS.pop("best_of_m", None)
        OBJECTIVES.pop(added_objective, None)
        NORMALIZERS.pop(added_normaliser, None)


def test_a_method_naming_an_unregistered_objective_fails_clearly(monkeypatch):
    monkeypatch.setitem(
        vpo_core.methods.METHODS,
        "ghost",
        vpo_core.methods.Method("ghost", "single", 1, "nowhere", "zscore", False, "test"),
    )
    with pytest.raises(ValueError, match="objective 'nowhere', which is not registered"):
        compute_advantages(RolloutBatch.of(np.zeros((1, 2, 1, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("ghost"))


def test_registered_normalisers_are_the_public_functions():
    assert NORMALIZERS["zscore"].fn is group_zscore
    assert NORMALIZERS["max_at_k"].options == ("k",)
    assert NORMALIZERS["maxrl"].options == ("divide_by_n",)
    assert set(NORMALIZERS["gdpo"].options) == {"response_lengths", "gdpo_weights"}


def _sources() -> list[Path]:
    """vpo-core's and vpo-engines' sources (the library and the engines that call it) and the apps."""
    roots = [ROOT / "packages" / "vpo-core" / "src", ROOT / "packages" / "vpo-engines" / "src", ROOT / "apps"]
    return [path for root in roots for path in sorted(root.rglob("*.py"))]


@pytest.mark.parametrize(
    ("rule", "pattern"),
    [
        ("mode/m", re.compile(r"""mode\s*==\s*["']single["']\s+and\s+[\w.]*\bm\b\s*!=\s*1""")),
        ("goal weights", re.compile(r"""dirichlet_weights\([^)]*key\s*=\s*\(\s*(namespace|["'][\w-]*goal["'])""")),
    ],
)
def test_each_rule_is_written_once(rule, pattern):
    where = [str(path.relative_to(ROOT)) for path in _sources() if pattern.search(path.read_text())]
    assert where == ["packages/vpo-core/src/vpo_core/methods.py"], f"the {rule} rule is written in {where}"
