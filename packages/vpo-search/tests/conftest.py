"""Test helpers: a local OpenAI-compatible server whose answers the test controls, and chain completions."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from vpo_core.http_json import JsonHandler, ServerThread

Answer = Callable[[dict[str, Any]], str]


class FakeOpenAI(ServerThread):
    """``/v1/models`` and ``/v1/chat/completions`` on 127.0.0.1 (an ephemeral port), in a thread.

    Args:
        answer: Called with each chat request's JSON; returns the completion text. Raise to answer 500.
        model: The served model id.
        key: The bearer token it accepts (None: any).
    """

    def __init__(self, answer: Answer, model: str = "test-model", key: str | None = None) -> None:
        self.answer, self.model, self.key = answer, model, key
        self.requests: list[dict[str, Any]] = []
        fake = self

        class Handler(JsonHandler):
            def _authorized(self) -> bool:
                if fake.key is None or self.headers.get("Authorization") == f"Bearer {fake.key}":
                    return True
                self.send_json(401, {"error": {"message": "bad key"}})
                return False

            def do_GET(self) -> None:
                if not self._authorized():
                    return
                if self.path.rstrip("/") == "/v1/models":
                    self.send_json(200, {"object": "list", "data": [{"id": fake.model, "object": "model"}]})
                else:
                    self.send_json(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                if not self._authorized():
                    return
                body = self.read_json()
                fake.requests.append(body)
                try:
                    text = fake.answer(body)
                except Exception as exc:
                    self.send_json(500, {"error": {"message": f"scripted failure: {exc}"}})
                    return
                self.send_json(
                    200,
                    {
                        "id": f"chatcmpl-{len(fake.requests)}",
                        "object": "chat.completion",
                        "created": 0,
                        "model": body.get("model", fake.model),
                        "choices": [
                            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    },
                )

        super().__init__(Handler)
        self.base_url = f"{self.url}/v1"


def chain(*programs: str | None) -> str:
    """A multi-answer completion: each program in ``<response_i>`` tags and a python fence (None: omitted)."""
    parts = []
    for i, program in enumerate(programs, start=1):
        if program is not None:
            parts.append(f"<response_{i}>\nApproach {i}.\n```python\n{program}\n```\n</response_{i}>")
    return "\n".join(parts)


@pytest.fixture
def openai_server():
    """Start `FakeOpenAI` servers (``openai_server(answer, **kw)``); every one is stopped after the test."""
    started: list[FakeOpenAI] = []

    def start(answer: Answer, **kwargs: Any) -> FakeOpenAI:
        started.append(FakeOpenAI(answer, **kwargs).start())
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def no_proxy(monkeypatch):
    """Keep HTTP clients (and OpenEvolve's workers, which copy the environment) off any proxy for 127.0.0.1."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def chain_of():
    """`chain`: programs → a multi-answer completion."""
    return chain
