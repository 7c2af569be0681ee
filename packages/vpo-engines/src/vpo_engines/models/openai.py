"""Evaluation sampling from an OpenAI-compatible endpoint (``vllm serve`` of a checkpoint), with the stdlib.

Two APIs:

- ``chat`` (default): ``POST {base_url}/chat/completions`` with the messages; the server renders them
  with the checkpoint's own chat template, and the env's ``chat_template_kwargs`` travel in the
  request (vLLM's ``chat_template_kwargs`` extra parameter; Qwen3's ``enable_thinking=False``).
- ``completions``: ``POST {base_url}/completions`` with prompt text rendered here by a local tokenizer
  (``tokenizer=``, e.g. the checkpoint directory), exactly as the in-process samplers render it.

Each prompt is one request for its ``n`` completions, with ``temperature``, ``top_p``, ``max_tokens``
and ``seed`` (``seed + i`` for the i-th prompt, as the vLLM sampler seeds them), all fields of
OpenAI's own request schemas; requests run concurrently (``max_workers``). Fields only vLLM accepts
(``chat_template_kwargs``, ``add_special_tokens``) are sent only to a vLLM server (``server=``: "auto"
recognises vLLM by the ``owned_by: vllm`` of its model list). Requests go through `vpo_core.http_json`:
no redirect is followed (the API key stays with the endpoint, a POST stays a POST), ``timeout_s`` bounds
each whole request, and an answer is read only up to what the request can need (`completion_limit` of
``max_tokens`` and ``n``). Transient failures (HTTP 429/5xx, the deadline) are retried with back-off; a
refused connection, a bad URL, a redirect, an oversized or malformed answer or a model the server does not
serve fails at once with a message naming the fix. An answer without a ``choices`` list is not a
completion answer and fails too; a choice the server returns without text counts as the empty string
(scored like any unparseable completion), so one bad completion never stops an evaluation.

The whole assistant turn is returned, as by the in-process samplers: text the chat template pre-fills
(Qwen3 with ``enable_thinking=False`` writes an empty think block into the generation prompt) is in
the prompt, so no server returns it. With ``completions`` the prompt is rendered here and the pre-fill
is known exactly. With ``chat`` the server renders the prompt; the pre-fill is taken from ``tokenizer=``
when one is given (assumed to carry the served checkpoint's template), else learned from the vLLM
server itself, per conversation, through its ``/tokenize`` and ``/detokenize`` endpoints
(`vpo_engines.models.prefill`). A server that cannot say (no ``/tokenize``) gets no request with template
options: the sampler is refused at construction, naming ``tokenizer=`` as the fix.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from vpo_core.errors import ServerError
from vpo_core.http_json import (
    DeadlineError,
    RequestError,
    StatusError,
    UnreachableError,
    completion_limit,
    for_terminal,
    request_json,
)
from vpo_core.sampling_settings import SamplingSettings
from vpo_core.types import Message
from vpo_engines.models.chat import template_prefill, with_prefill
from vpo_engines.models.prefill import PROBE, PrefillError, ServerPrefill, served_by_vllm

__all__ = ["SERVERS", "VLLM_ONLY_FIELDS", "EndpointError", "OpenAISampler"]

APIS = ("chat", "completions")
SERVERS = ("auto", "vllm", "other")
VLLM_ONLY_FIELDS = ("chat_template_kwargs", "add_special_tokens")
"""Request fields of vLLM's OpenAI-compatible server that OpenAI's schemas do not have."""


MODEL_LIST_BYTES = 4 * 1024 * 1024
"""The largest ``GET /models`` answer read (a list of a thousand models takes a few hundred KiB)."""


class EndpointError(ServerError):
    """The endpoint cannot be used; the message names the URL and what to do (a project user error)."""


def _explain(exc: RequestError, timeout_s: float) -> str:
    """The message of a failed request, with the fix for this client."""
    if isinstance(exc, UnreachableError):
        return (
            f"{exc}; start the server (`vllm serve <checkpoint> --port 8000`) or pass endpoint=<its base URL, "
            "e.g. http://127.0.0.1:8000/v1>."
        )
    if isinstance(exc, DeadlineError):
        return (
            f"{exc.url} did not answer within {timeout_s:g} s (the deadline of the whole request passed while "
            f"{exc.step}); raise timeout_s= (vpo-eval: --timeout) if the server is only slow."
        )
    if isinstance(exc, StatusError) and exc.status in (401, 403):
        return f"{exc} (check api_key=)"
    return str(exc)


class OpenAISampler:
    """Samples evaluation pools from an OpenAI-compatible server.

    Args:
        base_url: The API root, e.g. ``http://127.0.0.1:8000/v1`` (``/v1`` is appended when missing).
        model: The served model name; default the first model ``GET /models`` lists.
        api_key: Sent as ``Authorization: Bearer``; ``vllm serve`` without ``--api-key`` accepts any.
        api: ``"chat"`` or ``"completions"``.
        tokenizer: A tokenizer (or a model directory holding one) to render prompts locally; needed
            for ``api="completions"``. With ``api="chat"`` it tells the template's pre-fill; without it a
            vLLM server's ``/tokenize`` does.
        chat_template_kwargs: Extra variables of the chat template.
        timeout_s: The deadline of each whole request, in seconds (not of each socket read).
        retries: Retries of a transient failure.
        max_workers: Concurrent requests.
        server: ``"vllm"`` sends vLLM's extra fields, ``"other"`` sends OpenAI's fields only, ``"auto"``
            decides by the model list (vLLM's says ``owned_by: vllm``).

    Raises:
        EndpointError: (a `vpo_core.errors.ServerError`) For an unknown API or server kind, a missing tokenizer, an unreachable server, an
            unknown model, template options a non-vLLM chat server cannot take, or a vLLM server that cannot
            say what its template pre-fills (no ``/tokenize``) when no tokenizer is given.
    """

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str = "EMPTY",
        api: str = "chat",
        tokenizer: Any = None,
        chat_template_kwargs: Mapping[str, Any] | None = None,
        timeout_s: float = 600.0,
        retries: int = 3,
        max_workers: int = 8,
        server: str = "auto",
    ) -> None:
        if api not in APIS:
            raise EndpointError(f"api must be one of {APIS}, got {api!r}.")
        if server not in SERVERS:
            raise EndpointError(f"server must be one of {SERVERS}, got {server!r}.")
        if not base_url.startswith(("http://", "https://")):
            raise EndpointError(
                f"endpoint {base_url!r} is not an http(s) URL; pass e.g. endpoint=http://127.0.0.1:8000/v1."
            )
        root = base_url.rstrip("/")
        self.base_url = root if root.endswith("/v1") else root + "/v1"
        self.api_key = api_key
        self.api = api
        self.chat_template_kwargs = dict(chat_template_kwargs or {})
        self.timeout_s = timeout_s
        self.retries = retries
        self.max_workers = max_workers
        if api == "completions" and tokenizer is None:
            raise EndpointError(
                "api=completions renders prompts locally: pass tokenizer=<the checkpoint's directory>, or use api=chat."
            )
        if tokenizer is not None and not hasattr(tokenizer, "apply_chat_template"):
            from vpo_engines.models.policy import load_tokenizer

            tokenizer = load_tokenizer(tokenizer)
        self.tokenizer = tokenizer
        rows = self._model_rows()
        served = [row["id"] for row in rows]
        self.vllm = server == "vllm" or (server == "auto" and served_by_vllm(rows))
        if model is None:
            if not served:
                raise EndpointError(f"{self.base_url}/models lists no model; pass served_model=<name>.")
            model = served[0]
        elif served and model not in served:
            raise EndpointError(
                f"{self.base_url} does not serve model {model!r}; it serves {for_terminal(str(served))}."
            )
        self.model = model
        self.bad_completions = 0
        self._lock = threading.Lock()
        self._server_prefill: ServerPrefill | None = None
        # the template's pre-fill (of the probe conversation when learned from the server), and where it comes
        # from: "tokenizer", "server" (vLLM's /tokenize, asked again per conversation) or "none" (no options)
        self.prefill = template_prefill(tokenizer, self.chat_template_kwargs) if tokenizer is not None else ""
        self.prefill_source = "tokenizer" if tokenizer is not None and self.chat_template_kwargs else "none"
        if api == "chat" and self.chat_template_kwargs:
            if not self.vllm:
                raise EndpointError(
                    f"{self.base_url} is not a vLLM server (server={server}), and only vLLM takes chat template "
                    f"options {self.chat_template_kwargs} in a chat request; use api=completions with tokenizer=<the "
                    "checkpoint's directory> (the prompt is rendered here), or server=vllm if it is vLLM."
                )
            if tokenizer is None:
                self._server_prefill = ServerPrefill(
                    self.base_url,
                    model=model,
                    chat_template_kwargs=self.chat_template_kwargs,
                    api_key=api_key,
                    timeout_s=min(timeout_s, 60.0),
                    retries=retries,
                )
                self.prefill = self._learned_prefill(PROBE)
                self.prefill_source = "server"

    def _learned_prefill(self, messages: Sequence[Any]) -> str:
        """The served template's pre-fill for `messages`, asked of the vLLM server."""
        assert self._server_prefill is not None
        try:
            return self._server_prefill(messages)
        except PrefillError as exc:
            raise EndpointError(
                f"with chat template options {self.chat_template_kwargs} the server's template may pre-fill text "
                "in the assistant turn that no answer contains (Qwen3 with enable_thinking=False: an empty think "
                f"block), yet the env scores it, and the server cannot say what it pre-fills ({exc}); pass "
                "tokenizer=<the checkpoint's directory> so it is known, or use api=completions."
            ) from None

    # ------------------------------------------------------------------------------- HTTP
    def _request(self, path: str, payload: dict[str, Any] | None = None, *, max_bytes: int = MODEL_LIST_BYTES) -> Any:
        """One request with the retry policy: a transient failure (HTTP 429/5xx, the deadline) is tried again.

        Raises:
            EndpointError: Any other failure, or the last transient one; the message names the fix.
        """
        url = f"{self.base_url}{path}"
        headers = {"Authorization": f"Bearer {self.api_key}"}
        for attempt in range(self.retries + 1):
            try:
                return request_json(url, payload, headers=headers, timeout_s=self.timeout_s, max_bytes=max_bytes)
            except RequestError as exc:
                if exc.transient and attempt < self.retries:
                    if isinstance(exc, StatusError):  # a busy server: pause; a deadline already waited
                        time.sleep(min(2.0**attempt, 30.0))
                    continue
                raise EndpointError(_explain(exc, self.timeout_s)) from None
        raise AssertionError("unreachable")  # pragma: no cover

    def _model_rows(self) -> list[dict[str, Any]]:
        answer = self._request("/models")
        data = answer.get("data") if isinstance(answer, dict) else None
        if not isinstance(data, list):
            raise EndpointError(f"{self.base_url}/models did not answer an OpenAI model list; check endpoint=.")
        return [row for row in data if isinstance(row, dict) and isinstance(row.get("id"), str)]

    def models(self) -> list[str]:
        """The served model names (``GET /models``)."""
        return [row["id"] for row in self._model_rows()]

    # ----------------------------------------------------------------------------- Sampler
    def prompt_text(self, messages: Sequence[Message]) -> str:
        """The prompt as `sample` takes it: the rendered text (completions API) or the messages as JSON (chat)."""
        if self.api == "completions":
            from vpo_engines.models.chat import render_chat

            return render_chat(self.tokenizer, messages, self.chat_template_kwargs)
        return json.dumps([dict(m) for m in messages])

    def _payload(self, prompt: str, *, n: int, settings: SamplingSettings, seed: int) -> dict:
        payload: dict[str, Any] = {
            "model": self.model,
            "n": n,
            "temperature": settings.temperature,
            "top_p": settings.top_p,
            "max_tokens": settings.max_new_tokens,
            "seed": seed,
        }
        if self.api == "chat":
            payload["messages"] = json.loads(prompt)
            if self.chat_template_kwargs and self.vllm:  # refused at construction for another server
                payload["chat_template_kwargs"] = self.chat_template_kwargs
        else:
            payload["prompt"] = prompt
            if self.vllm:
                # the text already holds the template's special tokens, tokenized as the in-process samplers
                # do (add_special_tokens=False); a vLLM extra parameter (other servers decide themselves)
                payload["add_special_tokens"] = False
        return payload

    def _texts(self, answer: Any, n: int, url: str) -> list[str]:
        """The n completion texts of an answer; a choice without text is "" (counted in `bad_completions`).

        Raises:
            EndpointError: The answer is not a completion answer at all (no ``choices`` list).
        """
        choices = answer.get("choices") if isinstance(answer, dict) else None
        texts = [""] * n
        if not isinstance(choices, list):
            raise EndpointError(
                f"{url} answered JSON without a choices list ({for_terminal(json.dumps(answer), 120)}); is "
                "base_url= an OpenAI-compatible API root?"
            )
        filled: set[int] = set()
        for position, choice in enumerate(choices):
            index = choice.get("index", position) if isinstance(choice, dict) else position
            if not isinstance(index, int) or not 0 <= index < n:
                continue
            if self.api == "chat":
                message = choice.get("message") if isinstance(choice, dict) else None
                text = message.get("content") if isinstance(message, dict) else None
            else:
                text = choice.get("text") if isinstance(choice, dict) else None
            if isinstance(text, str):
                texts[index] = text
                filled.add(index)
        with self._lock:
            self.bad_completions += n - len(filled)
        return texts

    def sample(
        self, prompts: Sequence[str], *, num_samples: int, settings: SamplingSettings, seed: int | None = None
    ) -> list[str]:
        """The P·num_samples whole assistant turns (prompt-major); a missing completion is the pre-fill alone.

        `vpo_core.evaluation.Sampler`'s signature: one request per prompt (``n`` = `num_samples`, `max_workers`
        in flight), prompt i with request seed ``seed + i`` (None counts as 0).
        """
        base = 0 if seed is None else seed
        path = "/chat/completions" if self.api == "chat" else "/completions"

        def one(i: int) -> list[str]:
            payload = self._payload(prompts[i], n=num_samples, settings=settings, seed=base + i)
            answer = self._request(path, payload, max_bytes=completion_limit(settings.max_new_tokens, num_samples))
            texts = self._texts(answer, num_samples, self.base_url + path)
            if self.api == "chat":  # the server rendered the template: every prompt carries its pre-fill
                prefill = (
                    self.prefill if self._server_prefill is None else self._learned_prefill(json.loads(prompts[i]))
                )
                texts = [prefill + text for text in texts]
            return texts

        with ThreadPoolExecutor(max_workers=max(1, min(self.max_workers, len(prompts)))) as pool:
            results = list(pool.map(one, range(len(prompts))))
        texts = [text for texts in results for text in texts]
        if self.api == "chat":
            return texts
        return with_prefill(prompts, texts, num_samples, self.prefill)
