"""A stand-in for vLLM 0.32.0's OpenAI-compatible server that answers in seconds, for the fast tests.

It answers the endpoints `vpo-eval` and vpo-search call with the request and response shapes of vLLM's
source (``vllm/entrypoints/serve/tokenize/{protocol,serving,api_router}.py``, the chat-completion and
model-list protocols), rendering with a real Hugging Face tokenizer and chat template as vLLM's HF
renderer does: ``apply_chat_template(..., tokenize=False)`` with the request's ``chat_template_kwargs``,
then encoding without special tokens (chat) or with them (a ``prompt``), and ``decode`` for
``/detokenize``. Only the completion text is scripted (``reply``); test_vllm_server.py checks the real
server.

- ``GET /v1/models``: ``{"object": "list", "data": [{"id", "object": "model", "owned_by": "vllm", ...}]}``;
- ``POST /tokenize``: chat form ``{"model", "messages", "add_generation_prompt" (default true),
  "continue_final_message", "add_special_tokens" (default false), "chat_template_kwargs"}`` or completion form
  ``{"model", "prompt", "add_special_tokens" (default true)}`` → ``{"count", "max_model_len", "tokens",
  "token_strs"}``;
- ``POST /detokenize``: ``{"model", "tokens"}`` → ``{"prompt"}``;
- ``POST /v1/chat/completions``: the messages rendered with the template and options → ``choices`` of
  ``{"index", "message": {"role": "assistant", "content"}, "finish_reason"}`` and ``usage``;
- an unknown model: 404 ``{"error": {"message", "type": "NotFoundError", "param": "model", "code": 404}}``;
  an unknown path: 404 ``{"detail": "Not Found"}``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from vpo_core.http_json import JsonHandler, ServerThread

MAX_MODEL_LEN = 2048


class FakeVllm(ServerThread):
    """The fake server on 127.0.0.1 (an ephemeral port), in a thread.

    Args:
        tokenizer: A Hugging Face tokenizer (the served checkpoint's).
        reply: ``reply(prompt_text, n)`` → the n completion texts of a chat request (prompt_text: the
            rendered generation prompt, so a test can see the options reached the template).
        chat_template: A template replacing the tokenizer's (vLLM's ``--chat-template``).
        name: The served model name.
    """

    def __init__(
        self,
        tokenizer: Any,
        reply: Callable[[str, int], list[str]],
        *,
        chat_template: str | None = None,
        name: str = "smollm2",
    ) -> None:
        self.tokenizer, self.reply, self.chat_template, self.name = tokenizer, reply, chat_template, name
        self.requests: list[tuple[str, dict[str, Any]]] = []
        fake = self

        class Handler(JsonHandler):
            def do_GET(self) -> None:
                if self.path.rstrip("/") == "/v1/models":
                    self.send_json(200, fake.model_list())
                elif self.path == "/health":
                    self.send_json(200, {})
                else:
                    self.send_json(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                payload = self.read_json()
                fake.requests.append((self.path, payload))
                handlers = {
                    "/tokenize": fake.tokenize,
                    "/detokenize": fake.detokenize,
                    "/v1/chat/completions": fake.chat,
                }
                if self.path not in handlers:
                    self.send_json(404, {"detail": "Not Found"})
                    return
                if payload.get("model") not in (None, fake.name):
                    self.send_json(
                        404, _error(f"The model `{payload['model']}` does not exist.", "NotFoundError", 404, "model")
                    )
                    return
                self.send_json(*handlers[self.path](payload))

        super().__init__(Handler)
        self.root = self.url
        self.base_url = f"{self.root}/v1"
        self.start()

    def model_list(self) -> dict[str, Any]:
        """``GET /v1/models``."""
        card = {"id": self.name, "object": "model", "created": int(time.time()), "owned_by": "vllm"}
        card.update({"root": self.name, "parent": None, "max_model_len": MAX_MODEL_LEN})
        return {"object": "list", "data": [card]}

    def render(self, messages: list[dict[str, Any]], *, add_generation_prompt: bool, **options: Any) -> str:
        """The chat as the served template renders it (``tokenize=False``)."""
        kwargs = {"chat_template": self.chat_template} if self.chat_template is not None else {}
        text = self.tokenizer.apply_chat_template(
            messages, tokenize=False, add_generation_prompt=add_generation_prompt, **kwargs, **options
        )
        return str(text)

    def tokenize(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST /tokenize`` (TokenizeChatRequest or TokenizeCompletionRequest)."""
        if "messages" in payload:
            generation, final = payload.get("add_generation_prompt", True), payload.get("continue_final_message")
            if generation and final:
                return 400, _error("Cannot set both `continue_final_message` and `add_generation_prompt` to True.")
            options = dict(payload.get("chat_template_kwargs") or {})
            if final:
                options["continue_final_message"] = True
            text = self.render(payload["messages"], add_generation_prompt=generation, **options)
            special = payload.get("add_special_tokens", False)
        elif "prompt" in payload:
            text, special = payload["prompt"], payload.get("add_special_tokens", True)
        else:
            return 400, _error("Field required: body.prompt or body.messages")
        tokens = list(self.tokenizer.encode(text, add_special_tokens=special))
        token_strs = self.tokenizer.convert_ids_to_tokens(tokens) if payload.get("return_token_strs") else None
        return 200, {"count": len(tokens), "max_model_len": MAX_MODEL_LEN, "tokens": tokens, "token_strs": token_strs}

    def detokenize(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST /detokenize``."""
        return 200, {"prompt": self.tokenizer.decode(payload["tokens"])}

    def chat(self, payload: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        """``POST /v1/chat/completions`` (the scripted texts; usage counts the rendered prompt's tokens)."""
        prompt = self.render(
            payload["messages"], add_generation_prompt=True, **dict(payload.get("chat_template_kwargs") or {})
        )
        n = int(payload.get("n", 1))
        texts = self.reply(prompt, n)
        prompt_tokens = len(self.tokenizer.encode(prompt, add_special_tokens=False))
        completion_tokens = sum(len(self.tokenizer.encode(t, add_special_tokens=False)) for t in texts)
        choices = [
            {"index": i, "message": {"role": "assistant", "content": t}, "logprobs": None, "finish_reason": "stop"}
            for i, t in enumerate(texts)
        ]
        usage = {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        }
        body = {"id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time())}
        body.update({"model": self.name, "choices": choices, "usage": usage})
        return 200, body


def _error(message: str, kind: str = "BadRequestError", code: int = 400, param: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}
