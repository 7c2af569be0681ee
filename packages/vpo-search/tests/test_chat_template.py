"""The search's model requests carry the env's chat-template options and its completions the template's pre-fill.

Issue 36 (5b): vpo-search's client sent no chat-template options and added no pre-fill, so a search of a
Qwen3 checkpoint ran with thinking on, unlike training and evaluation. The server here is vpo-core's
`FakeVllm` (vLLM 0.32.0's endpoint shapes) rendering with the real SmolLM2 tokenizer and
``smollm2_think.jinja`` (its ChatML template plus Qwen3's rule: thinking off pre-fills an empty think
block); vpo-core's test_vllm_server.py runs the search's client against the real vLLM server.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("openevolve")

import vpo_core
from vpo_search import AnswerSearch, Ledger, parse_args, search_problem
from vpo_search.cli import main as cli_main
from vpo_search.engine import SearchError, problem_dir
from vpo_search.preflight import EndpointError, check_template_options

VLLM_TESTS = Path(__file__).resolve().parents[2] / "vpo-engines" / "tests" / "vllm"
sys.path.insert(0, str(VLLM_TESTS))
from fake_vllm import FakeVllm  # noqa: E402

pytestmark = pytest.mark.real_model

THINK = "<think>\n\n</think>\n\n"
OFF = {"enable_thinking": False}  # maze-v1's profile


@pytest.fixture(scope="module")
def maze():
    return AnswerSearch(vpo_core.make("maze-v1"))


@pytest.fixture
def vllm(smollm2):
    """Start `FakeVllm`s of the SmolLM2 tokenizer with the thinking rule (``vllm(reply)``); closed afterwards."""
    transformers = pytest.importorskip("transformers")
    tokenizer = transformers.AutoTokenizer.from_pretrained(smollm2)
    template = (VLLM_TESTS / "smollm2_think.jinja").read_text()
    servers: list[FakeVllm] = []

    def start(reply):
        servers.append(FakeVllm(tokenizer, reply, chat_template=template))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _search(maze, server, tmp_path, *extra):
    task = maze.tasks("test")[0]
    options = parse_args(
        [f"base_url={server.base_url}", "model=smollm2", f"out={tmp_path}", "num_islands=1", "env=maze-v1", *extra]
    )[1]
    status = search_problem(maze, task, options, tmp_path)
    return status, problem_dir(tmp_path, options.arm, task.id)


def test_a_search_sends_the_profiles_options_and_scores_whole_turns(maze, vllm, tmp_path, no_proxy):
    task = maze.tasks("test")[0]
    route = maze.env.reference_completion(task, mode="multi", m=3)
    rendered: list[str] = []
    server = vllm(lambda prompt, n: rendered.append(prompt) or [route] * n)
    status, root = _search(maze, server, tmp_path, "iterations=1")
    assert (status.calls, status.solved) == (1, True)
    chats = [p for path, p in server.requests if path == "/v1/chat/completions"]
    assert len(chats) == 1
    assert chats[0]["chat_template_kwargs"] == OFF  # thinking off, as in training and evaluation
    assert rendered[0].endswith("<|im_start|>assistant\n" + THINK)
    assert {"/tokenize", "/detokenize"} <= {path for path, _ in server.requests}
    (call,) = Ledger(root).completed_calls()
    assert call["prefill"] == THINK
    assert call["completions"] == [THINK + route]  # the whole assistant turn, parsed into the m candidates
    assert all(call["candidates"])
    assert json.loads((root / "run.json").read_text())["chat_template_kwargs"] == OFF


def test_no_options_send_nothing_extra(maze, vllm, tmp_path, no_proxy):
    task = maze.tasks("test")[0]
    route = maze.env.reference_completion(task, mode="multi", m=3)
    server = vllm(lambda prompt, n: [route] * n)
    status, root = _search(maze, server, tmp_path, "iterations=1", "chat_template_kwargs={}")
    assert status.calls == 1
    assert [path for path, _ in server.requests] == ["/v1/chat/completions"]  # nothing to ask about a pre-fill
    assert "chat_template_kwargs" not in server.requests[0][1]
    (call,) = Ledger(root).completed_calls()
    assert (call["prefill"], call["completions"]) == ("", [route])
    # a state directory made with other options is not continued with these
    with pytest.raises(SearchError, match="chat_template_kwargs"):
        _search(maze, server, tmp_path, "iterations=2")


def test_the_preflight_names_a_server_that_cannot_take_the_options(maze, vllm, openai_server, no_proxy, tmp_path):
    server = vllm(lambda prompt, n: ["x"] * n)
    assert check_template_options(server.base_url, "smollm2", "EMPTY", OFF) == THINK
    other = openai_server(lambda body: "x", model="smollm2")  # OpenAI-compatible, not vLLM
    with pytest.raises(EndpointError, match=r"not a vLLM server.*chat_template_kwargs=\{\}"):
        check_template_options(other.base_url, "smollm2", "EMPTY", OFF)
    server.tokenize = lambda payload: (404, {"detail": "Not Found"})  # vLLM, but /tokenize is not reachable
    with pytest.raises(EndpointError, match=r"cannot say what .*/tokenize answered HTTP 404"):
        check_template_options(server.base_url, "smollm2", "EMPTY", OFF)
    args = [f"base_url={other.base_url}", "model=smollm2", "env=maze-v1", "problems=0", f"out={tmp_path}"]
    with pytest.raises(SystemExit, match="not a vLLM server"):
        cli_main(args)
    assert not other.requests  # refused before any model call
