"""`vpo_core.http_json` and the clients on it against hostile local servers (issue 37: escapes, DoS, hangs).

Each server is a real ``http.server`` on 127.0.0.1 in a thread. Deadlines are short and the elapsed-time
checks are loose bounds (a trickling server would keep the old client for 40 s), never tight timings.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import pytest

from vpo_core.errors import ConfigError, ServerError, UserError
from vpo_core.http_json import (
    MAX_ERROR_BYTES,
    AnswerError,
    DeadlineError,
    NoAnswerError,
    RedirectError,
    StatusError,
    TooLargeError,
    UnreachableError,
    completion_limit,
    for_terminal,
    json_depth,
    parse_json,
    request_json,
)
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.models.openai import EndpointError, OpenAISampler
from vpo_engines.models.prefill import PrefillError, ServerPrefill

# only the helper's own folder goes on sys.path (this folder holds a `vllm/` folder that would shadow the real
# vllm for TRL's availability check)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "vpo-core" / "tests" / "http_support"))
from hostile_server import MODELS, answer, flood, redirect, route, send_json, trickle

MiB = 1024 * 1024
CHAT = "/v1/chat/completions"
MESSAGES = json.dumps([{"role": "user", "content": "hi"}])


def _openai(on_chat, on_models=None):
    """A handler: the model list (or `on_models`) on GET /v1/models, `on_chat` on POST /v1/chat/completions."""
    return route({("GET", "/v1/models"): on_models or answer(MODELS), ("POST", CHAT): on_chat}, {"error": "not found"})


def _ok(h, seen):
    send_json(h, {"choices": [{"index": 0, "message": {"role": "assistant", "content": "fine"}}]})


def _sample(sampler, max_new_tokens=1024):
    return sampler.sample([MESSAGES], num_samples=1, settings=SamplingSettings(0.7, 1.0, max_new_tokens))


# ------------------------------------------------------------------------------------------------ redirects
@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirected_completion_is_refused_and_the_key_never_reaches_the_other_origin(serve, status):
    other = serve(_openai(_ok))
    server = serve(_openai(lambda h, seen: redirect(h, status, other.url + CHAT)))
    sampler = OpenAISampler(server.url, api_key="secret-key", retries=2)
    with pytest.raises(EndpointError, match=rf"HTTP {status}, a redirect to {other.url}{CHAT}.*final address"):
        _sample(sampler)
    assert other.requests == []  # neither the key nor anything else went there (the old client sent a GET)
    assert [seen.method for seen in server.requests] == ["GET", "POST"]  # a redirect is not retried
    assert server.requests[1].headers["Authorization"] == "Bearer secret-key"


def test_a_redirected_model_list_and_prefill_are_refused(serve):
    other = serve(_openai(_ok))
    server = serve(lambda h, seen: redirect(h, 302, other.url + seen.path))
    with pytest.raises(EndpointError, match=r"a redirect to .*final address"):
        OpenAISampler(server.url, api_key="secret-key")
    prefill = ServerPrefill(server.url, model="m", chat_template_kwargs={"enable_thinking": False}, api_key="k")
    with pytest.raises(PrefillError, match="redirect"):
        prefill()
    with pytest.raises(RedirectError) as refused:
        request_json(server.url + "/x", {"a": 1}, headers={"Authorization": "Bearer k"}, timeout_s=10, max_bytes=MiB)
    assert refused.value.location == other.url + "/x"
    assert not refused.value.transient
    assert other.requests == []


def test_a_location_with_escape_sequences_is_quoted_harmlessly(serve):
    server = serve(lambda h, seen: redirect(h, 301, "http://x/\x1b]0;pwned\x07\x1b[2J"))
    with pytest.raises(RedirectError) as refused:
        request_json(server.url, timeout_s=10, max_bytes=MiB)
    message = str(refused.value)
    assert "\x1b" not in message
    assert "\x07" not in message
    assert "\\x1b]0;pwned\\x07" in message


# ------------------------------------------------------------------------------------------- size caps
def test_a_24_mib_completion_to_a_1024_token_request_is_refused_after_a_bounded_read(serve):
    def huge(h, seen):
        server.stream(h, flood(24 * MiB))  # no Content-Length: the body ends when the server closes

    server = serve(_openai(huge))
    sampler = OpenAISampler(server.url, retries=0)
    limit = completion_limit(1024, 1)
    assert limit < 2 * MiB
    with pytest.raises(EndpointError, match=rf"answered more than {limit} bytes"):
        _sample(sampler)
    assert server.sent[0].done.wait(30)
    assert not server.sent[0].finished  # the client stopped reading: the server could not send the 24 MiB
    # the module itself: what it read is the cap and one byte, however much the server had
    with pytest.raises(TooLargeError) as refused:
        request_json(server.url + CHAT, {"x": 1}, timeout_s=30, max_bytes=limit)
    assert refused.value.received == limit + 1
    assert refused.value.limit == limit


def test_an_announced_oversize_body_is_refused_unread(serve):
    def huge(h, seen):
        server.stream(h, flood(24 * MiB), length=24 * MiB)

    server = serve(huge)
    with pytest.raises(TooLargeError, match=r"announced an answer of 25165824 bytes") as refused:
        request_json(server.url, {"n": 1}, timeout_s=30, max_bytes=MiB)
    assert refused.value.received == 0
    assert server.sent[0].done.wait(30)
    assert not server.sent[0].finished


def test_an_error_body_is_read_only_up_to_a_small_cap(serve):
    def failing(h, seen):
        server.stream(h, flood(24 * MiB, prefix=b"\x1b[31m" + b"overloaded "), status=500)

    server = serve(_openai(failing))
    with pytest.raises(EndpointError, match=r"HTTP 500: \\x1b\[31moverloaded x+\.\.\.$") as failed:
        _sample(OpenAISampler(server.url, retries=0))
    assert "\x1b" not in str(failed.value)
    assert server.sent[0].done.wait(30)
    assert not server.sent[0].finished  # the old client read the whole error body, then kept 500 characters
    with pytest.raises(StatusError) as status:
        request_json(server.url + CHAT, {"n": 1}, timeout_s=30, max_bytes=MiB)
    assert status.value.status == 500
    assert status.value.transient
    assert len(status.value.body) < 1000 < MAX_ERROR_BYTES  # the quoted start: 300 characters, escaped


def test_the_completion_cap_grows_with_what_was_asked():
    assert completion_limit(1024, 1) < completion_limit(2048, 1) < completion_limit(2048, 8)
    assert completion_limit(32768, 16) > 16 * 32768 * 100  # generous for any honest answer
    # an honest answer of n completions of max_tokens tokens of the longest kind fits
    honest = {"choices": [{"index": i, "message": {"content": "\U0001f600" * 1024}} for i in range(4)]}
    assert len(json.dumps(honest).encode()) < completion_limit(1024, 4)


# ------------------------------------------------------------------------------------------------ deadline
def test_a_server_sending_a_byte_every_half_second_fails_at_the_deadline(serve):
    body = json.dumps({"choices": [{"index": 0, "message": {"content": "late"}}]}).encode()
    server = serve(_openai(lambda h, seen: server.stream(h, trickle(body, 0.5, lead=80))))  # 40 s in all
    sampler = OpenAISampler(server.url, timeout_s=1.0, retries=1)
    start = time.monotonic()
    with pytest.raises(EndpointError, match=r"did not answer within 1 s .*while reading the answer.*timeout"):
        _sample(sampler)
    # two attempts of 1 s each; the old client waited for the whole 40 s trickle (each read came in time)
    assert time.monotonic() - start < 20
    assert sum(seen.method == "POST" for seen in server.requests) == 2  # the deadline is transient: retried once


def test_a_status_line_sent_byte_by_byte_fails_at_the_deadline(serve):
    def slow_headers(h, seen):
        try:
            for byte in b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n" * 20:
                h.wfile.write(bytes([byte]))
                h.wfile.flush()
                time.sleep(0.2)
        except OSError:
            pass

    server = serve(slow_headers)
    start = time.monotonic()
    with pytest.raises(DeadlineError, match=r"within 0.5 s .*status and headers") as late:
        request_json(server.url, timeout_s=0.5, max_bytes=MiB)
    assert late.value.transient
    assert time.monotonic() - start < 15


def test_a_silent_server_fails_at_the_deadline_and_a_closing_one_says_so(serve):
    release = threading.Event()
    silent = serve(lambda h, seen: release.wait(30))
    with pytest.raises(DeadlineError):
        request_json(silent.url, timeout_s=0.3, max_bytes=MiB)
    release.set()
    closing = serve(lambda h, seen: h.connection.close())
    with pytest.raises(NoAnswerError, match="broke the connection"):
        request_json(closing.url, timeout_s=10, max_bytes=MiB)


# ---------------------------------------------------------------------------------------------- JSON depth
def test_100k_deep_json_is_a_clear_error_not_a_recursion_error(serve):
    deep = b"[" * 100_000 + b"]" * 100_000
    server = serve(_openai(_ok, on_models=lambda h, seen: send_json(h, deep)))
    with pytest.raises(EndpointError, match="nested 100000 levels deep, deeper than the 64"):
        OpenAISampler(server.url)
    answer = b'{"choices": ' + deep + b"}"
    chat = serve(_openai(lambda h, seen: send_json(h, answer)))
    with pytest.raises(EndpointError, match="nested 100001 levels deep"):
        _sample(OpenAISampler(chat.url, retries=0))


def test_json_depth_counts_brackets_outside_strings_only():
    assert json_depth(b'{"a": [1, {"b": "[[[[{{"}], "c": "\\"]]"}') == 3
    assert json_depth(b"3") == 0
    assert json_depth(b'["' + b"[" * 1000) == 1  # an unterminated string holds the rest
    # hostile shapes stay linear: a million escaped quotes in one unterminated string
    assert json_depth(b'"' + b'\\"' * 1_000_000 + b"\\") == 0
    assert parse_json(b'{"a": [[1]]}', url="u", max_depth=3) == {"a": [[1]]}
    with pytest.raises(AnswerError, match="nested 3 levels deep, deeper than the 2"):
        parse_json(b'{"a": [[1]]}', url="u", max_depth=2)


def test_bodies_that_are_not_json_are_clear_errors():
    for body, words in [
        (b"\xff\xfe", "not UTF-8"),
        (b"<html>", "did not answer JSON"),
        (b"1" * 10_000, "did not answer JSON"),  # beyond Python's integer digit limit: a ValueError, not JSON's
    ]:
        with pytest.raises(AnswerError, match=words):
            parse_json(body, url="http://u", max_depth=8)


# ------------------------------------------------------------------------------------- types and errors
def test_an_answer_without_choices_is_an_error_not_empty_completions(serve):
    server = serve(_openai(lambda h, seen: send_json(h, {"object": "list", "data": []})))
    with pytest.raises(EndpointError, match="without a choices list"):
        _sample(OpenAISampler(server.url, retries=0))
    rows = serve(_openai(_ok, on_models=lambda h, seen: send_json(h, {"data": [{"id": 7}, {"id": "real"}]})))
    assert OpenAISampler(rows.url).model == "real"  # a row without a string id is no model


def test_every_failure_is_a_project_user_error(serve):
    server = serve(lambda h, seen: send_json(h, {"error": "no"}, 404))
    with pytest.raises(StatusError) as failed:
        request_json(server.url, timeout_s=5, max_bytes=MiB)
    assert isinstance(failed.value, UserError)
    assert issubclass(EndpointError, ServerError)
    assert issubclass(PrefillError, ServerError)
    assert not failed.value.transient
    assert failed.value.body == '{"error": "no"}'
    with pytest.raises(UnreachableError, match="cannot reach"):
        request_json(f"http://127.0.0.1:{_free_port()}/v1", timeout_s=5, max_bytes=MiB)
    for url in ("ftp://x/y", "http://user:pw@127.0.0.1/v1", "http://127.0.0.1:notaport/v1"):
        with pytest.raises(ConfigError):
            request_json(url, timeout_s=5, max_bytes=MiB)
    for timeout in (0, -1, float("inf"), float("nan"), True):
        with pytest.raises(ConfigError, match="positive number of seconds"):
            request_json(server.url, timeout_s=timeout, max_bytes=MiB)


def test_for_terminal_escapes_control_characters_and_cuts():
    assert for_terminal("model\x1b[2J\n\u202e") == "model\\x1b[2J\\n\\u202e"
    assert for_terminal("é ok") == "é ok"
    assert for_terminal("x" * 10, limit=4) == "xxxx..."


def test_a_proxy_from_the_environment_is_used_as_urllib_would(serve, monkeypatch):
    proxy = serve(lambda h, seen: send_json(h, {"via": seen.path}))
    monkeypatch.setenv("http_proxy", proxy.url)
    monkeypatch.delenv("no_proxy", raising=False)
    monkeypatch.delenv("NO_PROXY", raising=False)
    answer = request_json("http://models.invalid:8000/v1/models", timeout_s=5, max_bytes=MiB)
    assert answer == {"via": "http://models.invalid:8000/v1/models"}
    direct = serve(lambda h, seen: send_json(h, {"direct": seen.path}))
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    assert request_json(direct.url + "/v1/models", timeout_s=5, max_bytes=MiB) == {"direct": "/v1/models"}
    assert len(proxy.requests) == 1


# -------------------------------------------------------------------------------------------- concurrency
def test_the_sampler_keeps_max_workers_requests_in_flight(serve):
    workers = 4
    together = threading.Barrier(workers, timeout=60)  # breaks unless `workers` requests wait at once
    broken = []

    def gather(h, seen):
        try:
            together.wait()
        except threading.BrokenBarrierError:
            broken.append(seen)
        _ok(h, seen)

    server = serve(_openai(gather))
    sampler = OpenAISampler(server.url, max_workers=workers)
    texts = sampler.sample([MESSAGES] * (2 * workers), num_samples=1, settings=SamplingSettings(0.7, 1.0, 8))
    assert texts == ["fine"] * (2 * workers)
    assert broken == []


def _free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]
