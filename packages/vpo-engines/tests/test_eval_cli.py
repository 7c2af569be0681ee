"""The evaluation command's openai backend (``vpo-eval``) against a local fake OpenAI-compatible server (no network).

Results in the one schema, the sample log, resume, concurrency, the saved pool (read back by `load_pool`
and apps/diagnose.py), the one error policy, and vpo-eval's former ``--flags`` refused with the spelling to use.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from vpo_engines.evaluate import main

ROOT = Path(__file__).resolve().parents[3]
ENV_OPTIONS = ["env.test_size=3", "env.train_size=2"]


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


def _argv(server, out, *extra):
    return [
        "env=maze-v1",
        f"base_url={server.base_url}",
        "template_options=none",
        "tasks=2",
        "samples=4",
        f"out={out}",
        *ENV_OPTIONS,
        *extra,
    ]


def _one_line_error(err: str, *needles: str) -> None:
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err
    for needle in needles:
        assert needle in errors[0], errors[0]


def test_vpo_eval_writes_results_samples_and_a_pool(tmp_path, fake_openai, capsys):
    env, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    argv = ["env=maze", f"base_url={server.base_url}", "template_options=none", "tasks=2", "samples=4", f"out={out}"]
    assert main([*argv, *ENV_OPTIONS, "concurrency=2", "log_samples=true"]) == 0
    captured = capsys.readouterr()
    assert "env=maze has no version; using the latest installed, env=maze-v1" in captured.err
    assert "temperature 0.7" in captured.err
    assert "maze-v1's evaluation profile" in captured.err
    assert "[2/2 tasks]" in captured.err
    text = (out / "results.json").read_text()
    assert "NaN" not in text  # strict JSON: json.loads would accept NaN too
    results = json.loads(text)
    assert (results["env"], results["split"], results["tasks"]) == ("maze-v1", "test", 2)
    (row,) = results["rows"].values()
    assert set(results["rows"]) == {"fake-model"}
    assert row["model"] == "fake-model"
    assert row["backend"] == "openai"
    assert row["settings"]["temperature"] == env.profile.eval.temperature
    assert row["settings"]["samples"] == 4
    assert row["settings"]["tasks"] == 2
    assert {"best@1", "best@3", "pass@3", "E_w[best@3]", "diversity@3"} <= set(row["metrics"])
    assert "best@5" not in row["metrics"]
    assert results["versions"]["vpo-core"]
    assert results["versions"]["env-maze"]
    assert results["date"].startswith("20")
    lines = [json.loads(line) for line in (out / "samples_fake-model.jsonl").read_text().splitlines()]
    assert len(lines) == 8
    first = lines[0]
    assert set(first) >= {"task_id", "sample", "prompt", "completion", "candidates", "rewards", "reward_names"}
    tasks = env.tasks("test")
    np.testing.assert_allclose(first["rewards"], env.score(tasks[0], first["completion"]))
    assert first["candidates"][0]["text"]
    # best@1 is the mean w*-score of the candidates: reference routes on even samples, garbage on odd ones
    w = env.reward_spec.w_star_array
    expected = np.mean([np.asarray(r["rewards"])[0] @ w for r in lines])
    assert math.isclose(row["metrics"]["best@1"], expected, rel_tol=1e-9)
    assert row["metrics"]["best@3"] >= row["metrics"]["best@1"]
    assert all(p["temperature"] == env.profile.eval.temperature and p["n"] == 4 for p in server.requests)
    assert "| fake-model | single, 1 |" in (out / "table.md").read_text()
    assert "| fake-model | single, 1 |" in captured.out


def test_the_served_model_s_pool_is_the_shared_format_that_diagnose_reads(tmp_path, fake_openai, capsys, monkeypatch):
    """Before: vpo-eval wrote no pool file, so apps/diagnose.py and vpo-search could not read its run."""
    from vpo_core.evaluation import load_pool

    env, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out, "samples=16")) == 0
    results = json.loads((out / "results.json").read_text())
    (row,) = results["rows"].values()
    assert row["samples"] is None  # no sample log unless asked
    assert not list(out.glob("samples_*.jsonl"))
    pool = load_pool(out / row["pool"])
    assert (pool.mode, pool.env, pool.label) == ("single", "maze-v1", "fake-model")
    assert pool.rewards.shape == (2, 16, 1, 4)
    assert pool.task_ids == [t.id for t in env.tasks("test")[:2]]
    assert pool.settings["base_url"] == server.base_url
    w = env.reward_spec.w_star_array
    assert float(np.mean(pool.rewards[:, :, 0] @ w)) == pytest.approx(row["metrics"]["best@1"])
    capsys.readouterr()
    from vpo_engines.cli import main as vpo

    assert vpo(["diagnose", "env=maze-v1", f"vpo={out / row['pool']}", "env.test_size=3", "env.train_size=2"]) == 0
    assert "| maze-v1 | 4 dims (D=4) |" in capsys.readouterr().out


def test_vpo_eval_multi_mode_and_resume(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    argv = ["env=maze-v1", f"base_url={server.base_url}", "template_options=none", "samples=6", "m=3", f"out={out}"]
    argv += [*ENV_OPTIONS, "tasks=1", "log_samples=true"]
    assert main(argv) == 0
    assert len(server.requests) == 1
    assert server.requests[0]["n"] == 2
    assert main(argv) == 2  # an existing evaluation is not overwritten
    assert "pass resume=true" in capsys.readouterr().err
    assert main([*argv, "resume=true", "temperature=1.0"]) == 2
    assert "other settings" in capsys.readouterr().err
    requests_before = len(server.requests)
    assert main([*argv, "resume=true"]) == 0
    assert len(server.requests) == requests_before  # nothing sampled again
    err = capsys.readouterr().err
    assert "2 completions were scored again with the env" in err
    assert "differ" not in err  # an honest file re-scores to what it holds
    (row,) = json.loads((out / "results.json").read_text())["rows"].values()
    assert (row["settings"]["mode"], row["settings"]["m"], row["mode"], row["m"]) == ("multi", 3, "multi", 3)
    lines = (out / "samples_fake-model.jsonl").read_text().splitlines()
    assert len(lines) == 2
    assert all(len(json.loads(x)["candidates"]) == 3 for x in lines)


@pytest.mark.parametrize(
    ("extra", "needle", "code"),
    [
        (["env=nope-v1"], "unknown env id 'nope-v1'", 2),
        (["env=maze-v1", "env.size=3"], "env.size is not an option of maze-v1", 2),
        (["env=maze-v1", "mode=single", "m=3"], "drop m=3", 2),
        (["env=maze-v1", "env.test_size=-1"], "test_size must be an int in [1, 100]", 2),
        (["env=maze-v1", "split=nope"], "unknown maze-v1 split 'nope'", 2),
        (["env=maze-v1"], "cannot reach", 1),
        (["env=maze-v1", "checkpoints=x"], "not both", 2),
        (["env=maze-v1", "ks=[1,9]", "samples=2"], "k = 9 is larger than the pools", 2),
    ],
)
def test_vpo_eval_refusals_are_one_line(tmp_path, capsys, extra, needle, code):
    argv = ["base_url=http://127.0.0.1:9/v1", f"out={tmp_path / 'e'}", "tasks=1", "template_options=none", *extra]
    assert main(argv) == code
    _one_line_error(capsys.readouterr().err, needle)
    assert not (tmp_path / "e").exists()


def test_flags_and_apps_evaluate_s_former_names_are_refused_with_the_key_value_spelling(tmp_path, capsys):
    assert main(["--env", "maze-v1", "--base-url", "http://h/v1"]) == 2
    _one_line_error(capsys.readouterr().err, "write env=maze-v1, not '--env'")
    assert main(["env=maze-v1", "endpoint=http://h/v1"]) == 2
    _one_line_error(capsys.readouterr().err, "'endpoint=http://h/v1' is now written base_url=http://h/v1.")


def test_template_options_need_a_vllm_server_or_are_left_out(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    argv = ["env=maze-v1", f"base_url={server.base_url}", "tasks=1", "samples=2", *ENV_OPTIONS]
    assert main([*argv, f"out={tmp_path / 'a'}"]) == 1  # the fake server does not say it is vLLM
    assert "only vLLM takes chat template options" in capsys.readouterr().err
    assert main([*argv, f"out={tmp_path / 'c'}", "server=vllm"]) == 1  # vLLM, but the pre-fill is unknown
    err = capsys.readouterr().err
    assert "pass tokenizer=" in err
    assert "cannot say what it pre-fills" in err
    assert "/tokenize answered HTTP 404" in err  # the reason: the server has no vLLM /tokenize
    assert main([*argv, f"out={tmp_path / 'b'}", "template_options=none"]) == 0
    (row,) = json.loads((tmp_path / "b" / "results.json").read_text())["rows"].values()
    assert row["settings"]["chat_template_kwargs"] == {}


def test_an_env_scoring_bug_stops_the_run_with_its_traceback(tmp_path, fake_openai, monkeypatch):
    """One error policy: an exception of the env is not a user error and never becomes a zero reward."""
    _, reply = _maze_replies()
    server = fake_openai(reply)
    env_cls = type(vpo_core.make("maze-v1", test_size=3, train_size=2))

    def broken(self, task, completion, **kwargs):
        raise RuntimeError("sandbox died")

    monkeypatch.setattr(env_cls, "score_completion", broken)
    with pytest.raises(RuntimeError, match="sandbox died"):
        main(_argv(server, tmp_path / "eval"))
    assert not (tmp_path / "eval" / "results.json").exists()


# ---- resume integrity, damaged inputs, server-controlled text, comparable output (issues 37 and 40) ----


def test_resume_rescores_stored_completions_instead_of_trusting_their_rewards(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out, "log_samples=true")) == 0
    (before,) = json.loads((out / "results.json").read_text())["rows"].values()
    assert before["metrics"]["best@1"] < 1.0  # garbage on odd samples
    log = out / "samples_fake-model.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    for r in records:  # an edited file: every candidate claims the best reward, completions unchanged
        r["rewards"] = [[1.0] * len(row) for row in r["rewards"]]
    log.write_text("".join(json.dumps(r) + "\n" for r in records))
    requests = len(server.requests)
    capsys.readouterr()
    assert main(_argv(server, out, "resume=true")) == 0
    assert len(server.requests) == requests  # nothing sampled again
    (after,) = json.loads((out / "results.json").read_text())["rows"].values()
    assert after["metrics"]["best@1"] == pytest.approx(before["metrics"]["best@1"], abs=1e-12)
    assert "differ from the env's score" in capsys.readouterr().err
    kept = [json.loads(line) for line in log.read_text().splitlines()]
    assert all(max(max(row) for row in r["rewards"]) <= 1.0 for r in kept)
    assert sum(r["rewards"] != [[1.0] * len(r["rewards"][0])] for r in kept) > 0  # the file holds the re-scores


def test_resume_without_run_json_is_refused(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out, "log_samples=true")) == 0
    (out / "run.json").unlink()
    capsys.readouterr()
    assert main(_argv(server, out, "resume=true")) == 2
    _one_line_error(capsys.readouterr().err, "run.json", "cannot be verified", "another out=")


@pytest.mark.parametrize(
    ("run_json", "needle"),
    [
        ("[1, 2]", "each row's settings under 'rows'"),
        ("{not json", "not JSON"),
        ('{"rows": {"fake-model": {"env": "maze-v1"}}}', "other settings"),
        ('{"rows": {"other": {}}}', "records no settings for row 'fake-model'"),
    ],
)
def test_a_damaged_run_json_is_one_line(tmp_path, fake_openai, capsys, run_json, needle):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out, "log_samples=true")) == 0
    (out / "run.json").write_text(run_json)
    capsys.readouterr()
    assert main(_argv(server, out, "resume=true")) == 2
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
    assert main(_argv(server, out, "log_samples=true")) == 0
    log = out / "samples_fake-model.jsonl"
    lines = log.read_text().splitlines()
    lines[0] = json.dumps(edit(json.loads(lines[0])))
    log.write_text("\n".join(lines) + "\n")
    capsys.readouterr()
    assert main(_argv(server, out, "resume=true")) == 2
    _one_line_error(capsys.readouterr().err, "samples_fake-model.jsonl", needle)


def test_samples_of_another_mode_are_not_mixed_in(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    single, multi = tmp_path / "single", tmp_path / "multi"
    assert main(_argv(server, single, "samples=2", "log_samples=true")) == 0  # 2 completions per task, as below
    assert main(_argv(server, multi, "m=3", "samples=6", "log_samples=true")) == 0
    name = "samples_fake-model.jsonl"
    (multi / name).write_text((single / name).read_text())  # same task ids, other prompts
    capsys.readouterr()
    assert main(_argv(server, multi, "m=3", "samples=6", "resume=true")) == 2
    _one_line_error(capsys.readouterr().err, "another prompt")


def test_an_interrupted_last_line_is_sampled_again(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out, "log_samples=true")) == 0
    log = out / "samples_fake-model.jsonl"
    text = log.read_text()
    log.write_text(text[: len(text) - 25])  # cut inside the last record
    requests = len(server.requests)
    assert main(_argv(server, out, "resume=true")) == 0
    assert len(server.requests) == requests + 1  # the second task (cut short) once more
    assert len(log.read_text().splitlines()) == 8


@pytest.mark.parametrize("where", ["file", "under_file"])
def test_an_unusable_out_is_one_line(tmp_path, fake_openai, capsys, where):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    blocker = tmp_path / "taken"
    blocker.write_text("not a folder")
    out = blocker if where == "file" else blocker / "eval"
    assert main(_argv(server, out)) == 2
    _one_line_error(capsys.readouterr().err, "out=", str(out))
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
    (row,) = json.loads((tmp_path / "eval" / "results.json").read_text())["rows"].values()
    assert row["model"] == evil  # the record keeps it


def test_results_carry_standard_errors_a_schema_version_and_a_settings_digest(tmp_path, fake_openai, capsys):
    import hashlib

    from vpo_core.evaluation.reporting import BOOTSTRAP_RESAMPLES, RESULTS_SCHEMA_VERSION, settings_digest

    _, reply = _maze_replies()
    server = fake_openai(reply)
    out = tmp_path / "eval"
    assert main(_argv(server, out)) == 0
    captured = capsys.readouterr()
    results = json.loads((out / "results.json").read_text())
    assert results["schema_version"] == RESULTS_SCHEMA_VERSION == 2
    (row,) = results["rows"].values()
    settings = {k: v for k, v in row["settings"].items() if k != "base_url"}
    canonical = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    assert row["settings_digest"] == hashlib.sha256(canonical.encode()).hexdigest()
    assert settings_digest(row["settings"]) == row["settings_digest"]
    assert settings_digest({**row["settings"], "base_url": "http://elsewhere/v1"}) == row["settings_digest"]
    assert settings_digest({**row["settings"], "temperature": 0.5}) != row["settings_digest"]
    assert results["bootstrap"] == {"over": "tasks", "resamples": BOOTSTRAP_RESAMPLES, "seed": 0}
    errors = row["standard_errors"]
    assert set(errors) == set(row["metrics"])
    # 2 tasks answered alike: the best@1 of the two tasks is the same, so its standard error is 0
    assert errors["best@1"] == pytest.approx(0.0, abs=1e-12)
    assert "best@1 " in captured.out
    assert " ± " in captured.out
    assert f"nothing is uploaded; results stay in {out}" in captured.out
    assert f"{BOOTSTRAP_RESAMPLES} bootstrap resamples over tasks" in captured.out


def test_a_k_the_pools_cannot_give_is_named_in_the_results(tmp_path, fake_openai, capsys):
    _, reply = _maze_replies()
    server = fake_openai(reply)
    assert main(_argv(server, tmp_path / "eval")) == 0
    (row,) = json.loads((tmp_path / "eval" / "results.json").read_text())["rows"].values()
    assert row["ks_not_reported"] == {"ks": [5, 10, 30], "pool_size": 4}
    assert "k = 5, 10, 30 are not reported" in capsys.readouterr().err


def test_vpo_eval_keeps_concurrency_requests_in_flight_and_writes_in_task_order(tmp_path):
    """concurrency=4: the server holds 4 requests at once (each waits until 4 are held, or 5 s), and
    the sample log still lists the tasks in order (issue 40 item 3; before, one task's request at a time)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    held = {"now": 0, "most": 0}
    changed = threading.Condition()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _send(self, body):
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._send({"object": "list", "data": [{"id": "wide", "object": "model", "owned_by": "test"}]})

        def do_POST(self):
            payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
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
        argv = ["env=maze-v1", f"base_url=http://127.0.0.1:{httpd.server_address[1]}/v1", "template_options=none"]
        argv += ["samples=1", "tasks=8", "concurrency=4", f"out={out}", "env.test_size=8", "env.train_size=1"]
        assert main([*argv, "log_samples=true"]) == 0
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert held["most"] == 4
    env = vpo_core.make("maze-v1", test_size=8, train_size=1)
    expected = [t.id for t in env.tasks("test")][:8]
    lines = [json.loads(line) for line in (out / "samples_wide.jsonl").read_text().splitlines()]
    assert [r["task_id"] for r in lines] == expected
    assert [r["sample"] for r in lines] == [0] * 8
