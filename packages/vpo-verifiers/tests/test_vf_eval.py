"""vpo-verifiers through verifiers' own loader and `vf-eval`'s code path, against a local fake server.

Runs where verifiers 0.4 is installed (`UV_PROJECT_ENVIRONMENT=packages/vpo-verifiers/.venv uv sync --locked
--group verifiers`); elsewhere the module skips. No test reaches the network: a guard fails any connection that
is not to the loopback interface.
"""

from __future__ import annotations

import ipaddress
import json
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("verifiers.v1", reason="needs verifiers 0.4: uv sync --group verifiers (its own venv, README)")

from pydantic import ValidationError
from verifiers.v1.cli.eval.main import main as vf_eval_main
from verifiers.v1.envs.single_agent import SingleAgentEnv, SingleAgentEnvConfig
from verifiers.v1.runtimes import SubprocessConfig
from verifiers.v1.utils import loaders

import vpo_core
import vpo_verifiers
from vpo_core.http_json import JsonHandler, ServerThread
from vpo_core.multi_answer import extract_numbered, render_numbered
from vpo_verifiers.taskset import VPOChatHarness, VPOEnv, VPOEnvConfig, VPOTaskset, VPOTasksetConfig

N_TASKS = 3


class FakeChatServer(ServerThread):
    """An OpenAI-compatible ``/v1/chat/completions`` in a thread, with the full ChatCompletion shape verifiers
    validates; ``reply(messages)`` gives the assistant text. Records every request body."""

    def __init__(self, reply: Callable[[list[dict[str, Any]]], str]) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                body = self.read_json()
                owner.requests.append(body)
                if self.path != "/v1/chat/completions" or body.get("stream"):
                    self.send_response(404)
                    self.end_headers()
                    return
                text = reply(body["messages"])
                self.send_json(
                    200,
                    {
                        "id": f"chatcmpl-{len(owner.requests)}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": text},
                                "finish_reason": "stop",
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

        super().__init__(Handler)
        self.start()
        self.base_url = f"{self.url}/v1"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Refuse (and record) every socket connection that is not to loopback or a Unix socket."""
    refused: list[Any] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def allowed(sock: socket.socket, address: Any) -> bool:
        if sock.family == socket.AF_UNIX:
            return True
        host = address[0] if isinstance(address, tuple) else address
        if host == "localhost":
            return True
        try:
            return ipaddress.ip_address(host).is_loopback
        except ValueError:
            return False

    def connect(sock: socket.socket, address: Any) -> Any:
        if not allowed(sock, address):
            refused.append(address)
            raise ConnectionRefusedError(f"test guard: no network ({address!r})")
        return real_connect(sock, address)

    def connect_ex(sock: socket.socket, address: Any) -> Any:
        if not allowed(sock, address):
            refused.append(address)
            return 111
        return real_connect_ex(sock, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return refused


@pytest.fixture
def maze() -> Any:
    return vpo_core.make("maze-v1")


def _reversed_multi(maze: Any, task: Any, m: int) -> str:
    """The reference's m Pareto routes, worst first: the w*-best answer is not the first one."""
    reference = maze.reference_completion(task, mode="multi", m=m)
    bodies = [b for b in extract_numbered(reference, "route", m) if b is not None]
    assert len(bodies) == m
    return render_numbered("route", bodies[::-1])


def _run_vf_eval(argv: list[str], out: Path) -> list[dict[str, Any]]:
    """`vf-eval`'s entry point in-process; returns the traces it wrote (`traces.jsonl`)."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        vf_eval_main([*argv, "--no-push", "--no-rich", "-o", str(out), "--run.name", "vpo"])
    finally:  # vf-eval installs its own Ctrl-C handler; give pytest its own back
        for s, handler in handlers.items():
            signal.signal(s, handler)
    traces_file = out / "vpo" / "traces.jsonl"
    lines = [json.loads(line) for line in traces_file.read_text().splitlines() if line.strip()]
    traces = [t for line in lines for t in (line.get("traces") or [line])]
    assert traces, f"no traces in {traces_file}"
    return traces


def _prompt_key(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in reversed(messages) if m["role"] == "user")


# ------------------------------------------------------------------------------------------- loader
def test_verifiers_loader_finds_one_taskset_and_our_harness():
    assert loaders.taskset_class("vpo-verifiers") is VPOTaskset
    assert loaders.default_harness_id("vpo-verifiers") == "vpo-verifiers"
    assert loaders.harness_class("vpo-verifiers") is VPOChatHarness
    assert loaders.environment_class("vpo-verifiers") is VPOEnv
    assert issubclass(VPOEnv, SingleAgentEnv)  # replay and GEPA accept single-agent runs only
    assert loaders.env_config_type("vpo-verifiers") is VPOEnvConfig
    assert issubclass(VPOEnvConfig, SingleAgentEnvConfig)
    assert isinstance(VPOEnvConfig().agent.runtime, SubprocessConfig)  # local: no Prime sandbox, no tunnel
    assert loaders.taskset_config_type("vpo-verifiers") is VPOTasksetConfig
    assert vpo_verifiers.VPOTaskset is VPOTaskset


@pytest.mark.parametrize("env_id", vpo_core.list_envs())
def test_every_registered_env_resolves_through_the_config(env_id):
    """The config accepts every installed id and knows its splits; building tasks may need the env's data."""
    cls = vpo_core.registry.resolve_env_class(env_id)
    config = VPOTasksetConfig(id="vpo-verifiers", env=env_id, split=cls.splits[-1], m=2)
    assert config.prompt_mode == "multi"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"env": "maze-v9"}, "unknown env id 'maze-v9'"),
        ({"split": "validation"}, "split must be one of 'maze-v1'"),
        ({"m": 0}, "m must be a positive int"),
        ({"m": 3, "mode": "single"}, "m must be 1"),
        ({"options": {"train_size": float("nan")}}, "JSON values"),
    ],
)
def test_bad_settings_fail_when_the_config_is_read(fields, message):
    with pytest.raises(ValidationError, match=message):
        VPOTasksetConfig(id="vpo-verifiers", **fields)


def test_tasks_carry_the_envs_prompt_and_unique_keys(maze):
    tasks = list(VPOTaskset(VPOTasksetConfig(id="vpo-verifiers", m=3)).take(5))
    assert [t.data.idx for t in tasks] == list(range(5))
    env_task = maze.tasks("test")[1]
    assert [m.model_dump(include={"role", "content"}) for m in tasks[1].data.prompt] == list(
        maze.render_prompt(env_task, mode="multi", m=3)
    )
    assert len({t.key for t in tasks}) == 5
    assert tasks[0].reward_names() == tuple(zip(maze.reward_spec.names, maze.reward_spec.w_star, strict=True))


# ------------------------------------------------------------------------------------------ vf-eval
def test_vf_eval_single_answer_records_named_weighted_rewards(tmp_path, maze, no_network):
    tasks = maze.tasks("test")[:N_TASKS]
    prompts = {_prompt_key(maze.render_prompt(t)): list(maze.render_prompt(t)) for t in tasks}
    routes = {_prompt_key(maze.render_prompt(t)): maze.reference_completion(t) for t in tasks}
    server = FakeChatServer(lambda messages: routes[_prompt_key(messages)])
    try:
        traces = _run_vf_eval(
            ["vpo-verifiers", "-n", str(N_TASKS), "--model", "fake-model", "--client.base-url", server.base_url,
             "--client.api-key-var", "VPO_FAKE_KEY", "--sampling.temperature", "0.5"],
            tmp_path,
        )  # fmt: skip
    finally:
        server.close()
    assert not no_network
    assert len(traces) == N_TASKS
    assert len(server.requests) == N_TASKS
    for request in server.requests:
        assert request["model"] == "fake-model"
        assert request["temperature"] == 0.5
        assert request["messages"] == prompts[_prompt_key(request["messages"])]  # the env's prompt, as rendered
    spec = maze.reward_spec
    for trace in sorted(traces, key=lambda t: t["task"]["data"]["idx"]):
        task = tasks[trace["task"]["data"]["idx"]]
        expected = maze.score(task, maze.reference_completion(task))[0]
        assert sorted(trace["rewards"]) == sorted(spec.names)  # verifiers orders hooks by name
        assert [trace["rewards"][n]["score"] for n in spec.names] == pytest.approx(expected.tolist())
        assert [trace["rewards"][n]["weight"] for n in spec.names] == pytest.approx(list(spec.w_star))
        assert trace["metrics"]["success"] == 1.0  # the reference route is w*-optimal
        assert trace["metrics"]["parsed"] == 1.0
        assert trace["info"]["vpo"]["rewards"] == [expected.tolist()]


@pytest.mark.parametrize("set_reward", ["best", "max"])
def test_vf_eval_multi_answer_derives_named_rewards_from_the_matrix(tmp_path, maze, no_network, set_reward):
    m = 3
    tasks = maze.tasks("test")[:N_TASKS]
    replies = {_prompt_key(maze.render_prompt(t, mode="multi", m=m)): _reversed_multi(maze, t, m) for t in tasks}
    server = FakeChatServer(lambda messages: replies[_prompt_key(messages)])
    try:
        traces = _run_vf_eval(
            ["vpo-verifiers", "--env.taskset.m", str(m), "--env.taskset.set-reward", set_reward, "-n", str(N_TASKS),
             "--model", "fake-model", "--client.base-url", server.base_url, "--client.api-key-var", "VPO_FAKE_KEY"],
            tmp_path,
        )  # fmt: skip
    finally:
        server.close()
    assert not no_network
    spec = maze.reward_spec
    differs = later = 0
    for trace in traces:
        task = tasks[trace["task"]["data"]["idx"]]
        matrix = maze.score(task, replies[_prompt_key(maze.render_prompt(task, mode="multi", m=m))], mode="multi", m=m)
        assert trace["info"]["vpo"]["rewards"] == matrix.tolist()
        best = int(np.argmax(matrix @ spec.w_star_array))
        expected = matrix[best] if set_reward == "best" else matrix.max(axis=0)
        named = np.array([trace["rewards"][n]["score"] for n in spec.names])
        assert named == pytest.approx(expected)
        total = sum(r["score"] * r["weight"] for r in trace["rewards"].values())
        if set_reward == "best":
            assert trace["info"]["vpo"]["chosen"] == best
            later += best != 0  # the reply lists the routes worst first
            assert total == pytest.approx(float((matrix @ spec.w_star_array).max()))  # best-of-m under w*
        else:
            assert trace["info"]["vpo"]["chosen"] is None
            assert total >= float((matrix @ spec.w_star_array).max()) - 1e-12
        differs += not np.allclose(matrix[best], matrix.max(axis=0))
        assert [trace["metrics"][f"max/{n}"] for n in spec.names] == pytest.approx(matrix.max(axis=0).tolist())
    assert differs  # on these mazes the two rules give different rewards, so the test tells them apart
    assert later or set_reward == "max"  # and the w*-best answer is not always the first
