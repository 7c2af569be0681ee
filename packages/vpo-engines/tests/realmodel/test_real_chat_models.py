"""Real chat-model shapes end to end, on CPU and with no download (issue 23).

A Qwen3-architecture model with Qwen3's chat template (thinking off pre-fills an empty think block) and a
Llama-architecture model whose tokenizer has no pad token (chat_models.py builds both and programs them
to write one known completion). One completion text must get the same reward vector on every path:
local training, apps/evaluate.py with the local sampler and with the OpenAI-compatible sampler against a
local vLLM-like server, apps/diagnose.py, and the veRL reward manager; generation must stop at EOS; and
each rollout is scored by exactly one `rewards` call.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import re
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

import vpo_core
from vpo_core.http_json import JsonHandler, ServerThread
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.models.chat import render_chat
from vpo_engines.models.openai import VLLM_ONLY_FIELDS, EndpointError, OpenAISampler
from vpo_engines.models.policy import load_policy, load_tokenizer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(HERE))  # think_env (an env id of the module:Class form) and chat_models

from chat_models import programmed_chat_model  # noqa: E402
from think_env import ThinkEnv  # noqa: E402

ENV = "think_env:ThinkEnv"
GENERATED = "<answer_1>7</answer_1><answer_2>5</answer_2>"
PREFILL = {"qwen3": "<think>\n\n</think>\n\n", "llama": ""}  # what each template pre-fills with thinking off
KINDS = ("qwen3", "llama")

# OpenAI's request schemas (platform.openai.com/docs/api-reference), the body fields a client may send.
OPENAI_CHAT_FIELDS = {
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier", "seed",
    "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
}  # fmt: skip
OPENAI_COMPLETIONS_FIELDS = {
    "model", "prompt", "best_of", "echo", "frequency_penalty", "logit_bias", "logprobs", "max_tokens", "n",
    "presence_penalty", "seed", "stop", "stream", "stream_options", "suffix", "temperature", "top_p", "user",
}  # fmt: skip


@pytest.fixture(scope="module")
def env():
    return vpo_core.make(ENV)


@pytest.fixture(scope="module")
def models(tmp_path_factory, env):
    """kind -> (model directory, token ids of GENERATED + EOS)."""
    out = {}
    for kind in KINDS:
        from chat_models import build_tokenizer

        tail = render_chat(
            build_tokenizer(kind),
            env.render_prompt(env.tasks("test")[0], mode="multi", m=2),
            {"enable_thinking": False},
        )
        out[kind] = programmed_chat_model(kind, tmp_path_factory.mktemp(kind) / "model", GENERATED, prompt_tail=tail)
    return out


def _expected(env, kind):
    """The reward rows of the whole turn on each test task, shape (T, m, d), by the env's own scorer."""
    turn = PREFILL[kind] + GENERATED
    return np.stack([env.score_completion(t, turn, mode="multi", m=2).rewards for t in env.tasks("test")])


class FakeVllm(ServerThread):
    """A vLLM-like OpenAI-compatible server on 127.0.0.1 that samples with a local model (transformers).

    Like ``vllm serve``, the chat API renders the messages with the checkpoint's template and the request's
    ``chat_template_kwargs``, answers only the generated text, and lists its model as ``owned_by`` vLLM
    (``owner="other"`` plays any other server, which would refuse vLLM's extra fields).
    """

    def __init__(self, model_dir, owner="vllm"):
        self.policy = load_policy(model_dir)  # no template options: `generate` returns only generated text
        self.requests = []
        fake = self

        class Handler(JsonHandler):
            def do_GET(self):
                self.send_json(200, {"object": "list", "data": [{"id": "tiny", "object": "model", "owned_by": owner}]})

            def do_POST(self):
                payload = self.read_json()
                fake.requests.append((self.path, payload))
                chat = self.path.endswith("/chat/completions")
                tok = fake.policy.tokenizer
                if self.path in ("/tokenize", "/detokenize") and owner != "vllm":
                    self.send_json(404, {"detail": "Not Found"})
                    return
                if self.path == "/tokenize":  # vLLM's, at the root: the ids of the rendered chat
                    text = render_chat(tok, payload["messages"], payload.get("chat_template_kwargs"))
                    self.send_json(200, {"tokens": tok.encode(text, add_special_tokens=False), "max_model_len": 256})
                    return
                if self.path == "/detokenize":
                    self.send_json(200, {"prompt": tok.decode(payload["tokens"])})
                    return
                if chat:
                    prompt = render_chat(tok, payload["messages"], payload.get("chat_template_kwargs"))
                else:
                    prompt = payload["prompt"]
                settings = SamplingSettings(payload["temperature"], payload["top_p"], payload["max_tokens"])
                texts = fake.policy.sample([prompt], num_samples=payload["n"], settings=settings, seed=payload["seed"])
                key = "message" if chat else "text"
                choices = [
                    {"index": i, key: {"role": "assistant", "content": t} if chat else t} for i, t in enumerate(texts)
                ]
                self.send_json(200, {"choices": choices})

        super().__init__(Handler)
        self.base_url = f"{self.url}/v1"
        self.start()


def _app(command):
    """``vpo <command>`` (the apps/ scripts are its aliases), called with its arguments."""
    from vpo_engines.cli import main as vpo

    return lambda argv: vpo([command, *argv])


# ------------------------------------------------------------------------------------ stopping
def test_a_tokenizer_without_a_pad_token_stops_at_eos(models, env):
    model_dir, ids = models["llama"]
    assert json.loads((model_dir / "tokenizer_config.json").read_text()).get("pad_token") is None
    policy = load_policy(model_dir)
    tok = policy.tokenizer
    assert tok.pad_token_id is not None
    assert tok.pad_token_id != tok.eos_token_id
    assert policy.model.get_input_embeddings().weight.shape[0] > tok.pad_token_id  # the model has a row for it
    prompt = policy.prompt_text(env.render_prompt(env.tasks("test")[0], mode="multi", m=2))
    texts, _, response = policy.generate([prompt], num_samples=3, max_new_tokens=40, temperature=1.0, seed=0)
    assert texts == [GENERATED] * 3
    assert policy.response_mask(response).sum(dim=1).tolist() == [len(ids)] * 3  # up to and including EOS
    assert (response[:, len(ids) - 1] == tok.eos_token_id).all()


def test_an_eos_pad_is_refused_by_generation(models, env):
    policy = load_policy(models["llama"][0])
    policy.tokenizer.pad_token = policy.tokenizer.eos_token  # what the loader used to do
    with pytest.raises(ValueError, match="EOS could never end a sample"):
        policy.generate(["x"], num_samples=1, max_new_tokens=4, temperature=1.0)


def test_generation_never_runs_past_the_models_positions(models, env):
    policy = load_policy(models["qwen3"][0])  # 256 positions
    prompt = policy.prompt_text(env.render_prompt(env.tasks("test")[0], mode="multi", m=2))
    _, prompt_ids, response = policy.generate([prompt], num_samples=1, max_new_tokens=10_000, temperature=1.0)
    assert prompt_ids.shape[1] + response.shape[1] <= 256
    with pytest.raises(ValueError, match="fills the model's 256 positions"):
        policy.generate(["x " * 300], num_samples=1, max_new_tokens=4, temperature=1.0)


# ----------------------------------------------------------------------------- whole turns
@pytest.mark.parametrize("kind", KINDS)
def test_every_sampler_returns_the_whole_assistant_turn(models, env, kind):
    model_dir, _ = models[kind]
    kwargs = dict(env.profile.chat_template_kwargs)
    messages = env.render_prompt(env.tasks("test")[1], mode="multi", m=2)
    turn = PREFILL[kind] + GENERATED
    sampling = SamplingSettings(temperature=1.0, top_p=1.0, max_new_tokens=30)
    settings = {"num_samples": 2, "settings": sampling, "seed": 3}
    policy = load_policy(model_dir)
    local = dataclasses.replace(policy, chat_template_kwargs=kwargs)  # evaluation's sampler (apps/evaluate.py)
    assert local.sample([local.prompt_text(messages)], **settings) == [turn] * 2
    assert policy.chat_template_kwargs == {}  # a copy: the policy it was made from renders without the options
    policy.chat_template_kwargs = kwargs  # the training engine's policy
    texts, _, _ = policy.generate([policy.prompt_text(messages)], num_samples=2, seed=3, **sampling.as_kwargs())
    assert texts == [turn] * 2
    server = FakeVllm(model_dir)
    try:
        for api in ("chat", "completions"):
            sampler = OpenAISampler(server.base_url, api=api, tokenizer=model_dir, chat_template_kwargs=kwargs)
            assert sampler.sample([sampler.prompt_text(messages)], **settings) == [turn] * 2, api
        # no tokenizer: the pre-fill is learned from the server (vLLM's /tokenize and /detokenize)
        sampler = OpenAISampler(server.base_url, api="chat", chat_template_kwargs=kwargs)
        assert (sampler.prefill, sampler.prefill_source) == (PREFILL[kind], "server")
        assert sampler.sample([sampler.prompt_text(messages)], **settings) == [turn] * 2
    finally:
        server.close()
    server = FakeVllm(model_dir, owner="other")
    try:
        with pytest.raises(EndpointError, match="only vLLM takes chat template options"):
            OpenAISampler(server.base_url, api="chat", chat_template_kwargs=kwargs)
        with pytest.raises(EndpointError, match="pass tokenizer="):  # vLLM by name, but no /tokenize to ask
            OpenAISampler(server.base_url, api="chat", chat_template_kwargs=kwargs, server="vllm")
    finally:
        server.close()


def test_requests_follow_the_openai_schema_and_vllm_fields_go_to_vllm_only(models, env):
    model_dir, _ = models["qwen3"]
    kwargs = dict(env.profile.chat_template_kwargs)
    prompt_messages = env.render_prompt(env.tasks("test")[0], mode="multi", m=2)
    settings = {"num_samples": 1, "settings": SamplingSettings(temperature=1.0, top_p=1.0, max_new_tokens=30)}
    for owner in ("vllm", "other"):
        server = FakeVllm(model_dir, owner=owner)
        try:
            completions = OpenAISampler(
                server.base_url, api="completions", tokenizer=model_dir, chat_template_kwargs=kwargs
            )
            completions.sample([completions.prompt_text(prompt_messages)], **settings)
            chat = OpenAISampler(server.base_url, api="chat", tokenizer=model_dir)  # no template options
            chat.sample([chat.prompt_text(prompt_messages)], **settings)
            if owner == "other":
                with pytest.raises(EndpointError, match="only vLLM takes chat template options"):
                    OpenAISampler(server.base_url, api="chat", tokenizer=model_dir, chat_template_kwargs=kwargs)
            else:
                chat = OpenAISampler(server.base_url, api="chat", tokenizer=model_dir, chat_template_kwargs=kwargs)
                chat.sample([chat.prompt_text(prompt_messages)], **settings)
        finally:
            server.close()
        for path, payload in server.requests:
            schema = OPENAI_CHAT_FIELDS if path.endswith("/chat/completions") else OPENAI_COMPLETIONS_FIELDS
            extra = set(payload) - schema
            if owner == "vllm":
                assert extra <= set(VLLM_ONLY_FIELDS), (path, extra)
            else:
                assert not extra, (path, extra)
        if owner == "vllm":
            assert {"add_special_tokens", "chat_template_kwargs"} <= {k for _, p in server.requests for k in p}


# ------------------------------------------------------------------------------ every path
@pytest.fixture(scope="module")
def runs(models, tmp_path_factory):
    """kind -> a run directory of apps/train.py: two RL steps from the programmed model (8 rollouts each)."""
    out = {}
    for kind in KINDS:
        run = tmp_path_factory.mktemp(f"run-{kind}") / "vpo"
        ThinkEnv.calls = 0
        report = _train(models[kind][0], run)
        out[kind] = (run, report, ThinkEnv.calls)
    return out


def _train(model_dir, run):
    from vpo_engines.local.train import main as train_main

    args = [f"env={ENV}", f"model={model_dir}", "method=vpo", "m=2", "steps=2", "prompts_per_step=2"]
    args += ["group_size=4", "eval_tasks=0", "lr=1e-6", "max_new_tokens=30", "threads=1", f"out={run}"]
    assert train_main(args) == 0
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("kind", KINDS)
def test_local_training_scores_each_rollout_once_with_the_whole_turn(runs, env, kind):
    run, metrics, calls = runs[kind]
    assert calls == 2 * 8  # two steps of 2 prompts x 4 rollouts: one `rewards` call per rollout, not two
    train_turn = np.stack(
        [env.score_completion(t, PREFILL[kind] + GENERATED, mode="multi", m=2).rewards for t in env.tasks("train")]
    )
    for record in metrics:
        assert [record["reward/format"], record["reward/correct"]] == pytest.approx(train_turn.mean(axis=(0, 1)))
    assert record["reward/format"] == (1.0 if kind == "qwen3" else 0.0)  # the pre-fill's think block counts
    assert json.loads((run / "token_budget.json").read_text()) == {"max_new_tokens": 30}


@pytest.mark.parametrize("kind", KINDS)
def test_evaluate_and_diagnose_give_the_same_reward_vector(runs, models, env, kind, tmp_path, capsys):
    run, _, _ = runs[kind]
    expected = _expected(env, kind)  # (T, m, d)
    local = tmp_path / "local"
    assert _app("eval")([f"env={ENV}", f"checkpoints={run}", f"out={local}", "progress=false"]) == 0
    row = json.loads((local / "results.json").read_text())["rows"]["vpo"]
    assert row["settings"]["max_new_tokens"] == 30  # the run's own budget, not the profile's 40
    assert row["missing_completions"] == 0
    pool = np.load(local / row["pool"])  # (T, n, m, d)
    assert pool.shape == (4, 2, 2, 2)
    np.testing.assert_array_equal(pool, np.broadcast_to(expected[:, None], pool.shape))

    server = FakeVllm(models[kind][0])
    try:
        served = tmp_path / "served"
        args = [f"env={ENV}", f"base_url={server.base_url}", "method=vpo", "m=2", f"tokenizer={models[kind][0]}"]
        assert _app("eval")([*args, f"out={served}", "progress=false", "max_new_tokens=30"]) == 0
    finally:
        server.close()
    np.testing.assert_array_equal(np.load(served / "pool_tiny.npy"), pool)

    capsys.readouterr()
    assert _app("diagnose")([f"env={ENV}", f"vpo={local / row['pool']}", "k=2"]) == 0
    printed = capsys.readouterr().out
    best = float(re.search(r"best@2 \(w\* = .*?\) = ([0-9.]+)", printed).group(1))
    assert best == pytest.approx(np.mean(env.reward_spec.scalarize(expected).max(axis=-1)), abs=1e-3)


@pytest.mark.parametrize("kind", KINDS)
def test_the_verl_reward_manager_scores_the_same_turn_once(models, env, kind, monkeypatch):
    pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl`")
    from omegaconf import OmegaConf
    from verl import DataProto
    from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls

    from vpo_engines.verl.export import rows_for

    model_dir, ids = models[kind]
    tokenizer = load_tokenizer(model_dir)
    config = OmegaConf.create(
        {
            "algorithm": {"vpo": {"seed": 0}},
            "data": {"apply_chat_template_kwargs": dict(env.profile.chat_template_kwargs)},
        }
    )
    manager = get_reward_manager_cls("vpo")(config, tokenizer, None)
    expected = _expected(env, kind)
    for row in rows_for(ENV, "test", "vpo", m=2):
        prompt = torch.tensor([tokenizer(render_chat(tokenizer, row["prompt"]), add_special_tokens=False)["input_ids"]])
        response = torch.tensor([[*ids, tokenizer.pad_token_id, tokenizer.pad_token_id]])  # veRL right-pads
        mask = torch.cat([torch.ones_like(prompt), torch.tensor([[1] * len(ids) + [0, 0]])], dim=1)
        data = DataProto.from_dict(
            tensors={"prompts": prompt, "responses": response, "attention_mask": mask},
            non_tensors={
                "data_source": np.array([row["data_source"]], dtype=object),
                "reward_model": np.array([row["reward_model"]], dtype=object),
                "extra_info": np.array([row["extra_info"]], dtype=object),
                "uid": np.array(["u"], dtype=object),
            },
        )
        ThinkEnv.calls = 0
        out = asyncio.run(manager.run_single(data))
        assert ThinkEnv.calls == 1
        index = row["extra_info"]["index"]
        np.testing.assert_array_equal(json.loads(out["reward_extra_info"]["reward_matrix"]), expected[index])
