"""env-eureqa: the paper's mixed split, prompts, exact-match rewards, loader errors, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpo_core
from env_eureqa import EureqaEnv, parse_entities, score_entities
from env_eureqa._data import mixed_split
from env_eureqa.cli import main as cli_main
from vpo_core.testing import check_env, empty_offline_hub

DATA = Path(__file__).parent / "data"
GOLD = ("Robert_Rodriguez", "From_Dusk_till_Dawn:_The_Series", "United_States", "Austin,_Texas", "Saturn_Award")


_ENV = EureqaEnv(data_dir=DATA)


@pytest.fixture(scope="module")
def env():
    return _ENV


def test_mixed_split_follows_the_paper(env):
    train, test = env.tasks("train"), env.tasks("test")
    # 4 normal rows + 7 usable hard rows (one 5-mask row is skipped): train 4 + 7 // 2, test the rest
    assert (len(train), len(test)) == (7, 4)
    assert [t.payload.source for t in train[:4]] == ["questions_normal_5"] * 4
    assert [t.payload.idx for t in train[:4]] == [0, 1, 2, 3]  # normal rows in Hub order
    hard_order = [int(i) for i in np.random.default_rng(0).permutation(7)]
    assert [t.payload.idx for t in train[4:]] + [t.payload.idx for t in test] == hard_order
    assert {t.payload.source for t in test} == {"questions_hard_5"}
    # the paper's sizes follow from the upstream ones: 428 normal + 681 hard / 682 hard
    sizes = mixed_split(list(range(428)), list(range(1363)))
    assert (len(sizes["train"]), len(sizes["test"])) == (1109, 682)


def test_conformance(env):
    check_env(env, max_tasks=3)


def test_prompts_are_the_papers(env):
    task = env.tasks("test")[0]
    single = env.render_prompt(task)[0]["content"]
    assert "Narrative:\n" + "\n".join(task.payload.sentences) + "\n\n" in single
    assert "\n  - Person A\n  - Film B\n" in single
    assert "<entity_C>...</entity_C>   (resolves Country C)" in single
    multi = env.render_prompt(task, mode="multi", m=4)[0]["content"]
    assert multi.split("Provide 4")[0] == single.split("Replace each")[0]
    assert "Provide 4 different reasoning chains" in multi
    assert "<response_1>...</response_1> through <response_4>...</response_4>" in multi
    assert "<entity_A>" not in multi.split("Provide 4")[0]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("".join(f"<entity_{c}>{g}</entity_{c}>" for c, g in zip("ABCDE", GOLD, strict=True)), [1, 1, 1, 1, 1]),
        (
            "<entity_A>the robert rodriguez!</entity_A><ENTITY_b> From Dusk till Dawn: The Series </entity_B>",
            [1, 1, 0, 0, 0],
        ),
        ("<entity_A>Robert Rodriguez</entity_A><entity_C>United_Kingdom</entity_C>", [1, 0, 0, 0, 0]),
        ("<entity_A></entity_A><entity_B> </entity_B>", [0, 0, 0, 0, 0]),
        ("Robert_Rodriguez", [0, 0, 0, 0, 0]),
        ("<entity_A>Robert_Rodriguez", [0, 0, 0, 0, 0]),  # unclosed
        ("<entity_A>Austin, Texas</entity_A><entity_D>austin texas</entity_D>", [0, 0, 0, 1, 0]),
        ("<entity_A>x</entity_A><entity_A>Robert_Rodriguez</entity_A>", [0, 0, 0, 0, 0]),  # the first tag counts
    ],
)
def test_golden_vectors(text, expected):
    assert score_entities(parse_entities(text), GOLD).tolist() == expected


def test_multi_answers_and_dedupe(env):
    task = env.tasks("test")[1]
    right = env.reference_completion(task)
    wrong = right.replace(task.payload.entities[0], "Nobody")
    text = f"<response_1>{right}</response_1><response_2>{right}</response_2><response_3>{wrong}</response_3>"
    cands = env.parse(task, text, mode="multi", m=3)
    np.testing.assert_array_equal(env.rewards(task, cands), [[1] * 5, [1] * 5, [0, 1, 1, 1, 1]])
    np.testing.assert_array_equal(
        env.dedupe_rewards(task, cands, env.rewards(task, cands)), [[1] * 5, [0, 1, 1, 1, 1], [0] * 5]
    )


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(1, 4))
def test_any_text_scores_zero_or_one(text, m):
    rewards = _ENV.score(_ENV.tasks("test")[0], text, mode="multi", m=m)
    assert rewards.shape == (m, 5)
    assert set(np.unique(rewards)) <= {0.0, 1.0}


def test_offline_without_data_names_both_ways(monkeypatch, tmp_path):
    empty_offline_hub(monkeypatch, tmp_path / "hf")
    with pytest.raises(FileNotFoundError, match=r"(?s)vincentleebang/EUREQA.*data_dir=<folder>"):
        EureqaEnv().tasks("test")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        EureqaEnv(data_dir=tmp_path).tasks("test")
    with pytest.raises(ValueError, match="unknown eureqa-v1 split"):
        EureqaEnv(data_dir=DATA).tasks("validation")


def test_registry_and_cli(tmp_path, capsys):
    env = vpo_core.make("eureqa-v1", data_dir=str(DATA))
    assert len(env.tasks("test")) == 4
    out = tmp_path / "t.jsonl"
    assert cli_main(["export", f"env.data_dir={DATA}", "mode=multi", f"out={out}"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    completions = tmp_path / "c.jsonl"
    completions.write_text(
        "".join(json.dumps({"index": r["index"], "completion": r["reference"]}) + "\n" for r in rows)
    )
    capsys.readouterr()
    assert cli_main(["score", f"env.data_dir={DATA}", f"completions={completions}", "mode=multi", "json=true"]) == 0
    assert json.loads(capsys.readouterr().out)["best_at_k"] == {"best@1": 1.0, "best@3": 1.0}
