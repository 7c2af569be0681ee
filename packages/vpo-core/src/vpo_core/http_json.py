"""JSON over HTTP with the standard library, for every client of a server the user names.

`vpo-eval`'s sampler (`vpo_engines.models.openai`), the chat-template pre-fill
(`vpo_engines.models.prefill`), env-ultrafeedback's scorer client and vpo-search's endpoint check all send one
request and read one JSON answer through `request_json`. A server is not trusted to be well-behaved, so
every request is bounded:

- **No redirect is followed.** A 3xx answer is an error naming the ``Location`` and telling to point the
  URL at the final address, so the ``Authorization`` header (the API key) never travels to another
  origin and a POST never turns into a GET.
- **A deadline bounds the whole request** (connecting, sending, the status line and headers, the body):
  ``timeout_s`` is not a per-read timeout, so a server sending one byte a second fails at the deadline.
  One watchdog thread (for all requests) shuts the socket down when it passes. Name resolution (``getaddrinfo``) is the
  system's and not bounded by it.
- **What is read is capped**: the answer body at ``max_bytes`` (callers size it by what they asked,
  e.g. `completion_limit` for a completion request), an error body at a small fixed cap; the body is
  read in chunks, so memory stays bounded, and a body over the cap is an error (`TooLargeError`),
  refused unread when its ``Content-Length`` says so.
- **JSON nesting is limited** (``max_depth``; checked on the bytes before parsing, so deeply nested
  JSON is an error, never a ``RecursionError``); numbers beyond Python's digit limit, bytes that are not
  UTF-8 and answers that are not JSON are errors too.
- **Every failure is a `vpo_core.errors.ServerError`** (a project user error) whose one-line message
  names the URL; text the server chose (an error body, a ``Location``) is quoted with its control
  characters escaped, so no server writes escape sequences to the operator's terminal. `RequestError.transient`
  tells the failures worth retrying (HTTP 429/500/502/503/504, the deadline); callers keep their own
  retry policy.

Proxies are used as ``urllib`` uses them (``http_proxy``/``https_proxy``/``no_proxy``). One connection per
request, closed after it.

The server side is small: `JsonHandler` (a quiet request handler that reads and answers JSON) and
`ServerThread` (a threading HTTP server on a daemon thread), used by env-ultrafeedback's scoring server and
by the tests' and benchmarks' local fake servers.
"""

from __future__ import annotations

import base64
import contextlib
import heapq
import http.client
import itertools
import json
import math
import re
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

from vpo_core.errors import ConfigError, ServerError

__all__ = [
    "MAX_DEPTH",
    "MAX_ERROR_BYTES",
    "AnswerError",
    "DeadlineError",
    "JsonHandler",
    "NoAnswerError",
    "RedirectError",
    "RequestError",
    "ServerThread",
    "StatusError",
    "TooLargeError",
    "UnreachableError",
    "completion_limit",
    "for_terminal",
    "json_depth",
    "parse_json",
    "request_json",
]

MAX_DEPTH = 64
"""Deepest JSON nesting an answer may have (an OpenAI completion nests 4 levels)."""

MAX_ERROR_BYTES = 16 * 1024
"""Bytes read of an error answer's body (its first 300 characters are quoted in the message)."""

BYTES_PER_TOKEN = 128
"""Bytes of JSON one generated token may take: the longest BPE tokens are tens of characters, and an escaped
non-ASCII character takes up to 12 bytes (a ``\\uXXXX`` surrogate pair)."""

CHOICE_OVERHEAD = 16 * 1024
"""Bytes of JSON around one choice of a completion answer (index, role, finish reason, stop reason, ...)."""

ANSWER_OVERHEAD = 1024 * 1024
"""Bytes of JSON around the choices of a completion answer (id, model, usage, ...), generously."""

TRANSIENT_STATUSES = (429, 500, 502, 503, 504)
"""HTTP statuses worth retrying after a pause: too many requests, a server error or an overloaded gateway."""

_CHUNK = 64 * 1024
_QUOTED = 300


class RequestError(ServerError):
    """A request to a server failed; the message names the URL and the failure.

    Attributes:
        url: The URL asked.
        transient: Whether retrying may help (a busy server, the deadline); callers decide whether to.
    """

    transient = False

    def __init__(self, message: str, *, url: str) -> None:
        super().__init__(message)
        self.url = url


class UnreachableError(RequestError):
    """No connection could be made (refused, unknown host, no route)."""


class NoAnswerError(RequestError):
    """The connection broke before a whole answer came (closed, reset)."""


class DeadlineError(RequestError):
    """The request did not finish within its deadline.

    Attributes:
        timeout_s: The deadline, in seconds.
        step: What the request was doing when it passed (e.g. "reading the answer").
    """

    transient = True

    def __init__(self, message: str, *, url: str, timeout_s: float, step: str) -> None:
        super().__init__(message, url=url)
        self.timeout_s = timeout_s
        self.step = step


class StatusError(RequestError):
    """The server answered a status other than 2xx.

    Attributes:
        status: The HTTP status.
        body: The start of the error body (at most `MAX_ERROR_BYTES` read), control characters escaped.
    """

    def __init__(self, message: str, *, url: str, status: int, body: str = "") -> None:
        super().__init__(message, url=url)
        self.status = status
        self.body = body

    @property
    def transient(self) -> bool:  # type: ignore[override]
        """Whether the status is one of `TRANSIENT_STATUSES`."""
        return self.status in TRANSIENT_STATUSES


class RedirectError(StatusError):
    """The server answered a redirect (3xx), which is never followed.

    Attributes:
        location: The ``Location`` it named, control characters escaped ("" when none).
    """

    def __init__(self, message: str, *, url: str, status: int, location: str) -> None:
        super().__init__(message, url=url, status=status)
        self.location = location


class AnswerError(RequestError):
    """The answer cannot be taken: not HTTP, not JSON, nested too deep, or not of the expected type."""


class TooLargeError(AnswerError):
    """The answer's body is larger than what was asked can need.

    Attributes:
        limit: The cap, in bytes.
        received: Bytes of the body read before stopping (at most ``limit + 1``; 0 when ``Content-Length``
            already said too many).
    """

    def __init__(self, message: str, *, url: str, limit: int, received: int) -> None:
        super().__init__(message, url=url)
        self.limit = limit
        self.received = received


def for_terminal(text: str, limit: int = _QUOTED) -> str:
    r"""`text` safe to print on one terminal line: control characters escaped, cut at `limit` characters.

    Args:
        text: Text a server chose (an error body, a header, a model id).
        limit: The most characters kept; longer text ends with "...".

    Returns:
        The text with every non-printable character (escape sequences, newlines, bidi controls) written as
        its Python escape (``\x1b``, ``\n``, ``\u202e``).
    """
    cut = len(text) > limit
    text = text[:limit]
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in text)
    return text + "..." if cut else text


def completion_limit(max_tokens: int, n: int = 1) -> int:
    """The most bytes an answer of `n` completions of at most `max_tokens` tokens each can need.

    Args:
        max_tokens: The request's ``max_tokens``.
        n: The request's ``n`` (completions per prompt).

    Returns:
        ``ANSWER_OVERHEAD + n * (CHOICE_OVERHEAD + max_tokens * BYTES_PER_TOKEN)`` bytes: 1.2 MiB for one
        completion of 1024 tokens.
    """
    return ANSWER_OVERHEAD + max(1, n) * (CHOICE_OVERHEAD + max(0, max_tokens) * BYTES_PER_TOKEN)


# a JSON string: from a quote to the next unescaped quote, or to the end of the data when it never closes (so
# every match attempt at a quote succeeds and the scan stays linear on hostile data); possessive: no backtracking
_STRING = re.compile(rb'"[^"\\]*+(?:\\(?:.|\Z)[^"\\]*+)*+(?:"|\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(rb"[^\[\]{}]++")
_STEP = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def json_depth(data: bytes) -> int:
    """The deepest nesting of arrays and objects in JSON text (brackets inside strings do not count).

    Linear in ``len(data)`` whatever the data; for text that is not JSON, at least the depth a JSON parser
    reaches before it fails.

    Args:
        data: JSON text, UTF-8.

    Returns:
        0 for a scalar, 1 for ``[]`` or ``{}``, 2 for ``[[]]``, ...
    """
    brackets = _NOT_BRACKET.sub(b"", _STRING.sub(b"", data))
    return max(0, max(itertools.accumulate(map(_STEP.__getitem__, brackets)), default=0))


def parse_json(data: bytes, *, url: str, max_depth: int = MAX_DEPTH) -> Any:
    """Parse an answer body: UTF-8 JSON nested at most `max_depth` deep.

    Args:
        data: The body.
        url: The URL that answered it (for the message).
        max_depth: The deepest nesting taken.

    Returns:
        The parsed value.

    Raises:
        AnswerError: Not UTF-8, nested deeper than `max_depth`, not JSON, or a number beyond Python's
            digit limit.
    """
    depth = json_depth(data)
    if depth > max_depth:
        raise AnswerError(
            f"{url} answered JSON nested {depth} levels deep, deeper than the {max_depth} any answer needs; "
            "is the URL an OpenAI-compatible server of your own?",
            url=url,
        )
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise AnswerError(
            f"{url} answered a body that is not UTF-8 text, so not JSON; check the URL.", url=url
        ) from None
    except ValueError as exc:  # json.JSONDecodeError, or an integer longer than sys.get_int_max_str_digits()
        raise AnswerError(
            f"{url} did not answer JSON ({for_terminal(str(exc), 120)}: {for_terminal(repr(data[:80])[2:-1], 80)}); "
            "check the URL.",
            url=url,
        ) from None


@dataclass(frozen=True)
class _Target:
    url: str
    https: bool
    host: str
    port: int
    path: str  # with the query

    @classmethod
    def parse(cls, url: str) -> _Target:
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"{url!r} is not a valid URL ({exc}); pass e.g. http://127.0.0.1:8000/v1.") from None
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"{url!r} is not an http(s) URL; pass e.g. http://127.0.0.1:8000/v1.")
        if parts.username is not None or parts.password is not None:
            raise ConfigError(
                f"{parts.scheme}://{parts.hostname}... holds a user name or password; drop it from the URL and "
                "pass the key as the API key."
            )
        https = parts.scheme == "https"
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return cls(url, https, parts.hostname, port or (443 if https else 80), path)


def _connection(target: _Target, timeout_s: float) -> tuple[http.client.HTTPConnection, str]:
    """The connection for `target` (through the environment's proxy, as urllib would) and the request path."""
    scheme = "https" if target.https else "http"
    proxy = urllib.request.getproxies().get(scheme)
    if proxy and not urllib.request.proxy_bypass(target.host):
        parts = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        proxy_headers = {}
        if parts.username is not None:
            userinfo = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            proxy_headers["Proxy-Authorization"] = "Basic " + base64.b64encode(userinfo.encode()).decode()
        proxy_host, proxy_port = parts.hostname or "", parts.port or 80
        if target.https:  # a CONNECT tunnel through the proxy, TLS to the target inside it
            tunnel = http.client.HTTPSConnection(proxy_host, proxy_port, timeout=timeout_s)
            tunnel.set_tunnel(target.host, target.port, headers=proxy_headers)
            return tunnel, target.path
        plain = http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout_s)
        return plain, urllib.parse.urlunsplit(("http", f"{target.host}:{target.port}", target.path, "", ""))
    kind = http.client.HTTPSConnection if target.https else http.client.HTTPConnection
    return kind(target.host, target.port, timeout=timeout_s), target.path


class _Watchdog:
    """Shuts the connection's socket down when the deadline passes, ending whatever read or write waits on it.

    The socket is held here: http.client drops its own reference once a response that closes the connection
    owns the file (the descriptor stays open until that file is closed). One thread (`_Deadlines`) watches
    every request's deadline: no thread is started per request.
    """

    def __init__(self, connection: http.client.HTTPConnection, seconds: float) -> None:
        self.connection: http.client.HTTPConnection | None = connection
        self.expired = False
        self.done = False
        self._sock: socket.socket | None = None
        self._lock = threading.Lock()
        _DEADLINES.add(self, time.monotonic() + seconds)

    def watch(self) -> None:
        """Hold the connected socket (call right after connecting); shut it at once if the deadline passed."""
        with self._lock:
            self._sock = None if self.connection is None else self.connection.sock
            if self.expired:
                self._shut()

    def _shut(self) -> None:
        sock = self._sock if self._sock is not None or self.connection is None else self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):  # the plain socket's shutdown, also under TLS: a blocked recv returns
                socket.socket.shutdown(sock, socket.SHUT_RDWR)

    def expire(self) -> None:
        """The deadline passed: shut the socket down (nothing once cancelled)."""
        with self._lock:
            if self.done:
                return
            self.expired = True
            self._shut()

    def cancel(self) -> None:
        """Stop watching (before the connection closes); the references to it are dropped."""
        with self._lock:
            self.done = True
            self.connection = None
            self._sock = None


class _Deadlines:
    """One daemon thread that expires each `_Watchdog` at its deadline (a heap; cancelled ones are skipped)."""

    def __init__(self) -> None:
        self._wake = threading.Condition()
        self._heap: list[tuple[float, int, _Watchdog]] = []
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._compact_at = 4096

    def add(self, watchdog: _Watchdog, deadline: float) -> None:
        with self._wake:
            if len(self._heap) > self._compact_at:  # drop the finished requests' entries, now and then
                self._heap = [entry for entry in self._heap if not entry[2].done]
                heapq.heapify(self._heap)
                self._compact_at = max(4096, 2 * len(self._heap))
            heapq.heappush(self._heap, (deadline, next(self._order), watchdog))
            if self._thread is None or not self._thread.is_alive():  # first use, or a forked child
                self._thread = threading.Thread(target=self._run, name="http-json-deadlines", daemon=True)
                self._thread.start()
            self._wake.notify()

    def _run(self) -> None:
        with self._wake:
            while True:
                now = time.monotonic()
                while self._heap and (self._heap[0][2].done or self._heap[0][0] <= now):
                    _, _, watchdog = heapq.heappop(self._heap)
                    watchdog.expire()
                self._wake.wait(None if not self._heap else self._heap[0][0] - now)


_DEADLINES = _Deadlines()


def _read_capped(response: http.client.HTTPResponse, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, read in chunks; and whether there was more."""
    chunks: list[bytes] = []
    total = 0
    while total <= limit:
        chunk = response.read(min(_CHUNK, limit + 1 - total))
        if not chunk:
            break
        chunks.append(chunk)
        total += len(chunk)
    data = b"".join(chunks)
    return data[:limit], total > limit


def request_json(
    url: str,
    payload: Any = None,
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float,
    max_bytes: int,
    max_error_bytes: int = MAX_ERROR_BYTES,
    max_depth: int = MAX_DEPTH,
) -> Any:
    """One request, one JSON answer: ``GET url`` (no payload) or ``POST url`` with `payload` as JSON.

    Args:
        url: An http(s) URL.
        payload: The JSON body of a POST; None for a GET.
        headers: Extra headers (e.g. ``Authorization``); they go to `url`'s origin only (no redirect is
            followed).
        timeout_s: The deadline of the whole request, in seconds.
        max_bytes: The largest answer body taken (size it by what was asked, e.g. `completion_limit`).
        max_error_bytes: Bytes read of an error answer's body.
        max_depth: The deepest JSON nesting taken.

    Returns:
        The parsed answer (type-check what you use).

    Raises:
        ConfigError: `url` is not an http(s) URL, or `timeout_s` is not a positive number.
        UnreachableError: No connection could be made.
        DeadlineError: The request did not finish within `timeout_s` (transient).
        NoAnswerError: The connection broke before a whole answer came.
        RedirectError: The server answered 3xx.
        StatusError: The server answered another status that is not 2xx (transient for 429/500/502/503/504).
        TooLargeError: The body is larger than `max_bytes`.
        AnswerError: The answer is not HTTP, not UTF-8 JSON, or nested deeper than `max_depth`.
    """
    target = _Target.parse(url)
    _check_timeout(timeout_s)
    body = None if payload is None else json.dumps(payload).encode()
    sent = {"Accept": "application/json", **(headers or {})}
    if body is not None:
        sent["Content-Type"] = "application/json"
    connection, path = _connection(target, timeout_s)
    exchange = _Exchange(url, connection, timeout_s)
    try:
        exchange.connect()
        data = exchange.answer_body(path, body, sent, max_bytes=max_bytes, max_error_bytes=max_error_bytes)
    finally:
        exchange.close()
    return parse_json(data, url=url, max_depth=max_depth)


def _check_timeout(timeout_s: Any) -> None:
    """Refuse a request deadline that is not a positive, finite number of seconds.

    Raises:
        ConfigError: `timeout_s` is a bool, not a number, or not in (0, inf).
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not 0 < timeout_s < math.inf:
        raise ConfigError(f"a request timeout must be a positive number of seconds, got {timeout_s!r}.")


class _Exchange:
    """One request on one connection under one deadline (a `_Watchdog`), and the errors it can end in.

    Attributes:
        url: The URL asked (for the messages).
        connection: The connection (to the target, or to the proxy).
        timeout_s: The deadline of the whole request, in seconds.
        watchdog: The deadline's watchdog, started when the exchange is made.
        step: What the request is doing now (named in `DeadlineError` and `NoAnswerError`).
        response: The answer once its status line and headers came, else None.
    """

    def __init__(self, url: str, connection: http.client.HTTPConnection, timeout_s: float) -> None:
        self.url = url
        self.connection = connection
        self.timeout_s = timeout_s
        self.watchdog = _Watchdog(connection, timeout_s)
        self.step = "connecting"
        self.response: http.client.HTTPResponse | None = None

    def deadline(self) -> DeadlineError:
        """The error of a deadline that passed during `step`."""
        return DeadlineError(
            f"{self.url} did not answer within {self.timeout_s:g} s (the deadline of the whole request passed "
            f"while {self.step}); raise the timeout if the server is only slow.",
            url=self.url,
            timeout_s=self.timeout_s,
            step=self.step,
        )

    def connect(self) -> None:
        """Connect, then let the watchdog hold the socket.

        Raises:
            DeadlineError: The deadline passed while connecting.
            UnreachableError: The connection failed otherwise.
        """
        try:
            self.connection.connect()
        except OSError as exc:
            if self.watchdog.expired or isinstance(exc, TimeoutError):
                raise self.deadline() from None
            raise UnreachableError(f"cannot reach {self.url} ({for_terminal(str(exc), 120)})", url=self.url) from None
        self.watchdog.watch()

    def answer_body(
        self, path: str, body: bytes | None, headers: Mapping[str, str], *, max_bytes: int, max_error_bytes: int
    ) -> bytes:
        """Send the request (a GET without `body`, else a POST) and read a 2xx answer's body.

        Args:
            path: The request path (an absolute URL through a plain proxy).
            body: The JSON body of a POST, or None.
            headers: The headers sent.
            max_bytes: The largest answer body taken.
            max_error_bytes: Bytes read of an error answer's body.

        Returns:
            The body, at most `max_bytes` bytes.

        Raises:
            DeadlineError, NoAnswerError, RedirectError, StatusError, TooLargeError, AnswerError: As
                `request_json` says.
        """
        try:
            self.step = "sending the request"
            self.connection.request("GET" if body is None else "POST", path, body=body, headers=headers)
            self.step = "waiting for the answer's status and headers"
            response = self.response = self.connection.getresponse()
            self.step = "reading the answer"
            _refuse_redirect(self.url, response)
            if not 200 <= response.status < 300:
                raise self._status_error(response, max_error_bytes)
            data = _read_body(self.url, response, max_bytes)
        except (OSError, http.client.HTTPException) as exc:
            raise self._broken(exc) from None
        if self.watchdog.expired:  # the watchdog's shutdown reads as the end of a body without a length
            raise self.deadline()
        return data

    def _status_error(self, response: http.client.HTTPResponse, max_error_bytes: int) -> RequestError:
        """The error of a status that is neither 2xx nor 3xx, quoting the start of its body.

        Returns:
            A `StatusError`, or a `DeadlineError` when the deadline passed while reading the error body.
        """
        data, _ = _read_capped(response, max_error_bytes)
        if self.watchdog.expired:
            return self.deadline()
        text = for_terminal(data.decode("utf-8", errors="replace").strip())
        return StatusError(
            f"{self.url} answered HTTP {response.status}: {text or for_terminal(response.reason)}",
            url=self.url,
            status=response.status,
            body=text,
        )

    def _broken(self, exc: OSError | http.client.HTTPException) -> RequestError:
        """The error of a connection or protocol failure `exc` during `step`.

        Returns:
            A `DeadlineError` (the deadline passed), `NoAnswerError` (the connection broke) or `AnswerError`
            (the answer is not HTTP).
        """
        if self.watchdog.expired or isinstance(exc, TimeoutError):
            return self.deadline()
        if isinstance(exc, OSError | http.client.RemoteDisconnected | http.client.IncompleteRead):
            return NoAnswerError(
                f"{self.url} broke the connection while {self.step} "
                f"({for_terminal(str(exc) or type(exc).__name__, 120)}).",
                url=self.url,
            )
        return AnswerError(
            f"{self.url} did not answer HTTP ({type(exc).__name__}: {for_terminal(str(exc), 120)}); check the URL.",
            url=self.url,
        )

    def close(self) -> None:
        """Stop the watchdog and close the answer and the connection."""
        self.watchdog.cancel()
        if self.response is not None:  # it owns the socket once the connection is to close: unread data must not wait
            self.response.close()
        self.connection.close()


def _refuse_redirect(url: str, response: http.client.HTTPResponse) -> None:
    """Refuse a 3xx answer, naming its ``Location`` (no redirect is followed).

    Raises:
        RedirectError: The status is 3xx.
    """
    if 300 <= response.status < 400:
        location = for_terminal(response.getheader("Location") or "", 200)
        raise RedirectError(
            f"{url} answered HTTP {response.status}, a redirect to {location or '(no Location)'}; no "
            "redirect is followed (the API key must not go to another address, nor a POST turn into a "
            "GET): point the URL at the final address.",
            url=url,
            status=response.status,
            location=location,
        )


def _read_body(url: str, response: http.client.HTTPResponse, max_bytes: int) -> bytes:
    """A 2xx answer's body, refused unread when its ``Content-Length`` exceeds `max_bytes`.

    Raises:
        TooLargeError: The body is announced or read larger than `max_bytes`.
    """
    declared = response.length
    if declared is not None and declared > max_bytes:
        raise TooLargeError(
            f"{url} announced an answer of {declared} bytes, more than the {max_bytes} that what was asked "
            "can need; the server is not answering the request as sent.",
            url=url,
            limit=max_bytes,
            received=0,
        )
    data, more = _read_capped(response, max_bytes)
    if more:
        raise TooLargeError(
            f"{url} answered more than {max_bytes} bytes, more than what was asked can need; stopped "
            "reading (the server is not answering the request as sent).",
            url=url,
            limit=max_bytes,
            received=max_bytes + 1,
        )
    return data


class JsonHandler(BaseHTTPRequestHandler):
    """The request handler of a small JSON server: no access log, `read_json` and `send_json`.

    Subclass it with ``do_GET`` / ``do_POST`` (env-ultrafeedback's scoring server, the tests' fake servers).
    """

    def log_message(self, format: str, *args: Any) -> None:
        """Write no access-log line (the base class writes one per request to stderr)."""

    def read_json(self) -> Any:
        """The request's body (its ``Content-Length`` bytes), parsed as JSON."""
        return json.loads(self.rfile.read(int(self.headers["Content-Length"])))

    def send_json(self, status: int, body: Any) -> None:
        """Answer `body` as JSON with HTTP `status`, its ``Content-Type`` and its ``Content-Length``."""
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


_Server = TypeVar("_Server", bound="ServerThread")


class ServerThread:
    """An HTTP server bound when made, serving on a daemon thread once started (`start`, or ``with``).

    Args:
        handler: The request handler class (e.g. a `JsonHandler` subclass).
        host: The address to bind (127.0.0.1: this machine only).
        port: The port; 0 picks a free one (see `url`).
        name: The serving thread's name.
        server_class: The server class (a `ThreadingHTTPServer` subclass may set e.g. ``request_queue_size``).

    Attributes:
        httpd: The server.
    """

    def __init__(
        self,
        handler: type[BaseHTTPRequestHandler],
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        name: str = "http-server",
        server_class: type[ThreadingHTTPServer] = ThreadingHTTPServer,
    ) -> None:
        self.httpd = server_class((host, port), handler)
        self._name = name
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The root URL, e.g. ``http://127.0.0.1:8765``."""
        host, port = self.httpd.server_address[:2]
        return f"http://{host.decode() if isinstance(host, bytes) else host}:{port}"

    def start(self: _Server) -> _Server:
        """Serve on a daemon thread; returns self."""
        self._thread = threading.Thread(target=self.httpd.serve_forever, name=self._name, daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving (if started) and close the socket."""
        if self._thread is not None:  # shutdown() waits for serve_forever: only once it runs
            self.httpd.shutdown()
            self._thread.join(timeout=5)
        self.httpd.server_close()

    def __enter__(self: _Server) -> _Server:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()
