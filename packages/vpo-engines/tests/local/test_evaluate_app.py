"""``vpo eval`` (the evaluation command) on CPU: the transformers backend, goal conditionings, thinking off,
resume and the sample log of a local model, one results schema for every backend, an OpenAI-compatible endpoint.

The model is a tiny locally built one whose chat template prints ``<|nothink|>`` when the template is
rendered with ``enable_thinking=False`` (as Qwen3's template switches thinking off), so the rendered
prompt text shows whether the env's ``chat_template_kwargs`` were applied. The endpoint is a stdlib
``http.server`` on 127.0.0.1 whose answers the test controls.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from vpo_core import goal_suffix
from vpo_core.evaluation import evaluate_policy, goal_weights_for_eval, load_pool
from vpo_core.http_json import JsonHandler, ServerThread
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.cli import main as vpo
from vpo_engines.models.policy import CHAT_TEMPLATE, ModelSpec, Policy, new_policy

ROOT = Path(__file__).resolve().parents[4]
LCB_DATA = ROOT / "packages" / "env-lcb" / "tests" / "data" / "deepcoder"
NOTHINK = "<|nothink|>"
TEMPLATE = CHAT_TEMPLATE + "{% if enable_thinking is defined and enable_thinking is false %}" + NOTHINK + "{% endif %}"
MAZE = ["env=maze-v1", "env.test_size=2", "env.train_size=2", "progress=false"]


def _app():
    """``vpo eval`` (apps/evaluate.py and vpo-eval are the same command), called with its arguments."""
    return lambda argv: vpo(["eval", *argv])


SCHEMA = ROOT / "packages" / "vpo-core" / "src" / "vpo_core" / "evaluation" / "results.schema.json"


def _valid_results(path: Path) -> dict:
    """results.json, checked against the one schema (docs/evaluation.md) with jsonschema."""
    jsonschema = pytest.importorskip("jsonschema")
    results = json.loads(path.read_text())
    jsonschema.validate(results, json.loads(SCHEMA.read_text()))
    return results


def _refused(capsys, argv, needle, code=2):
    """The app refuses `argv` in one line holding `needle`, without a traceback."""
    assert _app()(argv) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, err
    assert needle in errors[0], errors[0]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    env = vpo_core.make("maze-v1", train_size=4, test_size=2)
    texts = [env.render_prompt(t, mode="multi", m=3)[0]["content"] for t in env.tasks("train")]
    texts += [env.reference_completion(t, mode="multi", m=3) for t in env.tasks("train")]
    policy = new_policy(
        texts * 3, ModelSpec(vocab_size=300, hidden_size=16, layers=1, heads=2, max_positions=4096), seed=0
    )
    policy.tokenizer.chat_template = TEMPLATE
    path = tmp_path_factory.mktemp("model") / "tiny"
    policy.save(path)
    return path


@pytest.fixture(scope="module")
def goal_run(model_dir, tmp_path_factory):
    """A run directory of apps/train.py's layout for goal-conditioned GRPO (config + final checkpoint)."""
    from vpo_engines.models.policy import load_policy
    from vpo_engines.runs import RunDir

    run = RunDir(tmp_path_factory.mktemp("runs") / "gc")
    run.write_config({"method": "goal_cond", "env": "maze-v1", "m": 1})
    load_policy(model_dir).save(run.checkpoint_model)
    return run.path


class Recorder:
    """Replaces `Policy.sample`: records every call and answers the given texts."""

    def __init__(self, answer=""):
        self.calls = []
        self.answer = answer

    def install(self, monkeypatch):
        monkeypatch.setattr(Policy, "sample", lambda sampler, prompts, **kw: self(sampler, prompts, **kw))

    def __call__(self, sampler, prompts, *, num_samples, settings, seed=None):
        self.calls.append({"prompts": list(prompts), "num_samples": num_samples, "seed": seed, **settings.as_kwargs()})
        return [self.answer] * (len(prompts) * num_samples)


# --------------------------------------------------------------------------- transformers path
def test_transformers_path_writes_two_goal_rows_outside_results(goal_run, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _app()([*MAZE, f"checkpoints={goal_run}", "samples=2", "max_new_tokens=6", "name=gc", "ks=[1,2]"]) == 0
    out = tmp_path / "runs" / "eval" / "gc"  # the default: runs/eval/<name>, not the committed results/
    rows = _valid_results(out / "results.json")["rows"]
    assert set(rows) == {"gc (w=w*)", "gc (w=~Dir(1))"}
    assert rows["gc (w=w*)"]["conditioning"] == rows["gc (w=w*)"]["settings"]["conditioning"] == "w_star"
    assert rows["gc (w=~Dir(1))"]["settings"]["conditioning"] == "dirichlet"
    assert rows["gc (w=w*)"]["pool"] == "pool_gc@w_star.npy"
    assert rows["gc (w=w*)"]["settings"]["chat_template_kwargs"] == {"enable_thinking": False}
    assert np.load(out / "pool_gc@w_star.npy").shape == (2, 2, 1, 4)
    assert np.load(out / "pool_gc@dirichlet.npy").shape == (2, 2, 1, 4)
    pool = load_pool(out / "pool_gc@w_star.npy")  # the metadata beside each pool
    assert (pool.mode, pool.env, pool.label) == ("single", "maze-v1", "gc (w=w*)")
    assert pool.settings["conditioning"] == "w_star"
    assert pool.task_ids == [t.id for t in vpo_core.make("maze-v1", test_size=2).tasks("test")]
    table = (out / "table.md").read_text()
    assert "| gc (w=w*) | single, 1 |" in table
    assert "| gc (w=~Dir(1)) | single, 1 |" in table
    assert table.splitlines()[0].startswith("| checkpoint | mode, m | best@1 | best@2 | E_w[best@1] | E_w[best@2] |")
    assert set(rows["gc (w=w*)"]["metrics"]) >= {"best@2", "pass@2", "E_w[best@2]"}
    assert (out / "best_at_k.png").read_bytes()[:4] == b"\x89PNG"
    # issue 40 item 3: a bootstrap standard error beside every metric, and a digest of the settings per row
    for row in rows.values():
        assert set(row["standard_errors"]) == set(row["metrics"])
        metric = row["metrics"]
        assert all((se is None and metric[k] is None) or se >= 0 for k, se in row["standard_errors"].items())
        assert len(row["settings_digest"]) == 64
    assert rows["gc (w=w*)"]["settings_digest"] != rows["gc (w=~Dir(1))"]["settings_digest"]


def _grpo_run(root, model_dir, budget=None):
    from vpo_engines.models.policy import load_policy
    from vpo_engines.runs import RunDir

    run = RunDir(root)
    run.write_config({"method": "grpo", "env": "maze-v1", "m": 1})
    load_policy(model_dir).save(run.checkpoint_model)
    if budget is not None:
        run.write_token_budget(budget)
    return run.path


def test_checkpoints_whose_folders_share_a_name_keep_both_results(model_dir, tmp_path, monkeypatch, capsys):
    Recorder().install(monkeypatch)
    first = _grpo_run(tmp_path / "seed0" / "grpo", model_dir, budget=17)
    second = _grpo_run(tmp_path / "seed1" / "grpo", model_dir)
    out = tmp_path / "eval"
    assert _app()([*MAZE, f"checkpoints={first},{second}", f"out={out}", "samples=1"]) == 0
    rows = _valid_results(out / "results.json")["rows"]
    assert set(rows) == {"seed0/grpo", "seed1/grpo"}  # not one "grpo" row overwriting the other
    files = {rows[name]["pool"] for name in rows}
    assert files == {"pool_seed0_grpo.npy", "pool_seed1_grpo.npy"}
    assert all((out / f).exists() for f in files)
    table = (out / "table.md").read_text()
    assert "| seed0/grpo |" in table
    assert "| seed1/grpo |" in table
    # each run's own token budget (apps/train.py records it); the profile's where a run recorded none
    assert rows["seed0/grpo"]["settings"]["max_new_tokens"] == 17
    assert rows["seed1/grpo"]["settings"]["max_new_tokens"] == 1024
    _refused(capsys, [*MAZE, f"checkpoints={first},{first}", f"out={out}", "samples=1"], "given twice")


def test_the_token_budget_never_passes_the_models_positions(model_dir, tmp_path, monkeypatch):
    recorder = Recorder()
    recorder.install(monkeypatch)
    args = [*MAZE, f"checkpoints={model_dir}", "method=grpo", f"out={tmp_path}", "samples=1"]
    assert _app()([*args, "max_new_tokens=100000"]) == 0
    assert recorder.calls[0]["max_new_tokens"] == 4096  # the model's max_position_embeddings


def test_prompts_carry_the_goal_suffix_and_thinking_off(goal_run, tmp_path, monkeypatch):
    recorder = Recorder()
    recorder.install(monkeypatch)
    assert _app()([*MAZE, f"checkpoints={goal_run}", f"out={tmp_path}", "conditioning=both"]) == 0
    env = vpo_core.make("maze-v1", train_size=2, test_size=2)
    tasks = env.tasks("test")
    w_star_call, dirichlet_call = recorder.calls
    dirichlet = goal_weights_for_eval(env, tasks, "dirichlet", seed=0)
    for i, task in enumerate(tasks):
        spec = env.spec_for(task)
        assert goal_suffix(spec, spec.w_star_array) in w_star_call["prompts"][i]
        assert goal_suffix(spec, dirichlet[i]) in dirichlet_call["prompts"][i]
        assert w_star_call["prompts"][i].rstrip().endswith(NOTHINK)  # enable_thinking=False reached the template
    assert not np.allclose(dirichlet[0], dirichlet[1])  # one draw per task
    # maze's profile: T = 0.7, top-p 1.0, 1024 tokens, 30 samples, 1 seed
    assert {k: w_star_call[k] for k in ("temperature", "top_p", "max_new_tokens", "num_samples")} == {
        "temperature": 0.7,
        "top_p": 1.0,
        "max_new_tokens": 1024,
        "num_samples": 30,
    }
    recorder.calls.clear()
    assert _app()([*MAZE, f"checkpoints={goal_run}", f"out={tmp_path}", "conditioning=dirichlet"]) == 0
    assert len(recorder.calls) == 1
    assert goal_suffix(env.spec_for(tasks[0]), dirichlet[0]) in recorder.calls[0]["prompts"][0]


def test_a_plain_model_is_evaluated_without_suffix_in_its_method_s_mode(model_dir, tmp_path, monkeypatch, capsys):
    recorder = Recorder()
    recorder.install(monkeypatch)
    assert _app()([*MAZE, f"checkpoints={model_dir}", "method=vpo", f"out={tmp_path / 'a'}"]) == 0
    (call,) = recorder.calls
    assert "weights" not in call["prompts"][0].lower()
    assert call["num_samples"] == 10
    recorder.calls.clear()
    assert _app()([*MAZE, f"checkpoints={model_dir}", f"out={tmp_path / 'b'}"]) == 0  # no method: single mode
    assert recorder.calls[0]["num_samples"] == 30
    (row,) = json.loads((tmp_path / "b" / "results.json").read_text())["rows"].values()
    assert (row["mode"], row["m"]) == ("single", 1)
    _refused(
        capsys,
        [*MAZE, f"checkpoints={model_dir}", "temprature=0.5"],
        "unknown option 'temprature'; did you mean temperature",
    )
    _refused(capsys, MAZE, "pass checkpoints=")
    _refused(capsys, [*MAZE, f"checkpoints={model_dir}", "method=vpo", "mode=single"], "prompts in multi mode")


@pytest.mark.skipif(not LCB_DATA.exists(), reason="env-lcb's test data is not in this checkout")
def test_lcb_profile_reaches_the_sampler_and_options_override_it(model_dir, tmp_path, monkeypatch):
    recorder = Recorder()
    recorder.install(monkeypatch)
    lcb = ["env=lcb-v1", f"env.data_dir={LCB_DATA}", "tasks=1", "progress=false", f"checkpoints={model_dir}"]
    assert _app()([*lcb, "method=vpo", f"out={tmp_path / 'a'}"]) == 0
    (call,) = recorder.calls
    assert (call["temperature"], call["top_p"], call["max_new_tokens"], call["num_samples"]) == (0.8, 1.0, 4096, 10)
    assert NOTHINK not in call["prompts"][0]  # Qwen2.5-Coder has no thinking switch: no template options
    recorder.calls.clear()
    options = ["method=grpo", "temperature=0.5", "top_p=0.9", "max_new_tokens=77", "samples=4", "seeds=2"]
    assert _app()([*lcb, *options, f"out={tmp_path / 'b'}"]) == 0
    assert [(c["temperature"], c["top_p"], c["max_new_tokens"], c["num_samples"]) for c in recorder.calls] == [
        (0.5, 0.9, 77, 4)
    ] * 2
    assert [c["seed"] for c in recorder.calls] == [0, 10_000]


# -------------------------------------------------------------------------- evaluate_policy
def test_one_bad_completion_never_stops_an_evaluation():
    env = vpo_core.make("maze-v1", train_size=2, test_size=2)
    tasks = env.tasks("test")
    reference = env.reference_completion(tasks[0])

    class Short:  # returns one completion too few
        def prompt_text(self, messages):
            return messages[-1]["content"]

        def sample(self, prompts, *, num_samples, **kwargs):
            return [reference] * (len(prompts) * num_samples - 1)

    class Broken(type(env)):
        def score_completion(self, task, completion, **kwargs):  # the one scoring step evaluation uses
            if task.index == 1:
                raise RuntimeError("sandbox died")
            return super().score_completion(task, completion, **kwargs)

    logged, done = [], []
    result = evaluate_policy(
        Short(), Broken(train_size=2, test_size=2), tasks, name="x", mode="single", m=1, samples=3,
        seeds=1, settings=SamplingSettings(0.7, 1.0, 8), log=logged.append, progress=done.append,
    )  # fmt: skip
    assert sum(done) == len(tasks)  # the progress bar advances by tasks
    assert result.bad_completions == 1 + 2  # the missing one, and task 1's two that raised
    np.testing.assert_array_equal(result.rewards[0, 0, 0], env.score(tasks[0], reference)[0])
    assert not result.rewards[1].any()
    assert any("sandbox died" in line for line in logged)


def test_vllm_sampler_applies_the_template_options(model_dir):
    from vpo_engines.models.policy import load_tokenizer
    from vpo_engines.models.vllm import VllmSampler

    sampler = object.__new__(VllmSampler)  # vLLM itself needs a GPU: only its prompt rendering runs here
    sampler.tokenizer = load_tokenizer(model_dir)
    sampler.chat_template_kwargs = {"enable_thinking": False}
    assert sampler.prompt_text([{"role": "user", "content": "hi"}]).endswith(NOTHINK)
    sampler.chat_template_kwargs = {}
    assert NOTHINK not in sampler.prompt_text([{"role": "user", "content": "hi"}])


# ---------------------------------------------------------------------------------- endpoint
class _Server(ServerThread):
    """An OpenAI-compatible server on 127.0.0.1 whose answers come from `reply(payload) -> choices`."""

    def __init__(self, reply, models=("served-ckpt",), failures=0):
        self.requests = []
        self.failures = failures  # answer HTTP 503 to this many POSTs first
        owner = self

        class Handler(JsonHandler):
            def do_GET(self):
                if self.path == "/v1/models":
                    self.send_json(200, {"object": "list", "data": [{"id": m, "owned_by": "vllm"} for m in models]})
                else:
                    self.send_json(404, {"error": "not found"})

            def do_POST(self):
                payload = self.read_json()
                if self.path not in ("/v1/chat/completions", "/v1/completions"):  # no vLLM /tokenize here
                    self.send_json(404, {"detail": "Not Found"})
                    return
                owner.requests.append((self.path, payload, self.headers.get("Authorization")))
                if owner.failures > 0:
                    owner.failures -= 1
                    self.send_json(503, {"error": "busy"})
                    return
                self.send_json(200, {"choices": reply(self.path, payload)})

        super().__init__(Handler)
        self.base_url = f"{self.url}/v1"
        self.start()


def test_endpoint_chat_api_gets_the_settings_and_survives_bad_choices(tmp_path, model_dir, capsys):
    env = vpo_core.make("maze-v1", train_size=2, test_size=2)
    tasks = env.tasks("test")
    references = {t.index: env.reference_completion(t) for t in tasks}

    def reply(path, payload):
        user = payload["messages"][-1]["content"]
        index = next(t.index for t in tasks if env.render_prompt(t)[-1]["content"] in user)
        good = {"index": 0, "message": {"role": "assistant", "content": references[index]}}
        return [good, {"index": 1, "message": {"role": "assistant", "content": None}}]  # and the third is missing

    server = _Server(reply)
    try:
        args = [
            *MAZE,
            f"base_url={server.base_url}",
            "method=goal_cond",
            "samples=3",
            "api_key=sk-test",
            f"out={tmp_path}",
        ]
        _refused(capsys, [*args, "conditioning=w_star"], "pass tokenizer=", code=1)  # the pre-fill must be known
        assert _app()([*args, "conditioning=w_star", "concurrency=2", f"tokenizer={model_dir}"]) == 0
    finally:
        server.close()
    assert len(server.requests) == 2  # one request per task for its n completions
    path, payload, auth = server.requests[0]
    assert path == "/v1/chat/completions"
    assert auth == "Bearer sk-test"
    assert {k: payload[k] for k in ("model", "n", "temperature", "top_p", "max_tokens")} == {
        "model": "served-ckpt",
        "n": 3,
        "temperature": 0.7,
        "top_p": 1.0,
        "max_tokens": 1024,
    }
    assert payload["chat_template_kwargs"] == {"enable_thinking": False}
    assert sorted(p["seed"] for _, p, _ in server.requests) == [0, 1]
    spec = env.spec_for(tasks[0])
    assert all(goal_suffix(spec, spec.w_star_array) in p["messages"][-1]["content"] for _, p, _ in server.requests)
    row = _valid_results(tmp_path / "results.json")["rows"]["served-ckpt (w=w*)"]
    assert row["missing_completions"] == 4  # per task: one null content, one missing choice
    assert row["backend"] == "openai"
    pool = np.load(tmp_path / "pool_served-ckpt@w_star.npy")
    # the whole assistant turn is scored: the template's pre-fill, then the served text
    turns = {i: NOTHINK + text for i, text in references.items()}
    for t in tasks:
        np.testing.assert_array_equal(pool[t.index, 0, 0], env.score(t, turns[t.index])[0])
        assert not pool[t.index, 1:].any()
    assert row["metrics"]["best@3"] == pytest.approx(
        np.mean([env.spec_for(t).scalarize(env.score(t, turns[t.index]))[0] for t in tasks])
    )


def test_endpoint_completions_api_renders_with_the_local_tokenizer(model_dir, tmp_path, capsys):
    server = _Server(lambda path, payload: [{"index": i, "text": "junk"} for i in range(payload["n"])])
    try:
        args = [*MAZE, f"base_url={server.base_url}", "method=grpo", "samples=2", "api=completions", f"out={tmp_path}"]
        _refused(capsys, args, "pass tokenizer=", code=1)
        assert _app()([*args, f"tokenizer={model_dir}", "model=served-ckpt"]) == 0
        _refused(capsys, [*args, f"tokenizer={model_dir}", "model=other"], "does not serve model 'other'", code=1)
    finally:
        server.close()
    path, payload, _ = server.requests[0]
    assert path == "/v1/completions"
    assert payload["add_special_tokens"] is False
    assert payload["prompt"].rstrip().endswith(NOTHINK)
    assert json.loads((tmp_path / "results.json").read_text())["rows"]["served-ckpt"]["missing_completions"] == 0


def test_refused_connection_and_bad_endpoint_give_clear_errors(tmp_path, capsys):
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    base = [*MAZE, "method=grpo", f"out={tmp_path}"]
    _refused(capsys, [*base, f"base_url=http://127.0.0.1:{port}"], f"cannot reach http://127.0.0.1:{port}/v1/models", 1)
    _refused(capsys, [*base, "base_url=127.0.0.1:8000"], "not an http", code=1)
    _refused(capsys, [*base, "base_url=http://127.0.0.1:1/v1", "checkpoints=x"], "not both")


def test_endpoint_server_errors_name_the_status(tmp_path):
    from vpo_engines.models.openai import EndpointError, OpenAISampler

    server = _Server(lambda path, payload: None)
    try:
        sampler = OpenAISampler(server.base_url, retries=0)
        assert sampler.model == "served-ckpt"
        sampler.base_url = server.base_url.replace("/v1", "/nope")
        with pytest.raises(EndpointError, match="HTTP 404"):
            sampler.models()
    finally:
        server.close()


def test_endpoint_retries_a_busy_server():
    from vpo_engines.models.openai import EndpointError, OpenAISampler

    server = _Server(lambda path, payload: [{"index": 0, "message": {"content": "ok"}}], failures=1)
    try:
        sampler = OpenAISampler(server.base_url, retries=1)
        sampler_texts = sampler.sample(["[]"], num_samples=1, settings=SamplingSettings(0.7, 1.0, 4))
        assert sampler_texts == ["ok"]
        assert len(server.requests) == 2  # the 503, then the retry
        server.failures = 5
        with pytest.raises(EndpointError, match="HTTP 503"):
            OpenAISampler(server.base_url, retries=0).sample(
                ["[]"], num_samples=1, settings=SamplingSettings(0.7, 1.0, 4)
            )
    finally:
        server.close()


# ------------------------------------------------------------- one command: resume and log of a local model
def test_the_transformers_backend_logs_samples_and_resumes(model_dir, tmp_path, monkeypatch, capsys):
    """A local checkpoint gets the sample log and resume that only vpo-eval had before (one code path)."""
    env = vpo_core.make("maze-v1", train_size=2, test_size=2)
    recorder = Recorder(answer=env.reference_completion(env.tasks("test")[0]))
    recorder.install(monkeypatch)
    run = _grpo_run(tmp_path / "grpo", model_dir)
    out = tmp_path / "eval"
    args = [*MAZE, f"checkpoints={run}", f"out={out}", "samples=3", "log_samples=true"]
    assert _app()(args) == 0
    first = _valid_results(out / "results.json")
    row = first["rows"]["grpo"]
    assert (row["backend"], row["samples"], row["pool"]) == ("transformers", "samples_grpo.jsonl", "pool_grpo.npy")
    log = out / "samples_grpo.jsonl"
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(r["task_id"], r["sample"]) for r in records] == [(t.id, j) for t in env.tasks("test") for j in range(3)]
    assert all(r["completion"] == recorder.answer for r in records)
    np.testing.assert_allclose(records[0]["rewards"], env.score(env.tasks("test")[0], recorder.answer))
    assert _app()(args) == 2  # a logged evaluation is not overwritten
    assert "pass resume=true" in capsys.readouterr().err
    text = log.read_text()
    log.write_text(text[: len(text) - 30])  # interrupted inside the second task's last record
    recorder.calls.clear()
    assert _app()([*args, "resume=true"]) == 0
    (call,) = recorder.calls  # only the second task is sampled again, with the seed of its chunk
    assert (len(call["prompts"]), call["num_samples"], call["seed"]) == (1, 3, 0)
    assert "1 of 2 tasks already sampled" in capsys.readouterr().err
    again = _valid_results(out / "results.json")["rows"]["grpo"]
    assert again["metrics"] == row["metrics"]
    assert len(log.read_text().splitlines()) == 6
    np.testing.assert_array_equal(load_pool(out / "pool_grpo.npy").rewards, np.load(out / "pool_grpo.npy"))


def test_both_backends_write_results_of_one_schema(model_dir, tmp_path, monkeypatch, fake_openai):
    """results.json of a local checkpoint and of a served model: the same schema, the same row fields."""
    Recorder().install(monkeypatch)
    local = tmp_path / "local"
    assert _app()([*MAZE, f"checkpoints={_grpo_run(tmp_path / 'grpo', model_dir)}", f"out={local}", "samples=2"]) == 0
    server = fake_openai(lambda messages, n: ["x"] * n)
    served = tmp_path / "served"
    args = [*MAZE, f"base_url={server.base_url}", "template_options=none", "samples=2", f"out={served}"]
    assert _app()(args) == 0
    a, b = _valid_results(local / "results.json"), _valid_results(served / "results.json")
    assert set(a) == set(b)
    (row_a,), (row_b,) = a["rows"].values(), b["rows"].values()
    assert set(row_a) == set(row_b)
    assert set(row_a["metrics"]) == set(row_b["metrics"])
    assert (row_a["backend"], row_b["backend"]) == ("transformers", "openai")
    for out, row in ((local, row_a), (served, row_b)):
        pool = load_pool(out / row["pool"])
        assert (pool.env, pool.mode, pool.rewards.shape) == ("maze-v1", "single", (2, 2, 1, 4))
