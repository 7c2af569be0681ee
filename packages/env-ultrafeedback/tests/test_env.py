"""ultrafeedback-v1: the protocol (check_env) with a tiny local reward model, data, prompts, parsing, profile."""

from __future__ import annotations

import dataclasses
import json
import pickle
from pathlib import Path

import numpy as np
import pytest

from env_ultrafeedback import DIMENSIONS, OBJECTIVE_INDICES, SPEC, UltrafeedbackEnv
from env_ultrafeedback._data import parse_rows
from env_ultrafeedback._scorer import ARMORM_OBJECTIVES
from vpo_core import METHODS, VerlRecipe
from vpo_core.data import DataError
from vpo_core.registry import resolve_env_class
from vpo_core.testing import check_env

DATA = Path(__file__).parent / "data" / "ultrafeedback"


def test_check_env_with_the_in_process_tiny_model(tiny_rm, make_env):
    check_env(make_env(tiny_rm))


def test_the_entry_point_names_this_class():
    assert resolve_env_class("ultrafeedback-v1") is UltrafeedbackEnv


def test_the_five_dimensions_are_armorms_ultrafeedback_objectives_in_head_order():
    assert [ARMORM_OBJECTIVES[i] for i in OBJECTIVE_INDICES] == [
        "ultrafeedback-overall_score",
        "ultrafeedback-instruction_following",
        "ultrafeedback-truthfulness",
        "ultrafeedback-honesty",
        "ultrafeedback-helpfulness",
    ]
    assert len(ARMORM_OBJECTIVES) == 19
    assert SPEC.names == DIMENSIONS
    assert SPEC.w_star == (1.0, 0.0, 0.0, 0.0, 0.0)  # the "overall" dim is the GRPO scalar
    assert np.all(SPEC.low_array == 0.0)
    assert np.all(SPEC.high_array == 1.0)


def test_splits_are_disjoint_deterministic_and_deduplicated(make_env):
    env = make_env()
    train, test = env.tasks("train"), env.tasks("test")
    assert len(test) == 3
    assert len(train) == 8 - 3  # 9 rows, one instruction repeated
    instructions = [t.payload.instruction for t in train + test]
    assert len(set(instructions)) == len(instructions)
    assert [t.id for t in make_env().tasks("test")] == [t.id for t in test]
    assert all(t.index == i for i, t in enumerate(test))
    assert [t.id for t in make_env(train_size=2).tasks("train")] == [t.id for t in train[:2]]


def test_sizes_that_leave_no_train_prompt_are_refused(make_env):
    with pytest.raises(ValueError, match="leaves no train prompt"):
        make_env(test_size=8).tasks("test")


def test_a_row_not_in_the_upstream_format_is_named(tmp_path):
    row = json.loads((DATA / "rows.jsonl").read_text().splitlines()[0])
    del row["instruction"]
    with pytest.raises(DataError, match=r"row 1: instruction: missing"):
        parse_rows([row], "x.jsonl")
    (tmp_path / "rows.jsonl").write_text(
        json.dumps({**row, "instruction": "q", "completions": [{"model": "m"}]}) + "\n"
    )
    with pytest.raises(DataError, match=r"completions\[0\]\.response"):
        UltrafeedbackEnv(data_dir=tmp_path, test_size=1).tasks("test")


def test_an_empty_data_dir_says_what_to_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="hf download openbmb/UltraFeedback"):
        UltrafeedbackEnv(data_dir=tmp_path).tasks("test")


def test_prompts_single_is_the_instruction_and_multi_asks_for_numbered_replies(make_env):
    env = make_env()
    task = env.tasks("test")[0]
    assert env.render_prompt(task)[-1]["content"] == task.payload.instruction
    multi = env.render_prompt(task, mode="multi", m=3)[-1]["content"]
    assert multi.startswith(task.payload.instruction)
    assert "<response_1>...</response_1>, <response_2>...</response_2>, <response_3>...</response_3>" in multi


def test_parsing_strips_think_blocks_and_reads_numbered_replies(make_env):
    env = make_env()
    task = env.tasks("test")[0]
    [c] = env.parse(task, "<think>\n\n</think>\n\n  A reply.  ")
    assert c.answer == "A reply."
    cands = env.parse(task, "<response_1>one</response_1> <response_3> three </response_3>", mode="multi", m=3)
    assert [c.answer for c in cands] == ["one", None, "three"]
    assert env.parse(task, "<think>only thinking</think>")[0].answer is None


def test_missing_replies_score_zero_without_calling_the_scorer(make_env):
    env = make_env(scorer_url="http://127.0.0.1:9")  # nothing listens there: a call would raise
    task = env.tasks("test")[0]
    assert env.score(task, "").tolist() == [[0.0] * 5]
    np.testing.assert_array_equal(env.score(task, "no tags", mode="multi", m=3), np.zeros((3, 5)))


def test_duplicates_are_equal_text_up_to_case_and_space(make_env):
    env = make_env()
    task = env.tasks("test")[0]
    a, b, c = env.parse(
        task,
        "<response_1>Hello  World</response_1><response_2>hello world</response_2><response_3>other</response_3>",
        mode="multi",
        m=3,
    )
    assert env.dedup_key(task, a) == env.dedup_key(task, b) != env.dedup_key(task, c)


def test_demonstrations_are_the_best_rated_upstream_completions(make_env):
    env = make_env()
    task = next(t for t in env.tasks("train") + env.tasks("test") if t.payload.instruction.startswith("How many legs"))
    assert env.demonstration(task) == "Fish have no legs; they swim with fins."
    multi = env.demonstration(task, mode="multi", m=3)
    assert [c.answer for c in env.parse(task, multi, mode="multi", m=3)] == [
        "Fish have no legs; they swim with fins.",
        "Fish have four legs.",
        None,
    ]


def test_env_pickles_its_configuration_not_its_scorer(tiny_rm, make_env):
    env = make_env(tiny_rm)
    task = env.tasks("test")[0]
    before = env.score(task, "A reply.")
    copy = pickle.loads(pickle.dumps(env))
    assert copy._scorer is None
    np.testing.assert_array_equal(copy.score(copy.tasks("test")[0], "A reply."), before)
    assert copy.scorer is env.scorer  # one in-process model per process


def test_unknown_scorer_is_refused():
    with pytest.raises(ValueError, match="scorer must be"):
        UltrafeedbackEnv(scorer="remote")


def test_profile_is_the_papers_cell_with_sources():
    recipe = UltrafeedbackEnv.profile.recipe
    assert recipe.model == "Qwen/Qwen3-4B"
    assert recipe.epochs == 2
    assert set(recipe.methods) == {"grpo", "gdpo", "goal_cond", "multi_rlvr", "vpo"} <= set(METHODS)
    unset = dataclasses.MISSING
    required = [f.name for f in dataclasses.fields(VerlRecipe) if f.default is unset and f.default_factory is unset]
    assert "train_batch" in required
    missing = [name for name in (*required, "methods") if name not in recipe.sources]
    assert not missing
    profile = UltrafeedbackEnv.profile
    assert profile.eval_samples == 50
    assert profile.chat_template_kwargs == {"enable_thinking": False}
