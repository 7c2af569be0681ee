"""The prompt text of ultrafeedback-v1 in both modes.

Single: the UltraFeedback instruction, verbatim, as the user message (the reward model judges the
whole reply). Multi: the instruction, then a block asking for m different replies in
``<response_i>`` tags, appended after the instruction as the authors do where the format cannot be
substituted into the prompt (their ToolRL rewrite, paper appendix "Domain Prompts"; the paper gives
no UltraFeedback prompt).
"""

from __future__ import annotations

from vpo_core.multi_answer import numbered_tag_list

__all__ = ["TAG", "multi_prompt", "single_prompt"]

TAG = "response"


def single_prompt(instruction: str) -> str:
    """The user message of single-answer mode."""
    return instruction


def multi_prompt(instruction: str, m: int) -> str:
    """The user message of multi-answer mode: the instruction and the m-reply format."""
    return (
        f"{instruction}\n\n---\n"
        f"Write {m} different replies to the request above. Wrap each complete reply in numbered tags "
        f"({numbered_tag_list(TAG, m)}). The {m} replies should be genuinely different (different content, "
        "structure or emphasis), not paraphrases. Closing tags are required on every reply."
    )
