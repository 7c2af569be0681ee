"""A local HTTP server in a thread that answers as a test tells it to: redirects, floods, trickles, deep JSON.

Used by the tests of `vpo_core.http_json` and of every client built on it (vpo-core's sampler and pre-fill,
env-ultrafeedback's scorer client, vpo-search's endpoint check). Import it after putting this folder on
``sys.path``. No network: it binds 127.0.0.1.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from vpo_core.http_json import ServerThread

MODELS = {"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "someone"}]}


@dataclass
class Seen:
    """One request the server received."""

    method: str
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class Sent:
    """What one answer of the server got out: bytes written, and whether it wrote all it meant to."""

    written: int = 0
    finished: bool = False
    done: threading.Event = field(default_factory=threading.Event)


class Server(ServerThread):
    """Answers each request with ``handle(handler, seen)``; records every request and what each answer sent.

    Args:
        handle: Writes the answer through the `BaseHTTPRequestHandler` (helpers: `send_json`, `stream`).
    """

    def __init__(self, handle: Callable[[BaseHTTPRequestHandler, Seen], None]) -> None:
        self.requests: list[Seen] = []
        self.sent: list[Sent] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                seen = Seen(self.command, self.path, dict(self.headers.items()), self.rfile.read(length))
                owner.requests.append(seen)
                handle(self, seen)

            do_GET = do_POST = _any

        super().__init__(Handler)
        self.start()
        self.port = self.httpd.server_address[1]

    def stream(
        self, handler: BaseHTTPRequestHandler, pieces: Any, *, status: int = 200, length: int | None = None
    ) -> Sent:
        """Send the status, then each piece of `pieces` (bytes), recording how far it got.

        Args:
            handler: The request's handler.
            pieces: An iterable of bytes (a generator may sleep between pieces).
            status: The HTTP status.
            length: A ``Content-Length`` to announce; None for none (the body ends when the connection closes).

        Returns:
            The record, complete once the answer ended (``done`` set).
        """
        sent = Sent()
        self.sent.append(sent)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            if length is not None:
                handler.send_header("Content-Length", str(length))
            handler.end_headers()
            for piece in pieces:
                handler.wfile.write(piece)
                handler.wfile.flush()
                sent.written += len(piece)
            sent.finished = True
        except OSError:  # the client closed the connection
            pass
        finally:
            handler.close_connection = True
            sent.done.set()
        return sent


def send_json(
    handler: BaseHTTPRequestHandler, body: Any, status: int = 200, headers: dict[str, str] | None = None
) -> None:
    """Answer `body` as JSON with its length."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    for key, value in (headers or {}).items():
        handler.send_header(key, value)
    handler.end_headers()
    handler.wfile.write(data)


def answer(body: Any) -> Callable[[BaseHTTPRequestHandler, Seen], None]:
    """A handle that answers `body` as JSON (status 200)."""
    return lambda handler, seen: send_json(handler, body)


def route(
    table: dict[tuple[str, str], Callable[[BaseHTTPRequestHandler, Seen], None]], not_found: Any
) -> Callable[[BaseHTTPRequestHandler, Seen], None]:
    """A handle that passes each request to ``table[(method, path)]``, and answers 404 with `not_found` otherwise."""

    def handle(handler: BaseHTTPRequestHandler, seen: Seen) -> None:
        chosen = table.get((seen.method, seen.path))
        if chosen is None:
            send_json(handler, not_found, 404)
        else:
            chosen(handler, seen)

    return handle


def redirect(handler: BaseHTTPRequestHandler, status: int, location: str) -> None:
    """Answer a redirect to `location`."""
    send_json(handler, {"moved": location}, status, {"Location": location})


FLOOD_PREFIX = b'{"choices": [{"index": 0, "message": {"role": "assistant", "content": "'
FLOOD_SUFFIX = b'"}}]}'


def flood(total: int, prefix: bytes = FLOOD_PREFIX, suffix: bytes = FLOOD_SUFFIX) -> Any:
    """`total` bytes of one valid JSON answer (a completion of one long string), in 64 KiB pieces."""
    yield prefix
    left = total - len(prefix) - len(suffix)
    while left > 0:
        piece = min(left, 64 * 1024)
        yield b"x" * piece
        left -= piece
    yield suffix


def trickle(body: bytes, every_s: float, lead: int) -> Any:
    """`lead` spaces (JSON allows them before a value), one every `every_s` seconds, then `body`."""
    for _ in range(lead):
        yield b" "
        time.sleep(every_s)
    yield body


@contextlib.contextmanager
def serving() -> Iterator[Callable[[Any], Server]]:
    """``start(handle)`` starts a `Server`; every server started is closed when the block ends (a test's fixture)."""
    servers: list[Server] = []

    def start(handle: Any) -> Server:
        servers.append(Server(handle))
        return servers[-1]

    try:
        yield start
    finally:
        for server in servers:
            server.close()
