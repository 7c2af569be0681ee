"""Evaluation samplers around a local model: chat rendering with the env's template options.

Every sampler has the `evaluation.Sampler` interface: ``prompt_text(messages)`` gives the prompt as
its ``sample`` takes it, and ``sample`` returns the completion texts prompt-major. The chat template's
keyword options (an env's ``profile.chat_template_kwargs``, e.g. Qwen3's ``enable_thinking=False``)
are given once, when the sampler is built, and applied to every prompt it renders.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from vpo_core.types import Message

__all__ = ["TransformersSampler", "render_chat"]


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


class TransformersSampler:
    """Samples with a local `Policy` (transformers ``generate``), rendering prompts with the template options.

    Args:
        policy: The loaded policy (`vpo_core.adapters.local.policy.Policy`).
        chat_template_kwargs: Extra variables of the chat template.
    """

    def __init__(self, policy: Any, chat_template_kwargs: Mapping[str, Any] | None = None) -> None:
        self.policy = policy
        self.tokenizer = policy.tokenizer
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    def prompt_text(self, messages: Sequence[Message]) -> str:
        """The prompt text (the tokenizer's chat template with `chat_template_kwargs`)."""
        return render_chat(self.tokenizer, messages, self.chat_template_kwargs)

    def sample(
        self,
        prompts: Sequence[str],
        *,
        num_samples: int,
        max_new_tokens: int,
        temperature: float,
        top_p: float = 1.0,
        seed: int | None = None,
    ) -> list[str]:
        """The P·num_samples completion texts (prompt-major)."""
        return list(
            self.policy.sample(
                prompts,
                num_samples=num_samples,
                max_new_tokens=max_new_tokens,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
            )
        )
