"""env-toolrl: the real 80-row test split, golden rewards, parsing edge cases, loader, CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import vpo_core
from env_toolrl import ToolRLEnv, score_reply, value_match
from env_toolrl._parse import ToolCall, parse_tool_calls
from env_toolrl.cli import main as cli_main
from vpo_core.testing import check_env

DATA = Path(__file__).parent / "data"
THINK = "<think> reasoning </think>\n"


_ENV = ToolRLEnv(data_dir=DATA)


@pytest.fixture(scope="module")
def env():
    return _ENV


def call(name, **params):
    return ToolCall(name=name, parameters=params)


def reply(*calls_json: str, think: bool = True) -> str:
    body = "\n".join(calls_json)
    return (THINK if think else "") + f"<tool_call>\n{body}\n</tool_call>"


# -------------------------------------------------------------------------------- real data
def test_every_real_test_row_loads_and_its_gold_scores_one(env):
    tasks = env.tasks("test")
    assert len(tasks) == 80
    assert [t.payload.source_index for t in tasks] == list(range(80))
    rewards = np.stack([env.score(t, env.reference_completion(t))[0] for t in tasks])
    np.testing.assert_array_equal(rewards, 1.0)
    multi = np.stack([env.score(t, env.reference_completion(t, mode="multi", m=3), mode="multi", m=3) for t in tasks])
    np.testing.assert_array_equal(multi, 1.0)
    n_calls = [
        len(parse_tool_calls(t.payload.ground_truth.split("<tool_call>")[-1].split("</tool_call>")[0]))
        for t in tasks
        if "<tool_call>" in t.payload.ground_truth
    ]
    assert len(n_calls) == 71  # 71 rows call tools, 9 only respond (datasets.md §4.1)
    assert sorted(set(n_calls)) == [1, 2, 3, 4, 5]


def test_conformance(env):
    check_env(env, max_tasks=4)


def test_prompts_keep_the_upstream_messages_and_append_the_papers_block(env):
    task = env.tasks("test")[0]
    single = env.render_prompt(task)
    assert [m["role"] for m in single] == ["system", "user"]
    assert single[1]["content"].startswith("**Dialogue Records History**")
    multi = env.render_prompt(task, mode="multi", m=4)
    assert multi[0] == single[0]
    added = multi[1]["content"][len(single[1]["content"]) :]
    assert added.startswith(
        "\n\n---\nADDITIONAL INSTRUCTION (overrides the single-attempt output format above): "
        "Provide 4 different attempts at the task."
    )
    assert "<response_1>...</response_1> through <response_4>...</response_4>" in added
    assert added.endswith("Closing tags are required on every outer attempt.")


# ---------------------------------------------------------------------------------- goldens
GOLD = (call("Get_News", page=1, topic="azure cloud"), call("lookup", domain="example.com"))


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # exact, with a different name spelling and "1" for 1
        (
            reply(
                '{"name": "getnews", "parameters": {"page": "1", "topic": "Azure cloud"}}',
                '{"name": "lookup", "parameters": {"domain": "example.com"}}',
            ),
            [1, 1, 1, 1],
        ),
        # a JSON array instead of one object per line
        (
            THINK + '<tool_call>[{"name": "Get_News", "arguments": {"page": 1, "topic": "azure cloud"}}, '
            '{"name": "lookup", "parameters": {"domain": "example.com"}}]</tool_call>',
            [1, 1, 1, 1],
        ),
        # wrong second tool: names F1 1/2; keys: pair 1 full, pair 2 zero overlap
        (
            reply(
                '{"name": "Get_News", "parameters": {"page": 1, "topic": "azure cloud"}}',
                '{"name": "whois", "parameters": {"host": "example.com"}}',
            ),
            [1, 0.5, 0.5, 0.5],
        ),
        # right keys, wrong page, half-right topic: values (0 + token F1 2/3)/2 = 1/3, then 1 for lookup
        (
            reply(
                '{"name": "Get_News", "parameters": {"page": 2, "topic": "azure"}}',
                '{"name": "lookup", "parameters": {"domain": "example.com"}}',
            ),
            [1, 1, 1, (1 / 3 + 1) / 2],
        ),
        # one call only: the first gold call takes it (a 0 score is still taken), the second gold is unpaired
        (reply('{"name": "lookup", "parameters": {"domain": "example.com"}}'), [1, 2 / 3, 0, 0]),
        # no think block: format 0, the rest still scored
        (reply('{"name": "lookup", "parameters": {"domain": "example.com"}}', think=False), [0, 2 / 3, 0, 0]),
        # malformed JSON: no call parsed
        (reply('{"name": "lookup", "parameters": {"domain": '), [0, 0, 0, 0]),
        # the same call twice: name multiset F1 1/2; Get_News takes one copy (score 0), lookup the other
        (
            reply(
                '{"name": "lookup", "parameters": {"domain": "example.com"}}',
                '{"name": "lookup", "parameters": {"domain": "example.com"}}',
            ),
            [1, 0.5, 0.5, 0.5],
        ),
        ("", [0, 0, 0, 0]),
        ("I would call the news tool.", [0, 0, 0, 0]),
    ],
)
def test_golden_vectors_for_calls(text, expected):
    np.testing.assert_allclose(score_reply(text, GOLD), expected, atol=1e-12)


def test_response_only_gold():
    assert score_reply(THINK + "<response> Please give the text. </response>", ()).tolist() == [1, 1, 1, 1]
    assert score_reply("<response> Sure. </response>", ()).tolist() == [0, 1, 1, 1]
    # calling a tool when the gold only answers
    assert score_reply(reply('{"name": "x", "parameters": {}}'), ()).tolist() == [0, 0, 0, 0]
    assert score_reply("   \n", ()).tolist() == [0, 0, 0, 0]


@pytest.mark.parametrize(
    ("predicted", "gold", "expected"),
    [
        (True, True, 1),
        ("false", False, 0),
        (0, False, 0),  # a boolean matches only the same boolean
        ("3.50", 3.5, 1),
        (3, 3.0, 1),
        ("three", 3, 0),
        (4, 3, 0),
        (["a", "B"], ["b", "a"], 1),
        ("a", ["a", "b"], 2 / 3),
        ([], [], 1),
        ({"x": 2}, {"x": 2, "y": 3}, 2 / 3),  # objects: 2·Σ value matches / (|pred| + |gold|)
        ({"x": 1}, {"x": 2, "y": 3}, 0),
        ("x", {"x": 1}, 0),
        ("the Main Library", "main library", 0.8),  # articles are words (issue 37: "vitamin a" ≠ "vitamin")
        ("Main  LIBRARY", "main library", 1),
        ("main hall", "main library", 0.5),
        (1, "1", 1),
        (None, "none", 0),
        (None, None, 1),
        (35, "3.5", 0),
    ],
)
def test_value_match_rules(predicted, gold, expected):
    assert value_match(predicted, gold) == pytest.approx(expected)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300), st.integers(1, 4))
def test_any_text_scores_within_bounds(text, m):
    env = _ENV
    for task in env.tasks("test")[:3]:
        rewards = env.score(task, text, mode="multi", m=m)
        assert rewards.shape == (m, 4)
        assert np.all((rewards >= 0) & (rewards <= 1))


def test_adversarial_inputs_stay_total(env):
    task = env.tasks("test")[3]
    huge = THINK + "<tool_call>\n" + "[" * 100_000 + "\n</tool_call>"
    assert env.score(task, huge).shape == (1, 4)
    nested = reply('{"name": "x", "parameters": ' + '{"a": ' * 50 + "1" + "}" * 51)
    assert env.score(task, nested).shape == (1, 4)
    unicode = reply('{"name": "名前", "parameters": {"城市": "東京"}}')
    assert np.all(np.isfinite(env.score(task, unicode)))


def test_multi_mode_parses_response_tags_and_dedupes_by_vector(env):
    task = env.tasks("test")[0]
    gold = task.payload.ground_truth
    text = f"<response_1>{gold}</response_1> <response_2>{gold}</response_2> <response_3></response_3>"
    cands = env.parse(task, text, mode="multi", m=3)
    np.testing.assert_array_equal(env.rewards(task, cands), [[1] * 4, [1] * 4, [0] * 4])
    np.testing.assert_array_equal(
        env.dedupe_rewards(task, cands, env.rewards(task, cands)), [[1] * 4, [0] * 4, [0] * 4]
    )


# ----------------------------------------------------------------------------------- loader
def test_loader_reads_a_train_file_of_the_same_schema_and_splits_are_independent(tmp_path):
    env = vpo_core.make("toolrl-v1", data_dir=str(DATA))
    assert len(env.tasks("train")) == 6
    (tmp_path / "test.parquet").write_bytes((DATA / "test.parquet").read_bytes())
    only_test = ToolRLEnv(data_dir=tmp_path)
    assert len(only_test.tasks("test")) == 80  # the absent train file is no error until asked for
    with pytest.raises(FileNotFoundError, match=r"train\.parquet does not exist"):
        only_test.tasks("train")


def test_offline_without_data_says_how_to_get_it(monkeypatch):
    monkeypatch.delenv("VPO_TOOLRL_DIR", raising=False)
    with pytest.raises(FileNotFoundError, match=r"(?s)curl -fL -o toolrl/train.parquet .*data_dir.*VPO_TOOLRL_DIR"):
        ToolRLEnv().tasks("test")
    monkeypatch.setenv("VPO_TOOLRL_DIR", str(DATA))
    assert len(ToolRLEnv().tasks("test")) == 80
    with pytest.raises(ValueError, match="unknown toolrl-v1 split"):
        ToolRLEnv(data_dir=DATA).tasks("validation")


# -------------------------------------------------------------------------------------- CLI
def test_cli_export_and_score(tmp_path, capsys):
    out = tmp_path / "test.jsonl"
    assert cli_main(["export", f"env.data_dir={DATA}", f"out={out}"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 80
    completions = tmp_path / "c.jsonl"
    lines = [json.dumps({"index": r["index"], "completion": r["reference"]}) for r in rows[:10]]
    lines += [json.dumps({"index": r["index"], "completion": ""}) for r in rows[:10]]
    completions.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert cli_main(["score", f"env.data_dir={DATA}", f"completions={completions}", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["mean_reward"] == {"format": 0.5, "tool_name": 0.5, "arg_key": 0.5, "arg_value": 0.5}
    assert summary["best_at_k"] == {"best@1": 0.5}
