"""Chat rendering with the env's template options, and the text the template pre-fills.

Every sampler of `vpo_engines.models` has the `vpo_core.evaluation.Sampler` interface: ``prompt_text(messages)``
gives the prompt as its ``sample`` takes it (`render_chat`), and ``sample`` returns the completion texts
prompt-major. The chat template's keyword options (an env's ``profile.chat_template_kwargs``, e.g. Qwen3's
``enable_thinking=False``) are given once, when the sampler is built (`Policy.chat_template_kwargs`), and
applied to every prompt it renders.

Every sampler returns the whole assistant turn: text a chat template pre-fills at the start of the
assistant turn (Qwen3 with ``enable_thinking=False`` writes an empty think block into the generation
prompt) is part of the prompt's tokens, never generated, yet the env scores it as part of the reply
(`template_prefill`, `with_prefill`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vpo_core.types import Message

__all__ = ["render_chat", "template_prefill", "with_prefill"]


def render_chat(tokenizer: Any, messages: Sequence[Message], template_kwargs: Mapping[str, Any] | None = None) -> str:
    """Chat messages rendered with `tokenizer`'s chat template, ending with the assistant header.

    Args:
        tokenizer: A Hugging Face tokenizer with a chat template.
        messages: The chat.
        template_kwargs: Extra variables of the template (``{"enable_thinking": False}`` for Qwen3).

    Returns:
        The prompt text.
    """
    return str(
        tokenizer.apply_chat_template(
            [dict(m) for m in messages], tokenize=False, add_generation_prompt=True, **dict(template_kwargs or {})
        )
    )


def template_prefill(tokenizer: Any, chat_template_kwargs: Mapping[str, Any] | None) -> str:
    """The text a chat template writes at the start of the assistant turn because of `chat_template_kwargs`.

    Qwen3 with ``enable_thinking=False`` pre-fills an empty think block (two newlines inside ``<think>``
    tags, two after): it is in the prompt, so it never appears among the generated tokens, yet it is
    part of the assistant's turn, and an env's reward may score it (a format dimension, say). Found
    generically: the generation prompt with the options minus the generation prompt without them, when
    the latter is a prefix of the former. A template that pre-fills text whatever the options (none
    of the paper's models) is not detected.

    Returns:
        The pre-filled text, or "" when the options add none (or the template cannot say).
    """
    if not chat_template_kwargs:
        return ""
    messages = [{"role": "user", "content": "?"}]
    try:
        plain = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        with_options = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, tokenize=False, **dict(chat_template_kwargs)
        )
    except Exception:  # a tokenizer without a chat template: nothing is pre-filled
        return ""
    if not isinstance(plain, str) or not isinstance(with_options, str) or not with_options.startswith(plain):
        return ""
    return with_options[len(plain) :]


def with_prefill(prompts: Sequence[str], texts: Sequence[str], num_samples: int, prefill: str) -> list[str]:
    """The whole assistant turns: `prefill` before each generated text whose prompt ends with it.

    Args:
        prompts: The P rendered prompts.
        texts: The P·num_samples generated texts, prompt-major.
        num_samples: Completions per prompt.
        prefill: The template's pre-fill (`template_prefill`), or "".

    Returns:
        The completions as the env scores them, same order.
    """
    if not prefill:
        return list(texts)
    return [(prefill if prompts[i // num_samples].endswith(prefill) else "") + t for i, t in enumerate(texts)]
