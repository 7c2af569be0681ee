"""env-musique: loader and hop-stratified split, prompts, golden rewards, offline errors, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpo_core
from env_musique import MusiqueEnv, answer_f1, parse_reply, score_reply
from env_musique._data import stratified_test
from env_musique.cli import main as cli_main
from vpo_core.testing import check_env, empty_offline_hub

DATA = Path(__file__).parent / "data"
_ENV = MusiqueEnv(data_dir=DATA, test_per_hop=2)


@pytest.fixture(scope="module")
def env():
    return _ENV


def test_loader_and_stratified_split(env):
    rows = [json.loads(line) for line in (DATA / "musique_ans_v1.0_dev.jsonl").read_text().splitlines()]
    test = env.tasks("test")
    assert len(test) == 6
    assert sorted(t.metadata["hops"] for t in test) == [2, 2, 3, 3, 4, 4]
    expected = stratified_test(rows, per_hop=2, seed=42)
    assert [t.payload.qid for t in test] == [r["id"] for r in expected]
    # per hop: the first two of a seed-42 permutation of that hop's rows, in Hub order
    three_hop = [r["id"] for r in rows if len(r["question_decomposition"]) == 3]
    chosen = [three_hop[int(i)] for i in np.random.default_rng(42).permutation(3)[:2]]
    assert sorted(t.payload.qid for t in test if t.metadata["hops"] == 3) == sorted(chosen)
    assert len(env.tasks("train")) == 3
    with pytest.raises(ValueError, match="fewer than per_hop=5"):
        MusiqueEnv(data_dir=DATA, test_per_hop=5).tasks("test")


def test_conformance(env):
    check_env(env, max_tasks=3)


def test_prompts_are_the_papers(env):
    task = env.tasks("test")[0]
    single = env.render_prompt(task)[0]["content"]
    assert single.startswith(
        "Read the paragraphs below and answer the multi-hop question. "
        "Identify which paragraphs support your answer.\n\nParagraphs:\n[0] (Title: "
    )
    assert single.count("\n[") == 20
    assert single.endswith(
        "First reason about which paragraphs are relevant, then output your supporting paragraph indices and answer.\n"
        "<support>comma-separated paragraph indices (e.g., 3, 7, 12)</support>\n<answer>your answer</answer>"
    )
    multi = env.render_prompt(task, mode="multi", m=5)[0]["content"]
    assert multi.endswith(
        "Give 5 different answers in <response_i>...</response_i> tags, each with "
        "<support>indices</support> and <answer>answer</answer>."
    )
    assert multi.split("Give 5")[0] == single.split("First reason")[0]


SUPPORT3 = (7, 2, 15)
GOLDS = ("Green Bay Packers", "Packers", "GB Packers")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("<support>7, 2, 15</support><answer>Green Bay Packers</answer>", [1, 1, 1, 1, 1]),
        ("<support>15,2</support><answer>the Packers!</answer>", [0, 1, 1, 1, 1]),  # alias, articles, punctuation
        ("<support>7</support><answer>Green Bay</answer>", [1, 0, 0, 1, 0.8]),  # F1 = 2·2/(2+3)
        ("<support>7, 2, 15</support>", [0, 0, 0, 0, 0]),  # no answer
        ("<support>7, 2, 15</support><answer>  </answer>", [0, 0, 0, 0, 0]),  # empty answer
        # citing everything: only the first 4 distinct indices count
        ("<support>" + ", ".join(map(str, range(20))) + "</support><answer>x</answer>", [0, 1, 0, 1, 0]),
        ("<support>[7], 2 15, 99, 2, 2</support><answer>Green Bay Packers</answer>", [0, 1, 0, 1, 1]),
        ("<SUPPORT>7</SUPPORT><ANSWER>Green Bay Packers</ANSWER>", [0, 0, 0, 0, 0]),  # tags are case-sensitive
    ],
)
def test_golden_vectors(text, expected):
    np.testing.assert_allclose(score_reply(text, SUPPORT3, GOLDS), expected, atol=1e-12)


def test_citation_cap_counts_out_of_range_indices():
    assert parse_reply("<support>99, 98, 97, 96, 7</support><answer>a</answer>") == ((99, 98, 97, 96), "a")
    assert answer_f1("The Green Bay Packers.", GOLDS) == 1.0
    assert answer_f1("", ("x",)) == 0.0


def test_multi_answers_repeated_are_deduplicated(env):
    task = env.tasks("test")[0]
    ref = env.reference_completion(task)
    text = "".join(f"<response_{i}>{ref}</response_{i}>" for i in (1, 2, 3))
    cands = env.parse(task, text, mode="multi", m=3)
    np.testing.assert_array_equal(env.rewards(task, cands), np.ones((3, 5)))
    np.testing.assert_array_equal(
        env.dedupe_rewards(task, cands, env.rewards(task, cands)), [[1] * 5, [0] * 5, [0] * 5]
    )
    assert env.parse(task, text.replace("response_2", "RESPONSE_2"), mode="multi", m=3)[1].answer is None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(1, 4))
def test_any_text_scores_within_bounds(text, m):
    rewards = _ENV.score(_ENV.tasks("test")[0], text, mode="multi", m=m)
    assert rewards.shape == (m, 5)
    assert np.all((rewards >= 0) & (rewards <= 1))


def test_offline_errors_name_both_ways(monkeypatch, tmp_path):
    empty_offline_hub(monkeypatch, tmp_path / "hf")
    with pytest.raises(FileNotFoundError, match=r"(?s)dgslibisey/MuSiQue.*data_dir=<folder>"):
        MusiqueEnv().tasks("test")
    (tmp_path / "musique_ans_v1.0_dev.jsonl").write_text((DATA / "musique_ans_v1.0_dev.jsonl").read_text())
    only_dev = MusiqueEnv(data_dir=tmp_path, test_per_hop=2)
    assert len(only_dev.tasks("test")) == 6  # the absent train file is no error until asked for
    with pytest.raises(FileNotFoundError, match=r"musique_ans_v1\.0_train\.jsonl does not exist"):
        only_dev.tasks("train")


def test_registry_and_cli(tmp_path, capsys):
    env = vpo_core.make("musique-v1", data_dir=str(DATA), test_per_hop=1)
    assert len(env.tasks("test")) == 3
    config = [f"env.data_dir={DATA}", "env.test_per_hop=2"]
    out = tmp_path / "t.jsonl"
    assert cli_main(["export", *config, f"out={out}"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    completions = tmp_path / "c.jsonl"
    completions.write_text(
        "".join(json.dumps({"index": r["index"], "completion": r["reference"]}) + "\n" for r in rows)
    )
    capsys.readouterr()
    assert cli_main(["score", *config, f"completions={completions}", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mean_reward"]["answer_f1"] == 1.0
