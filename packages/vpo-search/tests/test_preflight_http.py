"""vpo-search's endpoint check against hostile local servers: no redirect, bounded reads, a deadline.

The requests go through `vpo_core.http_json` (its own tests: packages/vpo-engines/tests/test_http_json.py).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest

from vpo_core.errors import ServerError
from vpo_search.preflight import EndpointError, check_endpoint, check_template_options

# only the helper's own folder goes on sys.path (a tests folder, such as packages/vpo-engines/tests, may
# hold a `vllm/` folder that would shadow the real vllm for TRL's availability check)
VPO_CORE_TESTS = Path(__file__).resolve().parents[2] / "vpo-core" / "tests" / "http_support"
sys.path.insert(0, str(VPO_CORE_TESTS))
from hostile_server import MODELS, flood, redirect, send_json, trickle  # noqa: E402

MiB = 1024 * 1024


def test_a_redirected_model_list_is_refused_and_the_key_stays_home(serve):
    other = serve(lambda h, seen: send_json(h, MODELS))
    server = serve(lambda h, seen: redirect(h, 302, other.url + seen.path))
    with pytest.raises(EndpointError, match=rf"a redirect to {other.url}/v1/models.*final address") as refused:
        check_endpoint(server.url + "/v1", "m", "secret-key")
    assert isinstance(refused.value, ServerError)
    assert other.requests == []  # the old check followed it and sent the key there
    assert server.requests[0].headers["Authorization"] == "Bearer secret-key"
    with pytest.raises(EndpointError, match="not a vLLM server"):  # its model list is unreadable: not vLLM
        check_template_options(server.url + "/v1", "m", "k", {"enable_thinking": False})
    assert other.requests == []


def test_an_oversize_model_list_is_refused_after_a_bounded_read(serve):
    server = serve(lambda h, seen: server.stream(h, flood(24 * MiB, prefix=b'{"data": "')))
    with pytest.raises(EndpointError, match="answered more than"):
        check_endpoint(server.url + "/v1", "m", "k")
    assert server.sent[0].done.wait(30)
    assert not server.sent[0].finished  # the old check read all 24 MiB


def test_a_trickling_server_fails_at_the_deadline(serve):
    server = serve(lambda h, seen: server.stream(h, trickle(b'{"data": []}', 0.5, lead=80)))
    start = time.monotonic()
    with pytest.raises(EndpointError, match="did not answer within 1 s"):
        check_endpoint(server.url + "/v1", "m", "k", timeout_s=1.0)
    assert time.monotonic() - start < 20  # the old check waited for the whole 40 s trickle


def test_deep_json_and_wrong_types_are_clear_errors(serve):
    deep = serve(lambda h, seen: send_json(h, b'{"data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"))
    with pytest.raises(EndpointError, match="nested 100001 levels deep"):
        check_endpoint(deep.url + "/v1", "m", "k")
    for data in ([{"id": 3}], ["m"], {"id": "m"}):
        server = serve(lambda h, seen, data=data: send_json(h, {"data": data}))
        with pytest.raises(EndpointError, match="did not answer with an OpenAI model list"):
            check_endpoint(server.url + "/v1", "m", "k")


def test_a_served_model_id_with_escape_sequences_is_quoted_harmlessly(serve):
    server = serve(lambda h, seen: send_json(h, {"data": [{"id": "evil\x1b]0;owned\x07"}]}))
    with pytest.raises(EndpointError, match=r"serves \['evil\\x1b\]0;owned\\x07'\], not 'm'") as refused:
        check_endpoint(server.url + "/v1", "m", "k")
    assert "\x1b" not in str(refused.value)
