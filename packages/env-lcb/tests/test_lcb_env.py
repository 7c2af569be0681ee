"""env-lcb: DeepCoder and code_generation_lite loaders, test capping, prompts, parsing, per-test rewards."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from env_lcb import LcbEnv, extract_code
from env_lcb.cli import main as cli_main
from vpo_core.errors import ConfigError
from vpo_core.testing import check_env

pytestmark = pytest.mark.sandbox
DATA = Path(__file__).parent / "data"
_ENV = LcbEnv(data_dir=DATA / "deepcoder", time_limit_s=2.0)


def test_deepcoder_splits_formats_and_test_cap():
    train, test = _ENV.tasks("train"), _ENV.tasks("test")
    assert [t.payload.pid for t in train] == ["primeintellect/0", "primeintellect/1", "taco/0", "lcbv5/0"]
    assert [t.payload.pid for t in test] == ["lcbv5/0", "lcbv5/1"]
    capped = train[3].payload
    assert len(capped.tests) == 32  # 41 tests: the 32 smallest are kept, the oversized one dropped
    assert all(len(i) < 100 for i, _ in capped.tests)
    assert train[1].payload.fn_name == "double"
    assert train[1].payload.tests == (("3", "6"), ("0", "0"))  # argument lists and one-element outputs unwrapped
    assert train[2].payload.tests[0] == ("[1, 2, 3]", "6")  # TACO's dict format
    assert test[1].payload.fn_name == "twoSum"
    assert _ENV.spec_for(test[0]).names == ("tc_0", "tc_1", "tc_2")
    assert LcbEnv(data_dir=DATA / "deepcoder", max_tests=2).tasks("train")[3].payload.tests == (
        ("0\n", "0\n"),
        ("1\n", "1\n"),
    )


def test_lcb_lite_format_with_compressed_private_tests():
    env = LcbEnv(data_dir=DATA / "lite", source="lcb_lite")
    test = env.tasks("test")
    assert [t.payload.pid for t in test] == ["lcb/abc001_a", "lcb/1"]
    assert test[0].payload.tests == (("1 2\n", "3\n"), ("4 4\n", "8\n"))  # base64 → zlib → pickle → JSON decoded
    assert test[1].payload.fn_name == "twoSum"
    assert [t.payload.pid for t in env.tasks("train")] == ["lcb/abc000_a"]  # before the 2024-08-01 cut


def test_conformance():
    check_env(_ENV, max_tasks=2)


def test_prompts_in_the_livecodebench_style():
    stdin_task, functional_task = _ENV.tasks("test")
    single = _ENV.render_prompt(stdin_task)
    assert single[0]["role"] == "system"
    assert single[0]["content"].startswith("You are an expert Python programmer.")
    assert single[1]["content"].startswith("### Question:\nRead two integers")
    assert "# YOUR CODE HERE" in single[1]["content"]
    assert single[1]["content"].endswith("### Answer: (use the provided format with backticks)\n\n")
    multi = _ENV.render_prompt(functional_task, mode="multi", m=3)[1]["content"]
    assert "class Solution:\n    def twoSum" in multi
    assert "<response_1>...</response_1> through <response_3>...</response_3>" in multi


def test_code_extraction():
    assert extract_code("text\n```python\nprint(1)\n```\n```python\nprint(2)\n```") == "print(1)\n"
    assert extract_code("```python\nprint(3)") == "print(3)"
    assert extract_code("```\nprint(4)\n```") == "print(4)\n"
    assert extract_code("print(5)") == "print(5)"


def test_rewards_are_per_test_pass_indicators():
    stdin_task, functional_task = _ENV.tasks("test")
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    half = "```python\na, b = map(int, input().split())\nprint(3)\n```"
    np.testing.assert_array_equal(_ENV.score(stdin_task, right), [[1, 1, 1]])
    np.testing.assert_array_equal(_ENV.score(stdin_task, half), [[1, 0, 0]])
    assert _ENV.is_success(_ENV.score(stdin_task, right), stdin_task).tolist() == [True]
    two_sum = (
        "```python\nclass Solution:\n    def twoSum(self, nums, target):\n"
        "        seen = {}\n        for i, x in enumerate(nums):\n"
        "            if target - x in seen:\n                return [seen[target - x], i]\n"
        "            seen[x] = i\n```"
    )
    text = f"<response_1>{two_sum}</response_1><response_2>{two_sum}</response_2><response_3>nothing</response_3>"
    cands = _ENV.parse(functional_task, text, mode="multi", m=3)
    np.testing.assert_array_equal(_ENV.rewards(functional_task, cands), [[1, 1], [1, 1], [0, 0]])
    np.testing.assert_array_equal(
        _ENV.dedupe_rewards(functional_task, cands, _ENV.rewards(functional_task, cands)), [[1, 1], [0, 0], [0, 0]]
    )
    assert _ENV.dedup_key(functional_task, cands[0]) == _ENV.dedup_key(functional_task, cands[1])


def test_reference_solutions_pass_where_the_data_has_them():
    for task in _ENV.tasks("train")[:3]:
        assert _ENV.score(task, _ENV.reference_completion(task)).min() == 1.0
    assert _ENV.reference_completion(_ENV.tasks("test")[0]) is None


def test_bad_config_and_offline_errors():
    with pytest.raises(ValueError, match="source must be deepcoder or lcb_lite"):
        LcbEnv(source="apps")
    with pytest.raises(ValueError, match="max_tests must be an int"):
        LcbEnv(max_tests=64)
    with pytest.raises(FileNotFoundError, match=r"(?s)agentica-org/DeepCoder-Preview-Dataset.*data_dir"):
        LcbEnv().tasks("test")
    with pytest.raises(FileNotFoundError, match="no test"):
        LcbEnv(data_dir=DATA, source="lcb_lite").tasks("test")


@pytest.mark.parametrize(
    ("option", "value", "limit"),
    [
        ("time_limit_s", float("inf"), r"time_limit_s must be a number of CPU seconds in \(0, 3600\], got inf"),
        ("time_limit_s", float("nan"), r"in \(0, 3600\], got nan"),
        ("time_limit_s", 0, r"in \(0, 3600\], got 0"),
        ("time_limit_s", -1.5, r"in \(0, 3600\], got -1.5"),
        ("time_limit_s", 1e9, r"in \(0, 3600\], got 1000000000.0"),
        # a value of the wrong type: the config's limit, or `vpo_core.make`'s type check (which answers first)
        ("time_limit_s", True, r"(in \(0, 3600\]|expects float), got True"),
        ("time_limit_s", "6", r"(in \(0, 3600\]|expects float), got '6'"),
        ("workers", -1, r"workers must be an int in \[1, 256\].*got -1"),
        ("workers", 0, r"workers must be an int in \[1, 256\].*got 0"),
        ("workers", True, r"workers (must be an int in \[1, 256\].*|of lcb-v1 expects int, )got True"),
        ("workers", 2.5, r"workers (must be an int in \[1, 256\].*|of lcb-v1 expects int, )got 2.5"),
        ("workers", 10**6, r"workers must be an int in \[1, 256\].*got 1000000"),
    ],
)
def test_limits_refused_at_parse_time_naming_the_limit(option, value, limit):
    # before any data or sandbox exists, as the project's user error (one line on the command lines)
    for build in (lambda: LcbEnv(**{option: value}), lambda: vpo_core.make("lcb-v1", **{option: value})):
        with pytest.raises(ConfigError, match=limit):
            build()


def test_limits_at_the_edges_are_accepted():
    config = LcbEnv(time_limit_s=3600, workers=np.int64(2)).config
    assert (config.time_limit_s, config.workers) == (3600.0, 2)
    assert isinstance(config.workers, int)
    assert LcbEnv(time_limit_s=1e-3).config.time_limit_s == 1e-3


def test_registry_and_cli(tmp_path, capsys):
    env = vpo_core.make("lcb-v1", data_dir=str(DATA / "deepcoder"))
    assert len(env.tasks("test")) == 2
    completions = tmp_path / "c.jsonl"
    right = "```python\na, b = map(int, input().split())\nprint(a + b)\n```"
    completions.write_text(
        json.dumps({"index": 0, "completion": right}) + "\n" + json.dumps({"index": 0, "completion": "x"}) + "\n"
    )
    capsys.readouterr()
    assert cli_main(["score", f"env.data_dir={DATA / 'deepcoder'}", f"completions={completions}", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["pass@1"] == 0.5
    assert summary["pass_rate"] == 0.5


def test_the_env_refuses_to_grade_where_no_bubblewrap_can_start(monkeypatch):
    """No system bwrap, no bundled one (or no user namespaces): a clear error, never a silent zero."""
    import env_lcb.sandbox.host as host
    from env_lcb.sandbox import SandboxError

    monkeypatch.setattr(host, "_bwrap_works", lambda python, choice="auto": "bwrap was not found (test)")
    env = LcbEnv(data_dir=DATA / "deepcoder", time_limit_s=2.0)
    task = env.tasks("test")[0]
    with pytest.raises(SandboxError, match=r"bubblewrap cannot start here \(bwrap was not found \(test\)\)"):
        env.score(task, "```python\nprint(1)\n```")
