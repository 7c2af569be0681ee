"""One reward model per machine: a local HTTP scoring server and the client every process uses.

The reward model (16 GB of weights for ArmoRM) must not be loaded by every process that computes
rewards: veRL runs its reward function in several workers, the local engine in its own process. One
server holds the model; everyone else calls it through `ScorerClient`.

Protocol (JSON over HTTP, stdlib ``http.server``; the server binds 127.0.0.1 by default):

- ``GET /health`` → ``{"model": str, "names": [str], "device": str}``;
- ``POST /score`` with ``{"prompts": [str], "responses": [str]}`` → ``{"rewards": [[float] * d] * n}``;
  a malformed request gets 400 and ``{"error": str}``, a scoring failure 500.

Requests are served on threads and scored one at a time (the scorer holds a lock), each request as
one batch of the model.

    env-ultrafeedback-rm --port 8765                        # ArmoRM on the GPU, if there is one
    env-ultrafeedback-rm --model /path/to/ArmoRM --device cuda:1 --batch-size 16
"""

from __future__ import annotations

import argparse
import json
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_ultrafeedback._scorer import ARMORM_ID, RewardScorer, check_batch
from vpo_core import http_json
from vpo_core.errors import ServerError
from vpo_core.http_json import ANSWER_OVERHEAD, RequestError, UnreachableError, for_terminal, request_json

__all__ = ["DEFAULT_URL", "ScorerClient", "ScoringServer", "ScoringServerError", "main"]

DEFAULT_URL = "http://127.0.0.1:8765"
MAX_BODY = 64 * 1024 * 1024
HEALTH_BYTES = 1024 * 1024
"""The largest ``GET /health`` answer the client reads."""
REWARD_BYTES = 64
"""Bytes of a ``/score`` answer per reward (a float's repr and its separator take at most 26)."""


class ScoringServerError(ServerError, ConnectionError):
    """The scoring server could not be reached, refused a request or answered something else (a project user error).

    The message says what to do. Requests go through `vpo_core.http_json`: no redirect is followed, ``timeout_s``
    bounds each whole request, and an answer is read only up to what the request can need.
    """


class ScoringServer(http_json.ServerThread):
    """A `RewardScorer` served over HTTP on a background thread (`start` / `close`, or ``with``).

    Args:
        scorer: The scorer (loaded once, here).
        host: Address to bind (127.0.0.1: this machine only).
        port: Port; 0 picks a free one (see `url`).
    """

    def __init__(self, scorer: RewardScorer, host: str = "127.0.0.1", port: int = 8765) -> None:
        self.scorer = scorer
        self._lock = threading.Lock()
        super().__init__(self._handler(), host, port, name="scoring-server")

    def _describe(self) -> dict[str, Any]:
        describe = getattr(self.scorer, "describe", None)
        return (
            describe()
            if callable(describe)
            else {"model": type(self.scorer).__name__, "names": list(self.scorer.names)}
        )

    def _handler(self) -> type[http_json.JsonHandler]:
        server = self

        class Handler(http_json.JsonHandler):
            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/health":
                    self.send_json(200, server._describe())
                else:
                    self.send_json(404, {"error": f"unknown path {self.path}; use GET /health or POST /score"})

            def do_POST(self) -> None:
                if self.path.rstrip("/") != "/score":
                    self.send_json(404, {"error": f"unknown path {self.path}; use POST /score"})
                    return
                try:
                    length = int(self.headers.get("Content-Length", "0"))
                    if not 0 < length <= MAX_BODY:
                        raise ValueError(f"body of {length} bytes; send 1 to {MAX_BODY} bytes of JSON")
                    request = json.loads(self.rfile.read(length))
                    if not isinstance(request, dict):
                        raise ValueError('expected {"prompts": [...], "responses": [...]}')
                    prompts, responses = check_batch(request.get("prompts", ()), request.get("responses", ()))
                except (ValueError, TypeError) as error:
                    self.send_json(400, {"error": str(error)})
                    return
                try:
                    with server._lock:
                        rewards = server.scorer.score(prompts, responses) if prompts else np.zeros((0, 0))
                except Exception as error:
                    self.send_json(500, {"error": f"{type(error).__name__}: {error}"})
                    return
                self.send_json(200, {"rewards": np.asarray(rewards, dtype=np.float64).tolist()})

        return Handler


class ScorerClient:
    """A `RewardScorer` that asks the scoring server (cheap: no model, safe to create in every process).

    Args:
        url: The server's root URL.
        names: The dimension names the env expects (checked against the server's on first use).
        timeout_s: The deadline of each whole request, in seconds.
    """

    def __init__(self, url: str = DEFAULT_URL, names: Sequence[str] | None = None, timeout_s: float = 600.0) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self._expected = None if names is None else tuple(names)
        self._names: tuple[str, ...] | None = None

    def _request(
        self, path: str, body: dict[str, Any] | None = None, *, max_bytes: int = HEALTH_BYTES
    ) -> dict[str, Any]:
        """One request to the server (no retry: the caller's step fails); answers at most `max_bytes` are read."""
        try:
            answer = request_json(self.url + path, body, timeout_s=self.timeout_s, max_bytes=max_bytes)
        except UnreachableError as error:
            raise ScoringServerError(
                f"no scoring server at {self.url} ({error}). Start one per machine with "
                f"`env-ultrafeedback-rm --port {self.url.rsplit(':', 1)[-1]}` (model {ARMORM_ID}), point "
                "env.scorer_url (or VPO_RM_URL) at it, or score in this process with env.scorer=inprocess."
            ) from None
        except RequestError as error:
            raise ScoringServerError(f"scoring server {self.url}: {error}") from None
        if not isinstance(answer, dict):
            raise ScoringServerError(f"scoring server {self.url}{path} did not answer a JSON object; check the URL.")
        return answer

    @property
    def names(self) -> tuple[str, ...]:
        """The server's dimension names (asked once)."""
        if self._names is None:
            names = self._request("/health").get("names")
            if not isinstance(names, list) or not names or not all(isinstance(name, str) for name in names):
                raise ScoringServerError(
                    f"scoring server {self.url}/health named no reward dimensions; is it env-ultrafeedback-rm?"
                )
            if self._expected is not None and tuple(names) != self._expected:
                raise ScoringServerError(
                    f"scoring server {self.url} scores {for_terminal(str(tuple(names)))}, this env expects "
                    f"{self._expected}."
                )
            self._names = tuple(names)
        return self._names

    def score(self, prompts: Sequence[str], responses: Sequence[str]) -> NDArray[np.float64]:
        """Rewards of each response to its prompt, shape (n, d), computed by the server."""
        prompts, responses = check_batch(prompts, responses)
        d = len(self.names)
        if not prompts:
            return np.zeros((0, d))
        limit = ANSWER_OVERHEAD + REWARD_BYTES * len(prompts) * d
        rewards = self._request("/score", {"prompts": prompts, "responses": responses}, max_bytes=limit).get("rewards")
        if not (
            isinstance(rewards, list)
            and len(rewards) == len(prompts)
            and all(
                isinstance(row, list)
                and len(row) == d
                and all(isinstance(x, int | float) and not isinstance(x, bool) for x in row)
                for row in rewards
            )
        ):
            raise ScoringServerError(
                f'scoring server {self.url} did not answer {len(prompts)} rows of {d} numbers under "rewards"; '
                "is it env-ultrafeedback-rm?"
            )
        return np.asarray(rewards, dtype=np.float64)


def main(argv: list[str] | None = None) -> int:
    """``env-ultrafeedback-rm``: load the reward model once and serve it on this machine."""
    from env_ultrafeedback._scorer import ArmoRMScorer, WeightsNotFoundError

    parser = argparse.ArgumentParser(
        prog="env-ultrafeedback-rm", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=ARMORM_ID, help="Hub id or local directory of the reward model")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: this machine only)")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--device", default=None, help="cuda, cuda:1, cpu (default: cuda when available)")
    parser.add_argument("--dtype", default=None, help="bfloat16, float32 (default: bfloat16 on GPU)")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--max-length", type=int, default=4096)
    parser.add_argument("--scale", type=float, default=1.0, help="affine map of the raw head before the [0, 1] clip")
    parser.add_argument("--offset", type=float, default=0.0)
    args = parser.parse_args(argv)
    try:
        scorer = ArmoRMScorer(
            args.model,
            device=args.device,
            dtype=args.dtype,
            batch_size=args.batch_size,
            max_length=args.max_length,
            scale=args.scale,
            offset=args.offset,
        )
    except (WeightsNotFoundError, ImportError, ValueError) as error:
        parser.exit(2, f"error: {error}\n")
    server = ScoringServer(scorer, args.host, args.port)
    print(f"scoring {scorer.names} with {args.model} on {scorer.device} at {server.url}", flush=True)
    try:
        server.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.httpd.server_close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
