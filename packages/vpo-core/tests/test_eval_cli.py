"""``vpo-eval`` against a local fake OpenAI-compatible server (no network): results, samples, resume."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

import vpo_core
from vpo_core.eval_cli import main

ENV_OPTIONS = ["--env-option", "test_size=3", "--env-option", "train_size=2"]


def _maze_replies():
    """A server that answers each maze prompt with its reference route, then garbage."""
    env = vpo_core.make("maze-v1", test_size=3, train_size=2)
    answers = {}
    for task in env.tasks("test"):
        for mode, m in (("single", 1), ("multi", 3)):
            prompt = env.render_prompt(task, mode=mode, m=m)[-1]["content"]
            answers[prompt] = env.reference_completion(task, mode=mode, m=m)

    def reply(messages, n):
        good = answers[messages[-1]["content"]]
        return [good if i % 2 == 0 else "no route here" for i in range(n)]

    return env, reply


def test_vpo_eval_writes_results_and_samples(tmp_path, fake_openai, capsys):
    env, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    argv = [
        "--env",
        "maze",
        "--base-url",
        server.base_url,
        "--template-options",
        "none",
        "--limit",
        "2",
        "--samples",
        "4",
        "--out",
        str(out),
    ]
    assert main([*argv, *ENV_OPTIONS, "--concurrency", "2"]) == 0
    captured = capsys.readouterr()
    assert "env=maze has no version; using the latest installed, env=maze-v1" in captured.err
    assert "temperature 0.7" in captured.err
    assert "maze-v1's evaluation profile" in captured.err
    assert "[2/2 tasks]" in captured.err
    results = json.loads((out / "results.json").read_text())  # strict JSON: json.loads would accept NaN too
    assert "NaN" not in (out / "results.json").read_text()
    assert results["env"] == "maze-v1"
    assert results["model"] == "fake-model"
    assert results["settings"]["temperature"] == env.profile.eval.temperature
    assert results["settings"]["samples"] == 4
    assert results["settings"]["tasks"] == 2
    assert set(results["per_k"]) == {"1", "3"}
    for k in ("1", "3"):
        assert set(results["per_k"][k]) == {"best", "pass", "E_w[best]", "diversity"}
    assert results["versions"]["vpo-core"]
    assert results["versions"]["env-maze"]
    assert results["date"].startswith("20")
    lines = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert len(lines) == 8
    first = lines[0]
    assert set(first) >= {"task_id", "prompt", "completion", "candidates", "rewards", "reward_names"}
    tasks = env.tasks("test")
    scored = env.score(tasks[0], first["completion"])
    np.testing.assert_allclose(first["rewards"], scored)
    assert first["candidates"][0]["text"]
    # best@1 is the mean w*-score of the candidates: reference routes on even samples, garbage on odd ones
    w = env.reward_spec.w_star_array
    expected = np.mean([np.asarray(r["rewards"])[0] @ w for r in lines])
    assert math.isclose(results["metrics"]["best@1"], expected, rel_tol=1e-9)
    assert results["per_k"]["3"]["best"] >= results["per_k"]["1"]["best"]
    assert all(p["temperature"] == env.profile.eval.temperature and p["n"] == 4 for p in server.requests)


def test_vpo_eval_multi_mode_and_resume(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    argv = [
        "--env",
        "maze-v1",
        "--base-url",
        server.base_url,
        "--template-options",
        "none",
        "--samples",
        "6",
        "-m",
        "3",
        "--out",
        str(out),
    ]
    assert main([*argv, *ENV_OPTIONS, "--limit", "1"]) == 0
    assert len(server.requests) == 1
    assert server.requests[0]["n"] == 2
    assert main([*argv, *ENV_OPTIONS, "--limit", "1"]) == 2  # an existing evaluation is not overwritten
    assert "pass --resume" in capsys.readouterr().err
    assert main([*argv, *ENV_OPTIONS, "--limit", "1", "--resume", "--temperature", "1.0"]) == 2
    assert "other settings" in capsys.readouterr().err
    requests_before = len(server.requests)
    # a resumed evaluation with more tasks: same settings except the task count is refused too
    assert main([*argv, *ENV_OPTIONS, "--limit", "1", "--resume"]) == 0
    assert len(server.requests) == requests_before  # nothing sampled again
    results = json.loads((out / "results.json").read_text())
    assert results["settings"]["mode"] == "multi"
    assert results["settings"]["m"] == 3
    lines = (out / "samples.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert all(len(json.loads(x)["candidates"]) == 3 for x in lines)


@pytest.mark.parametrize(
    ("extra", "needle", "code"),
    [
        (["--env", "nope-v1"], "unknown env id 'nope-v1'", 2),
        (["--env", "maze-v1", "--env-option", "size=3"], "env.size is not an option of maze-v1", 2),
        (["--env", "maze-v1", "--mode", "single", "-m", "3"], "drop -m 3", 2),
        (["--env", "maze-v1", "--base-url", "http://127.0.0.1:9/v1"], "cannot reach", 1),
    ],
)
def test_vpo_eval_refusals_are_one_line(tmp_path, capsys, extra, needle, code):
    argv = ["--base-url", "http://127.0.0.1:9/v1", "--out", str(tmp_path / "e"), "--limit", "1", *extra]
    assert main(argv) == code
    err = capsys.readouterr().err
    assert needle in err
    assert "Traceback" not in err
    assert not (tmp_path / "e").exists()


def test_template_options_need_a_vllm_server_or_are_left_out(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    argv = ["--env", "maze-v1", "--base-url", server.base_url, "--limit", "1", "--samples", "2", *ENV_OPTIONS]
    assert main([*argv, "--out", str(tmp_path / "a")]) == 1  # the fake server does not say it is vLLM
    assert "only vLLM takes chat template options" in capsys.readouterr().err
    assert main([*argv, "--out", str(tmp_path / "c"), "--server", "vllm"]) == 1  # vLLM, but the pre-fill is unknown
    err = capsys.readouterr().err
    assert "pass tokenizer=" in err
    assert "cannot say what it pre-fills" in err
    assert "/tokenize answered HTTP 404" in err  # the reason: the server has no vLLM /tokenize
    assert main([*argv, "--out", str(tmp_path / "b"), "--template-options", "none"]) == 0
    results = json.loads((tmp_path / "b" / "results.json").read_text())
    assert results["settings"]["chat_template_kwargs"] == {}
