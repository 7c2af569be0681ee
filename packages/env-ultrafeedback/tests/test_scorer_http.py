"""The scorer client against hostile local servers: no redirect, bounded reads, a deadline, checked answers.

The requests go through `vpo_core.http_json` (its own tests: packages/vpo-engines/tests/test_http_json.py);
these check the scorer client's use of it. Each server is a real ``http.server`` on 127.0.0.1.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import pytest

from env_ultrafeedback import DIMENSIONS, ScorerClient, ScoringServerError
from vpo_core.errors import ServerError

# only the helper's own folder goes on sys.path (a tests folder, such as packages/vpo-engines/tests, may
# hold a `vllm/` folder that would shadow the real vllm for TRL's availability check)
VPO_CORE_TESTS = Path(__file__).resolve().parents[2] / "vpo-core" / "tests" / "http_support"
sys.path.insert(0, str(VPO_CORE_TESTS))
from hostile_server import answer, flood, redirect, route, send_json, trickle  # noqa: E402

MiB = 1024 * 1024
HEALTH = {"model": "tiny", "names": list(DIMENSIONS), "device": "cpu"}


def _scorer(on_score, on_health=None):
    """A handler: the health answer (or `on_health`) on GET /health, `on_score` on POST /score."""
    return route(
        {("GET", "/health"): on_health or answer(HEALTH), ("POST", "/score"): on_score}, {"error": "unknown path"}
    )


def _rewards(h, seen):
    send_json(h, {"rewards": [[0.5] * len(DIMENSIONS)]})


def test_an_honest_server_scores(serve):
    server = serve(_scorer(_rewards))
    np.testing.assert_allclose(ScorerClient(server.url, names=DIMENSIONS).score(["p"], ["r"]), [[0.5] * 5])


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_a_redirected_score_request_is_refused_and_the_other_origin_sees_nothing(serve, status):
    other = serve(_scorer(_rewards))
    server = serve(_scorer(lambda h, seen: redirect(h, status, other.url + "/score")))
    with pytest.raises(ScoringServerError, match=rf"HTTP {status}, a redirect to {other.url}/score.*final address"):
        ScorerClient(server.url).score(["p"], ["r"])
    assert other.requests == []  # the old client re-sent a 301/302 POST there as a GET


def test_a_redirected_health_check_is_refused(serve):
    other = serve(_scorer(_rewards))
    server = serve(lambda h, seen: redirect(h, 302, other.url + seen.path))
    with pytest.raises(ScoringServerError, match="redirect"):
        _ = ScorerClient(server.url).names
    assert other.requests == []


def test_an_oversize_score_answer_is_refused_after_a_bounded_read(serve):
    server = serve(_scorer(lambda h, seen: server.stream(h, flood(24 * MiB, prefix=b'{"rewards": "'))))
    with pytest.raises(ScoringServerError, match="answered more than"):
        ScorerClient(server.url).score(["p"], ["r"])
    assert server.sent[0].done.wait(30)
    assert not server.sent[0].finished  # the old client read all 24 MiB


def test_a_trickling_server_fails_at_the_deadline(serve):
    body = b'{"rewards": [[0.5, 0.5, 0.5, 0.5, 0.5]]}'
    server = serve(_scorer(lambda h, seen: server.stream(h, trickle(body, 0.5, lead=80))))
    client = ScorerClient(server.url, timeout_s=1.0)
    start = time.monotonic()
    with pytest.raises(ScoringServerError, match=r"did not answer within 1 s"):
        client.score(["p"], ["r"])
    assert time.monotonic() - start < 20  # the old client waited for the whole 40 s trickle


def test_deep_json_and_wrong_types_are_clear_errors(serve):
    deep = serve(_scorer(_rewards, on_health=lambda h, seen: send_json(h, b"[" * 100_000 + b"]" * 100_000)))
    with pytest.raises(ScoringServerError, match="nested 100000 levels deep"):
        _ = ScorerClient(deep.url).names
    for rewards in ([["a"] * 5], [[True] * 5], [[0.5] * 4], "0.5", [[0.5] * 5] * 2, None):
        server = serve(_scorer(lambda h, seen, rewards=rewards: send_json(h, {"rewards": rewards})))
        with pytest.raises(ScoringServerError, match=r"did not answer 1 rows of 5 numbers") as failed:
            ScorerClient(server.url).score(["p"], ["r"])
        assert isinstance(failed.value, ServerError)
    for names in (None, [], [1, 2], "helpfulness"):
        server = serve(_scorer(_rewards, on_health=lambda h, seen, names=names: send_json(h, {"names": names})))
        with pytest.raises(ScoringServerError, match="named no reward dimensions"):
            _ = ScorerClient(server.url).names
