"""Check the model endpoint before a search starts, so a wrong URL, key or model name fails at once.

Requests go through `vpo_core.http_json`: no redirect is followed (the key stays with the endpoint), the
timeout bounds each whole request, and the model list is read up to a fixed cap.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from vpo_core.errors import ServerError
from vpo_core.http_json import (
    DeadlineError,
    NoAnswerError,
    RedirectError,
    RequestError,
    StatusError,
    UnreachableError,
    for_terminal,
    request_json,
)
from vpo_engines.models.prefill import PROBE, PrefillError, ServerPrefill, served_by_vllm

__all__ = ["EndpointError", "check_endpoint", "check_template_options"]

logger = logging.getLogger(__name__)


MODEL_LIST_BYTES = 4 * 1024 * 1024
"""The largest ``GET /models`` answer read."""


class EndpointError(ServerError):
    """The OpenAI-compatible endpoint cannot serve the search (a project user error)."""


def _get(url: str, api_key: str, timeout_s: float) -> Any:
    """``GET url`` through `vpo_core.http_json` (no redirect followed, `timeout_s` bounds the whole request)."""
    return request_json(
        url, headers={"Authorization": f"Bearer {api_key}"}, timeout_s=timeout_s, max_bytes=MODEL_LIST_BYTES
    )


def check_endpoint(base_url: str, model: str, api_key: str, *, timeout_s: float = 10.0) -> list[str]:
    """``GET <base_url>/models`` and check that `model` is served.

    Args:
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        model: The served model name the search will request.
        api_key: Sent as a bearer token.
        timeout_s: Seconds to wait for the answer.

    Returns:
        The served model ids (empty when the endpoint has no model list).

    Raises:
        EndpointError: Unreachable endpoint, rejected key, not an OpenAI-compatible answer, or a model
            list without `model`; the message says how to fix it.
    """
    url = base_url.rstrip("/") + "/models"
    serve = f"vllm serve <merged HF dir> --served-model-name {model} --port 8000"
    try:
        answer = _get(url, api_key, timeout_s)
    except RedirectError as exc:
        raise EndpointError(str(exc)) from None
    except StatusError as exc:
        if exc.status in (401, 403):
            raise EndpointError(
                f"{url} rejected the API key (HTTP {exc.status}); pass api_key=<the server's key>."
            ) from None
        if exc.status == 404:
            logger.warning("%s has no model list (HTTP 404); going on without checking the model name", url)
            return []
        said = f" (it said: {exc.body})" if exc.body else ""
        raise EndpointError(
            f"{url} answered HTTP {exc.status}{said}; is base_url an OpenAI-compatible /v1 URL?"
        ) from None
    except (UnreachableError, NoAnswerError, DeadlineError) as exc:
        raise EndpointError(
            f"cannot reach the model endpoint {base_url} ({exc}). Serve the checkpoint first ({serve}) or fix base_url=."
        ) from None
    except RequestError as exc:
        raise EndpointError(f"{exc} (is base_url the /v1 URL?)") from None
    rows = answer.get("data") if isinstance(answer, dict) else None
    if not isinstance(rows, list) or not all(isinstance(row, dict) and isinstance(row.get("id"), str) for row in rows):
        raise EndpointError(f"{url} did not answer with an OpenAI model list; is base_url the /v1 URL?")
    ids = [row["id"] for row in rows]
    if ids and model not in ids:
        raise EndpointError(
            f"{base_url} serves {for_terminal(str(ids))}, not {model!r}; pass model=<one of them> (or {serve})."
        )
    return ids


def check_template_options(
    base_url: str, model: str, api_key: str, options: Mapping[str, Any], *, timeout_s: float = 30.0
) -> str:
    """Check that the endpoint takes chat-template `options` and can say what its template then pre-fills.

    Only vLLM takes ``chat_template_kwargs`` in a chat request (its model list says ``owned_by: vllm``);
    the pre-fill is learned from its ``/tokenize`` endpoint (`vpo_engines.models.prefill`).

    Args:
        base_url: The endpoint, e.g. ``http://127.0.0.1:8000/v1``.
        model: The served model name.
        api_key: Sent as a bearer token.
        options: The chat-template options the search sends (non-empty).
        timeout_s: Seconds per request.

    Returns:
        What the template pre-fills for a one-word question (e.g. Qwen3's empty think block, or "").

    Raises:
        EndpointError: Not a vLLM server, or one that cannot say what its template pre-fills.
    """
    try:
        answer = _get(base_url.rstrip("/") + "/models", api_key, timeout_s)
    except RequestError:
        answer = None
    rows = answer.get("data") if isinstance(answer, dict) else None
    rows = rows if isinstance(rows, list) else []
    if not served_by_vllm(row for row in rows if isinstance(row, dict)):
        raise EndpointError(
            f"{base_url} is not a vLLM server (its model list does not say owned_by: vllm), and only vLLM takes "
            f"the chat template options {dict(options)} (the env profile's; Qwen3's thinking off) in a chat "
            "request; serve the checkpoint with vLLM, or pass chat_template_kwargs={} to search with the "
            "server's template defaults."
        )
    try:
        return ServerPrefill(base_url, model=model, chat_template_kwargs=options, api_key=api_key, timeout_s=timeout_s)(
            PROBE
        )
    except PrefillError as exc:
        raise EndpointError(
            f"with chat template options {dict(options)} the served template may pre-fill text in the assistant "
            f"turn that no completion contains (Qwen3: an empty think block), and {base_url} cannot say what "
            f"({exc}); serve with vLLM's OpenAI-compatible server (it has /tokenize), or pass "
            "chat_template_kwargs={}."
        ) from None
