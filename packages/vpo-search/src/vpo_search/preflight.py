"""Check the model endpoint before a search starts, so a wrong URL, key or model name fails at once."""

from __future__ import annotations

import json
import logging
import urllib.error
import urllib.request

__all__ = ["EndpointError", "check_endpoint"]

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
