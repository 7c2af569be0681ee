"""Session-wide test settings: no test may reach the network (Hugging Face libraries stay offline).

Fixtures for every package's tests: `fake_openai` (a local OpenAI-compatible server) and `smollm2` (the real
SmolLM2-135M-Instruct checkpoint as an HF folder, converted once per cache by `vpo_core.checkpoints`).
"""

import json
import os
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")


class FakeOpenAI:
    """A local OpenAI-compatible server (``/v1/models``, ``/v1/chat/completions``) in a thread; no network.

    ``reply(messages, n)`` gives the n completion texts of one request; every request is recorded.
    """

    def __init__(self, reply: Callable[[list[dict[str, Any]], int], list[str]], model: str = "fake-model") -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, code: int, body: Any) -> None:
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/v1/models":
                    self._send(200, {"object": "list", "data": [{"id": model}]})
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self) -> None:
                payload = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.requests.append(payload)
                if self.path != "/v1/chat/completions":
                    self._send(404, {"error": "not found"})
                    return
                texts = reply(payload["messages"], int(payload.get("n", 1)))
                choices = [{"index": i, "message": {"role": "assistant", "content": t}} for i, t in enumerate(texts)]
                self._send(200, {"choices": choices})

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        """Stop serving."""
        self.httpd.shutdown()
        self.httpd.server_close()


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


@pytest.fixture(scope="session")
def smollm2() -> Path:
    """The real SmolLM2-135M-Instruct HF folder (converted on first use, ~30 s); skips without the real-model group."""
    from vpo_core.checkpoints import RealModelMissingError, smollm2_folder

    try:
        return smollm2_folder()
    except RealModelMissingError as exc:
        pytest.skip(str(exc))
