"""What a served chat template pre-fills in the assistant turn, learned from the vLLM server itself.

A chat template may write text into the generation prompt because of its options: Qwen3 with
``enable_thinking=False`` ends the prompt with an empty think block (two newlines in ``<think>`` tags,
two after). That text is part of the assistant's turn, and an env may score it, yet no server returns
it: it is prompt, not completion. Training and local evaluation know it from the tokenizer
(`vpo_engines.models.chat.template_prefill`); a client of a served model has no tokenizer
(``pip install vpo-engines`` without the ``local`` extra brings no transformers), so it asks the server.

vLLM's OpenAI-compatible server has two endpoints for this, at the server's root (not under ``/v1``):

- ``POST /tokenize`` with ``{"model", "messages", "add_generation_prompt": true, "chat_template_kwargs"}``
  renders the messages with the served chat template (the one chat requests use, ``--chat-template``
  included) and answers ``{"count", "max_model_len", "tokens", "token_strs"}``;
- ``POST /detokenize`` with ``{"model", "tokens"}`` answers ``{"prompt": <the decoded text>}``.

The pre-fill is defined as for the tokenizer: the generation prompt rendered with the options minus the
generation prompt rendered without them, when the latter is a prefix of the former (else ""). Both are
decoded by the server's tokenizer, so text the decoder rewrites (a tokenizer with
``clean_up_tokenization_spaces``) is compared as rewritten in both. A template that pre-fills text whatever
the options, or options the server already applies by default (``--default-chat-template-kwargs``), are
not seen, exactly as `template_prefill` does not see them.

Standard library only: `vpo-eval` runs from a plain ``pip install vpo-engines``. Requests go through
`vpo_core.http_json` (no redirect followed, a deadline per request, answers read up to what the request can
need: a ``/tokenize`` answer in proportion to the conversation, a ``/detokenize`` one to the token count).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from vpo_core.errors import ServerError
from vpo_core.http_json import (
    ANSWER_OVERHEAD,
    BYTES_PER_TOKEN,
    NoAnswerError,
    RequestError,
    StatusError,
    UnreachableError,
    for_terminal,
    request_json,
)

__all__ = ["PROBE", "VLLM_OWNER", "PrefillError", "ServerPrefill", "api_root", "served_by_vllm"]

VLLM_OWNER = "vllm"
"""The ``owned_by`` of every model in a vLLM server's ``GET /v1/models`` list."""

PROBE: tuple[dict[str, str], ...] = ({"role": "user", "content": "?"},)
"""The conversation `template_prefill` probes a tokenizer with (a one-word user turn)."""

TOKEN_BYTES = 64
"""Bytes of a ``/tokenize`` answer per byte of the request: an id and a token string for each token, generously."""


class PrefillError(ServerError):
    """The server cannot say what its chat template pre-fills; the message names the URL and the answer."""


def api_root(base_url: str) -> str:
    """The server's root URL, where vLLM serves ``/tokenize``: `base_url` without a trailing ``/v1``.

    Args:
        base_url: The OpenAI-compatible API root, e.g. ``http://127.0.0.1:8000/v1``.

    Returns:
        E.g. ``http://127.0.0.1:8000``.
    """
    root = base_url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def served_by_vllm(model_rows: Iterable[Mapping[str, Any]]) -> bool:
    """Whether a ``GET /v1/models`` answer's rows come from vLLM (it lists each as ``owned_by: vllm``)."""
    return any(row.get("owned_by") == VLLM_OWNER for row in model_rows)


class ServerPrefill:
    """The pre-fill of a vLLM server's chat template for a conversation, asked once per conversation.

    Calling it costs four small requests the first time a conversation is seen (tokenize and detokenize,
    with and without the options; milliseconds each, no generation) and nothing after. Thread-safe.

    Args:
        base_url: The OpenAI-compatible API root (``/v1`` or not); ``/tokenize`` is asked at its root.
        model: The served model name.
        chat_template_kwargs: The template options chat requests send (e.g. ``{"enable_thinking": False}``).
        api_key: Sent as ``Authorization: Bearer``.
        timeout_s: The deadline of each whole request, in seconds.
        retries: Retries of a transient failure (HTTP 429/5xx, the deadline).
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str,
        chat_template_kwargs: Mapping[str, Any],
        api_key: str = "EMPTY",
        timeout_s: float = 60.0,
        retries: int = 2,
    ) -> None:
        self.root = api_root(base_url)
        self.model = model
        self.chat_template_kwargs = dict(chat_template_kwargs)
        self.api_key = api_key
        self.timeout_s = timeout_s
        self.retries = retries
        self._known: dict[str, str] = {}
        self._lock = threading.Lock()

    def __call__(self, messages: Sequence[Mapping[str, Any]] = PROBE) -> str:
        """The text the served template writes after the generation prompt because of the options.

        Args:
            messages: The conversation (role/content dicts), as a chat request sends it.

        Returns:
            The pre-filled text, or "" when the options add none.

        Raises:
            PrefillError: The server has no vLLM tokenizer endpoints, or answered something else.
        """
        if not self.chat_template_kwargs:
            return ""
        conversation = [dict(m) for m in messages]
        key = json.dumps(conversation, sort_keys=True)
        with self._lock:
            if key in self._known:
                return self._known[key]
        with_options = self.render(conversation, self.chat_template_kwargs)
        plain = self.render(conversation, None)
        prefill = with_options[len(plain) :] if with_options.startswith(plain) else ""
        with self._lock:
            self._known[key] = prefill
        return prefill

    def render(self, messages: Sequence[Mapping[str, Any]], chat_template_kwargs: Mapping[str, Any] | None) -> str:
        """The generation prompt as the server renders it (``/tokenize`` then ``/detokenize``).

        Args:
            messages: The conversation.
            chat_template_kwargs: The template options, or None for the server's defaults.

        Returns:
            The decoded prompt text, ending with what the template writes for the assistant's turn.

        Raises:
            PrefillError: As for calling the object.
        """
        payload: dict[str, Any] = {
            "model": self.model,
            "messages": [dict(m) for m in messages],
            "add_generation_prompt": True,
        }
        if chat_template_kwargs is not None:
            payload["chat_template_kwargs"] = dict(chat_template_kwargs)
        # the answer holds the prompt's token ids and strings: at most one token per byte of the conversation
        size = len(json.dumps(payload).encode())
        answer = self._post("/tokenize", payload, ANSWER_OVERHEAD + TOKEN_BYTES * size)
        tokens = answer.get("tokens")
        if not isinstance(tokens, list) or not all(isinstance(t, int) for t in tokens):
            raise PrefillError(f"{self.root}/tokenize answered no token ids ({_short(answer)}); is it a vLLM server?")
        detokenize = {"model": self.model, "tokens": tokens}
        text = self._post("/detokenize", detokenize, ANSWER_OVERHEAD + BYTES_PER_TOKEN * len(tokens)).get("prompt")
        if not isinstance(text, str):
            raise PrefillError(f"{self.root}/detokenize answered no prompt text; is it a vLLM server?")
        return text

    def _post(self, path: str, payload: dict[str, Any], max_bytes: int) -> dict[str, Any]:
        """One POST with the retry policy (HTTP 429/5xx, the deadline); answers at most `max_bytes` are read."""
        url = f"{self.root}{path}"
        headers = {"Authorization": f"Bearer {self.api_key}"}
        for attempt in range(self.retries + 1):
            try:
                answer = request_json(url, payload, headers=headers, timeout_s=self.timeout_s, max_bytes=max_bytes)
            except RequestError as exc:
                if exc.transient and attempt < self.retries:
                    if isinstance(exc, StatusError):
                        time.sleep(min(2.0**attempt, 10.0))
                    continue
                if isinstance(exc, UnreachableError | NoAnswerError):
                    raise PrefillError(f"{url} gave no answer ({exc})") from None
                raise PrefillError(str(exc)) from None
            if not isinstance(answer, dict):
                raise PrefillError(f"{url} did not answer a JSON object ({_short(answer)})")
            return answer
        raise AssertionError("unreachable")  # pragma: no cover


def _short(value: Any) -> str:
    return for_terminal(json.dumps(value), 200)
