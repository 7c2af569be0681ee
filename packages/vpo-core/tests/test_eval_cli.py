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
        stats = {"best", "pass", "E_w[best]", "diversity"}
        assert set(results["per_k"][k]) == stats | {f"{stat}_se" for stat in stats}
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
    capsys.readouterr()
    assert main([*argv, *ENV_OPTIONS, "--limit", "1", "--resume"]) == 0
    assert len(server.requests) == requests_before  # nothing sampled again
    err = capsys.readouterr().err
    assert "2 completions were scored again with the env" in err
    assert "differ" not in err  # an honest file re-scores to what it holds
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
        (["--env", "maze-v1", "--env-option", "test_size=-1"], "test_size must be an int in [1, 100]", 2),
        (["--env", "maze-v1", "--split", "nope"], "unknown maze-v1 split 'nope'", 2),
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


# ---- resume integrity, damaged inputs, server-controlled text, comparable output (issues 37 and 40) ----


def _argv(server, out, *extra):
    return [
        "--env",
        "maze-v1",
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
        *ENV_OPTIONS,
        *extra,
    ]


def _one_line_error(err: str, *needles: str) -> None:
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err
    for needle in needles:
        assert needle in errors[0], errors[0]


def test_resume_rescores_stored_completions_instead_of_trusting_their_rewards(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    before = json.loads((out / "results.json").read_text())["metrics"]
    assert before["best@1"] < 1.0  # garbage on odd samples
    records = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    for r in records:  # an edited file: every candidate claims the best reward, completions unchanged
        r["rewards"] = [[1.0] * len(row) for row in r["rewards"]]
    (out / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    requests = len(server.requests)
    capsys.readouterr()
    assert main(_argv(server, out, "--resume")) == 0
    assert len(server.requests) == requests  # nothing sampled again
    after = json.loads((out / "results.json").read_text())["metrics"]
    assert after["best@1"] == pytest.approx(before["best@1"], abs=1e-12)
    assert "differ from the env's score" in capsys.readouterr().err
    kept = [json.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert all(max(max(row) for row in r["rewards"]) <= 1.0 for r in kept)
    assert sum(r["rewards"] != [[1.0] * len(r["rewards"][0])] for r in kept) > 0  # the file holds the re-scores


def test_resume_without_run_json_is_refused(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    (out / "run.json").unlink()
    capsys.readouterr()
    assert main(_argv(server, out, "--resume")) == 2
    _one_line_error(capsys.readouterr().err, "run.json", "cannot be verified", "another --out")


@pytest.mark.parametrize(
    ("run_json", "needle"),
    [
        ("[1, 2]", "not a JSON object"),
        ("{not json", "not JSON"),
        ('{"env": "maze-v1"}', "other settings"),
    ],
)
def test_a_damaged_run_json_is_one_line(tmp_path, fake_openai, capsys, run_json, needle):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    (out / "run.json").write_text(run_json)
    capsys.readouterr()
    assert main(_argv(server, out, "--resume")) == 2
    _one_line_error(capsys.readouterr().err, "run.json", needle)


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda r: [1, 2], "line 1 is not a JSON object"),
        (lambda r: {**r, "completion": 5}, "'completion' must be text"),
        (lambda r: {**r, "sample": "0"}, "'sample' must be an integer"),
        (lambda r: {**r, "sample": 7}, "'sample' must be an integer from 0 to 3"),
        (lambda r: {**r, "task_id": ["x"]}, "'task_id' must be text"),
        (lambda r: {**r, "prompt": "hello"}, "another prompt"),
        (lambda r: {k: v for k, v in r.items() if k != "completion"}, "'completion' must be text"),
    ],
)
def test_damaged_samples_are_one_line(tmp_path, fake_openai, capsys, edit, needle):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    lines = (out / "samples.jsonl").read_text().splitlines()
    lines[0] = json.dumps(edit(json.loads(lines[0])))
    (out / "samples.jsonl").write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(_argv(server, out, "--resume")) == 2
    _one_line_error(capsys.readouterr().err, "samples.jsonl", needle)


def test_samples_of_another_mode_are_not_mixed_in(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    single, multi = tmp_path / "single", tmp_path / "multi"
    assert main(_argv(server, single, "--samples", "2")) == 0  # 2 completions per task, as in multi below
    assert main(_argv(server, multi, "-m", "3", "--samples", "6")) == 0
    (multi / "samples.jsonl").write_text((single / "samples.jsonl").read_text())  # same task ids, other prompts
    capsys.readouterr()
    assert main(_argv(server, multi, "-m", "3", "--samples", "6", "--resume")) == 2
    _one_line_error(capsys.readouterr().err, "another prompt")


def test_an_interrupted_last_line_is_sampled_again(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    text = (out / "samples.jsonl").read_text()
    (out / "samples.jsonl").write_text(text[: len(text) - 25])  # cut inside the last record
    requests = len(server.requests)
    assert main(_argv(server, out, "--resume")) == 0
    assert len(server.requests) == requests + 1  # the second task (cut short) once more
    assert len((out / "samples.jsonl").read_text().splitlines()) == 8


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_an_unusable_out_is_one_line(tmp_path, fake_openai, capsys, where):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder")
    out = blocker if where == "file" else blocker / "eval"
    assert main(_argv(server, out)) == 2
    _one_line_error(capsys.readouterr().err, "--out", str(out))
    assert server.requests == []  # refused before anything is sampled
    assert blocker.read_text() == "not a folder"


def test_a_server_model_id_is_printed_without_its_control_characters(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    evil = "m\x1b[2J\x1b]0;owned\x07\u202e\x9b31m"
    server = fake_openai(reply, model=evil)
    assert main(_argv(server, tmp_path / "eval")) == 0
    captured = capsys.readouterr()
    for stream in (captured.out, captured.err):
        assert not any(ch in stream for ch in ("\x1b", "\x07", "\u202e", "\x9b"))
    assert "m\\x1b[2J" in captured.out
    assert json.loads((tmp_path / "eval" / "results.json").read_text())["model"] == evil  # the record keeps it


def test_results_carry_standard_errors_a_schema_version_and_a_settings_digest(tmp_path, fake_openai, capsys):
    import hashlib

    from vpo_core.eval_cli import BOOTSTRAP_RESAMPLES, RESULTS_SCHEMA_VERSION, settings_digest

    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    captured = capsys.readouterr()
    results = json.loads((out / "results.json").read_text())
    assert results["schema_version"] == RESULTS_SCHEMA_VERSION
    settings = {k: v for k, v in results["settings"].items() if k != "base_url"}
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    assert results["settings_digest"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert settings_digest(results["settings"]) == results["settings_digest"]
    assert settings_digest({**results["settings"], "base_url": "http://elsewhere/v1"}) == results["settings_digest"]
    assert settings_digest({**results["settings"], "temperature": 0.5}) != results["settings_digest"]
    assert results["bootstrap"] == {"over": "tasks", "resamples": BOOTSTRAP_RESAMPLES, "seed": 0}
    errors = results["standard_errors"]
    assert set(errors) == set(results["metrics"])
    for k, row in results["per_k"].items():
        for stat in ("best", "pass", "E_w[best]", "diversity"):
            assert row[f"{stat}_se"] == errors[f"{stat}@{k}" if stat != "E_w[best]" else f"E_w[best@{k}]"]
    # 2 tasks answered alike: the best@1 of the two tasks is the same, so its standard error is 0; pass@3 too
    assert errors["best@1"] == pytest.approx(0.0, abs=1e-12)
    assert "best@1 " in captured.out
    assert " ± " in captured.out
    assert f"nothing is uploaded; results stay in {out}" in captured.out
    assert f"{BOOTSTRAP_RESAMPLES} bootstrap resamples over tasks" in captured.out


def test_a_k_the_pools_cannot_give_is_named_in_the_results(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    assert main(_argv(server, tmp_path / "eval")) == 0
    results = json.loads((tmp_path / "eval" / "results.json").read_text())
    assert results["ks_not_reported"] == {"ks": [5, 10, 30, 50, 100], "pool_size": 4}
    assert "k = 5, 10, 30, 50, 100 are not reported" in capsys.readouterr().err


def test_vpo_eval_keeps_concurrency_requests_in_flight_and_writes_in_task_order(tmp_path):
    """--concurrency 4: the server holds 4 requests at once (each waits until 4 are held, or 5 s), and
    samples.jsonl still lists the tasks in order (issue 40 item 3; before, one task's request at a time)."""
    import json as json_module
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from vpo_core.eval_cli import main

    held = {"now": 0, "most": 0}
    changed = threading.Condition()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, body):
            data = json_module.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({"object": "list", "data": [{"id": "wide", "object": "model", "owned_by": "test"}]})

        def do_POST(self):
            payload = json_module.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with changed:
                held["now"] += 1
                held["most"] = max(held["most"], held["now"])
                changed.notify_all()
                changed.wait_for(lambda: held["most"] >= 4, timeout=5)
                held["now"] -= 1
            text = f"answer to {payload['messages'][-1]['content'][-40:]}"
            n = int(payload.get("n", 1))
            self._send({"choices": [{"index": i, "message": {"role": "assistant", "content": text}} for i in range(n)]})

    class Listener(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 64

    httpd = Listener(("127.0.0.1", 0), Handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        out = tmp_path / "eval"
        argv = ["--env", "maze-v1", "--base-url", f"http://127.0.0.1:{httpd.server_address[1]}/v1"]
        argv += ["--template-options", "none", "--samples", "1", "--limit", "8", "--concurrency", "4"]
        argv += ["--out", str(out), "--env-option", "test_size=8", "--env-option", "train_size=1"]
        assert main(argv) == 0
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert held["most"] == 4
    import vpo_core

    env = vpo_core.make("maze-v1", test_size=8, train_size=1)
    expected = [t.id for t in env.tasks("test")][:8]
    lines = [json_module.loads(line) for line in (out / "samples.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in lines] == expected
