"""The template's pre-fill learned from a vLLM server (`vpo_engines.models.prefill`), and `vpo-eval` using it.

Fast: the server is `FakeVllm` (vLLM 0.32.0's endpoint shapes, rendering with the real SmolLM2 tokenizer).
The checkpoint's own ChatML template ignores ``enable_thinking``; ``smollm2_think.jinja`` is that template
plus Qwen3's rule (thinking off pre-fills an empty think block), served as vLLM's ``--chat-template`` would.
test_vllm_server.py runs the same against the real vLLM server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import vpo_core
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.evaluate import main
from vpo_engines.models.openai import EndpointError, OpenAISampler
from vpo_engines.models.prefill import PROBE, PrefillError, ServerPrefill, api_root, served_by_vllm

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from fake_vllm import FakeVllm  # noqa: E402

pytestmark = pytest.mark.real_model

THINK_TEMPLATE = (HERE / "smollm2_think.jinja").read_text()
THINK = "<think>\n\n</think>\n\n"  # what Qwen3's rule pre-fills with thinking off
OFF = {"enable_thinking": False}  # maze-v1's profile


@pytest.fixture(scope="module")
def tokenizer(smollm2):
    transformers = pytest.importorskip("transformers")
    return transformers.AutoTokenizer.from_pretrained(smollm2)


@pytest.fixture
def serve(tokenizer):
    """Start `FakeVllm`s of the SmolLM2 tokenizer (``serve(reply, chat_template=...)``); all closed afterwards."""
    servers: list[FakeVllm] = []

    def start(reply=lambda prompt, n: ["ok"] * n, **kwargs):
        servers.append(FakeVllm(tokenizer, reply, **kwargs))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _local_prefill(tokenizer, template, options):
    from vpo_engines.models.chat import template_prefill

    local = type(tokenizer).from_pretrained(tokenizer.name_or_path)
    if template is not None:
        local.chat_template = template
    return template_prefill(local, options)


@pytest.mark.parametrize(("template", "expected"), [(THINK_TEMPLATE, THINK), (None, "")])
def test_the_prefill_learned_from_the_server_is_the_templates(serve, tokenizer, template, expected):
    server = serve(chat_template=template)
    maze = vpo_core.make("maze-v1", test_size=2, train_size=1)
    messages = maze.render_prompt(maze.tasks("test")[0])
    prefill = ServerPrefill(server.base_url, model="smollm2", chat_template_kwargs=OFF)
    assert prefill(PROBE) == expected
    assert prefill(messages) == expected
    assert _local_prefill(tokenizer, template, OFF) == expected  # the tokenizer's definition, used in training
    paths = [path for path, _ in server.requests]
    assert paths == ["/tokenize", "/detokenize"] * 4  # two renderings (with and without) per conversation
    assert [p.get("chat_template_kwargs") for path, p in server.requests if path == "/tokenize"] == [OFF, None] * 2
    assert prefill(messages) == expected
    assert len(server.requests) == 8  # asked once per conversation
    assert ServerPrefill(server.base_url, model="smollm2", chat_template_kwargs={})(messages) == ""
    assert len(server.requests) == 8  # no options, nothing to ask
    # the server renders exactly what the tokenizer renders, and the pre-fill is what the options add
    assert prefill.render(messages, OFF) == server.render(messages, add_generation_prompt=True, **OFF)
    assert prefill.render(messages, OFF).endswith("<|im_start|>assistant\n" + expected)


def test_a_server_that_cannot_say_is_named(serve, fake_openai):
    server = serve(chat_template=THINK_TEMPLATE)
    with pytest.raises(PrefillError, match=r"/tokenize answered HTTP 404: .*The model `nope` does not exist"):
        ServerPrefill(server.base_url, model="nope", chat_template_kwargs=OFF)()
    other = fake_openai(lambda messages, n: ["x"] * n)  # an OpenAI-compatible server without /tokenize
    with pytest.raises(PrefillError, match=r"127\.0\.0\.1:\d+/tokenize answered HTTP 404"):
        ServerPrefill(other.base_url, model="fake-model", chat_template_kwargs=OFF)()
    with pytest.raises(PrefillError, match="gave no answer"):
        ServerPrefill("http://127.0.0.1:9/v1", model="m", chat_template_kwargs=OFF, retries=0)()
    assert api_root("http://h:8000/v1/") == "http://h:8000"
    assert api_root("http://h:8000/proxy") == "http://h:8000/proxy"
    assert served_by_vllm([{"id": "m", "owned_by": "vllm"}])
    assert not served_by_vllm([{"id": "m", "owned_by": "openai"}, {"id": "n"}])


def test_the_chat_sampler_returns_whole_turns_with_the_servers_prefill(serve):
    server = serve(lambda prompt, n: [f"reply {i}" for i in range(n)], chat_template=THINK_TEMPLATE)
    sampler = OpenAISampler(server.base_url, chat_template_kwargs=OFF)  # no tokenizer: vLLM's /tokenize says
    assert (sampler.prefill, sampler.prefill_source, sampler.vllm) == (THINK, "server", True)
    prompts = [json.dumps([{"role": "user", "content": text}]) for text in ("one?", "two?")]
    texts = sampler.sample(prompts, num_samples=2, settings=SamplingSettings(0.7, 1.0, 8), seed=0)
    assert texts == [THINK + "reply 0", THINK + "reply 1"] * 2
    chats = [p for path, p in server.requests if path == "/v1/chat/completions"]
    assert [p["chat_template_kwargs"] for p in chats] == [OFF, OFF]
    plain = OpenAISampler(server.base_url)  # no options: nothing pre-filled, nothing asked
    assert (plain.prefill, plain.prefill_source) == ("", "none")
    server.tokenize = lambda payload: (404, {"detail": "Not Found"})  # a proxy that forwards only /v1, say
    with pytest.raises(EndpointError, match="pass tokenizer=") as refused:
        OpenAISampler(server.base_url, chat_template_kwargs=OFF)
    assert "/tokenize answered HTTP 404" in str(refused.value)


def test_vpo_eval_learns_the_prefill_from_vllm_and_scores_whole_turns(serve, tmp_path, capsys):
    maze = vpo_core.make("maze-v1", test_size=3, train_size=2)
    routes = {maze.render_prompt(t)[-1]["content"]: maze.reference_completion(t) for t in maze.tasks("test")}
    prompts: list[str] = []

    def reply(prompt, n):
        prompts.append(prompt)
        route = next(r for question, r in routes.items() if question in prompt)
        return [route, "lost"][:n] + ["lost"] * max(0, n - 2)

    server = serve(reply, chat_template=THINK_TEMPLATE)
    out = tmp_path / "eval"
    argv = ["env=maze-v1", f"base_url={server.base_url}", "tasks=2", "samples=2", f"out={out}", "log_samples=true"]
    assert main([*argv, "env.test_size=3", "env.train_size=2"]) == 0
    err = capsys.readouterr().err
    assert f"the template pre-fills {THINK!r} (learned from the server's /tokenize)" in err
    (results,) = json.loads((out / "results.json").read_text())["rows"].values()
    assert results["chat_template_prefill"] == {"text": THINK, "source": "server"}
    assert results["settings"]["chat_template_kwargs"] == OFF
    assert all(p.endswith("<|im_start|>assistant\n" + THINK) for p in prompts)  # the options reached the template
    records = [json.loads(line) for line in (out / results["samples"]).read_text().splitlines()]
    assert len(records) == 4
    tasks = {t.id: t for t in maze.tasks("test")}
    for record in records:
        assert record["completion"].startswith(THINK)  # the whole assistant turn, as training scores it
        expected = maze.score_completion(tasks[record["task_id"]], record["completion"], mode="single", m=1)
        assert record["rewards"] == expected.rewards.tolist()
    assert results["metrics"]["pass@1"] == pytest.approx(0.5)  # one reference route and one miss per task
