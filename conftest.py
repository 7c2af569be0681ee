"""Session-wide test settings: no test may reach the network (Hugging Face libraries stay offline).

Fixtures for every package's tests: `fake_openai` (a local OpenAI-compatible server), `serve` (hostile local
servers for the HTTP clients' tests) and `smollm2` (the real SmolLM2-135M-Instruct checkpoint as an HF folder,
converted once per cache by `vpo_engines.checkpoints`).
"""

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from vpo_core.http_json import JsonHandler, ServerThread

HTTP_SUPPORT = Path(__file__).resolve().parent / "packages" / "vpo-core" / "tests" / "http_support"

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


class FakeOpenAI(ServerThread):
    """A local OpenAI-compatible server (``/v1/models``, ``/v1/chat/completions``) in a thread; no network.

    ``reply(messages, n)`` gives the n completion texts of one request; every request is recorded.
    """

    def __init__(self, reply: Callable[[list[dict[str, Any]], int], list[str]], model: str = "fake-model") -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self.send_json(200, {"object": "list", "data": [{"id": model}]})
                else:
                    self.send_json(404, {"error": "not found"})

            def do_POST(self) -> None:
                payload = self.read_json()
                owner.requests.append(payload)
                if self.path != "/v1/chat/completions":
                    self.send_json(404, {"error": "not found"})
                    return
                texts = reply(payload["messages"], int(payload.get("n", 1)))
                choices = [{"index": i, "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)]
                self.send_json(200, {"choices": choices})

        super().__init__(Handler)
        self.start()
        self.base_url = f"{self.url}/v1"


@pytest.fixture
def fake_openai() -> Iterator[Callable[..., FakeOpenAI]]:
    """Start `FakeOpenAI` servers (``fake_openai(reply)``); all are shut down after the test."""
    servers: list[FakeOpenAI] = []

    def start(reply: Callable[[list[dict[str, Any]], int], list[str]], model: str = "fake-model") -> FakeOpenAI:
        servers.append(FakeOpenAI(reply, model))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Any]]:
    """Start hostile local servers (``serve(handle)``); all are closed after the test.

    Each is a `Server` of packages/vpo-core/tests/http_support/hostile_server.py: it answers as the test's
    ``handle(handler, seen)`` tells it (redirects, floods, trickles).
    """
    if str(HTTP_SUPPORT) not in sys.path:  # only the helper's own folder (a tests folder may hold a `vllm/`)
        sys.path.insert(0, str(HTTP_SUPPORT))
    from hostile_server import serving

    with serving() as start:
        yield start


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The real SmolLM2-135M-Instruct HF folder (converted on first use, ~30 s); skips without the real-model group."""
    from vpo_engines.checkpoints import RealModelMissingError, smollm2_folder

    try:
        return smollm2_folder()
    except RealModelMissingError as exc:
        pytest.skip(str(exc))
