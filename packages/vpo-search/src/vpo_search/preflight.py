"""Check the model endpoint before a search starts, so a wrong URL, key or model name fails at once."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request
from collections.abc import Mapping
from typing import Any

from vpo_core.chat_prefill import PROBE, PrefillError, ServerPrefill, served_by_vllm

__all__ = ["EndpointError", "check_endpoint", "check_template_options"]

logger = logging.getLogger(__name__)


class EndpointError(RuntimeError):
    """The OpenAI-compatible endpoint cannot serve the search."""


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
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = response.read()
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            raise EndpointError(
                f"{url} rejected the API key (HTTP {exc.code}); pass api_key=<the server's key>."
            ) from None
        if exc.code == 404:
            logger.warning("%s has no model list (HTTP 404); going on without checking the model name", url)
            return []
        raise EndpointError(f"{url} answered HTTP {exc.code}; is base_url an OpenAI-compatible /v1 URL?") from None
    except (urllib.error.URLError, TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise EndpointError(
            f"cannot reach the model endpoint {base_url} ({reason}). Serve the checkpoint first ({serve}) "
            "or fix base_url=."
        ) from None
    try:
        ids = [str(item["id"]) for item in json.loads(body)["data"]]
    except (ValueError, KeyError, TypeError):
        raise EndpointError(f"{url} did not answer with an OpenAI model list; is base_url the /v1 URL?") from None
    if ids and model not in ids:
        raise EndpointError(f"{base_url} serves {ids}, not {model!r}; pass model=<one of them> (or {serve}).")
    return ids


def check_template_options(
    base_url: str, model: str, api_key: str, options: Mapping[str, Any], *, timeout_s: float = 30.0
) -> str:
    """Check that the endpoint takes chat-template `options` and can say what its template then pre-fills.

    Only vLLM takes ``chat_template_kwargs`` in a chat request (its model list says ``owned_by: vllm``);
    the pre-fill is learned from its ``/tokenize`` endpoint (`vpo_core.chat_prefill`).

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
    url = base_url.rstrip("/") + "/models"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            rows = json.loads(response.read()).get("data") or []
    except (urllib.error.URLError, OSError, ValueError, AttributeError):
        rows = []
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
