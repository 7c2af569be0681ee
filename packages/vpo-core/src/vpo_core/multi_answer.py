"""The multi-answer protocol: numbered tags in one completion, and training de-duplication."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from functools import lru_cache
from typing import NamedTuple

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core.types import Candidate

__all__ = [
    "Block",
    "all_blocks",
    "dedupe_reward_rows",
    "extract_numbered",
    "first_block",
    "numbered_tag_list",
    "render_numbered",
    "text_candidates",
]


def numbered_tag_list(tag: str, m: int) -> str:
    """The tag list of the paper's prompts, e.g. ``<route_1>...</route_1>, <route_2>...</route_2>``.

    Args:
        tag: Tag stem, e.g. ``"route"`` or ``"response"``.
        m: Number of tags.

    Returns:
        The tags joined by ", ".
    """
    return ", ".join(f"<{tag}_{i}>...</{tag}_{i}>" for i in range(1, m + 1))


def render_numbered(tag: str, bodies: Sequence[str], *, sep: str = "\n") -> str:
    """Wrap bodies in numbered tags: ``<tag_1>body</tag_1>`` ...

    Args:
        tag: Tag stem.
        bodies: One body per answer.
        sep: Separator between the tagged answers.

    Returns:
        The completion text.
    """
    return sep.join(f"<{tag}_{i}>{body}</{tag}_{i}>" for i, body in enumerate(bodies, start=1))


class Block(NamedTuple):
    """One tagged block found in a text: its body and where the closing tag ends."""

    body: str
    end: int


@lru_cache(maxsize=512)
def _delimiters(tag: str, ignore_case: bool, loose: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    flags = re.IGNORECASE if ignore_case else 0
    space = r"\s*" if loose else ""
    return (
        re.compile(f"<{re.escape(tag)}{space}>", flags),
        re.compile(f"</{re.escape(tag)}{space}>", flags),
    )


def first_block(text: str, tag: str, *, ignore_case: bool = False, loose: bool = False, start: int = 0) -> Block | None:
    """The first ``<tag>…</tag>`` block of `text` at or after `start`, in time linear in ``len(text)``.

    The result is the one of the regex ``<tag>(.*?)</tag>`` (DOTALL) searched from `start`: the body
    runs from the first opening tag to the first closing tag after it. It is found with two forward
    scans instead of a lazy-dot regex, whose search restarts at every unmatched opening tag and so
    takes time quadratic in the number of them (a completion can hold millions).

    Args:
        text: The text (untrusted model output).
        tag: Tag name, e.g. ``"answer"`` or ``"response_1"``.
        ignore_case: Match the tag name in any case.
        loose: Allow whitespace before ``>`` (``<tag  >``).
        start: Position to search from.

    Returns:
        The body and the end of the closing tag, or None if no opening tag has a closing tag after it.
    """
    opening, closing = _delimiters(tag, ignore_case, loose)
    head = opening.search(text, start)
    if head is None:
        return None
    tail = closing.search(text, head.end())
    if tail is None:  # no later opening tag can have a closing tag after it either
        return None
    return Block(text[head.end() : tail.start()], tail.end())


def all_blocks(text: str, tag: str, *, ignore_case: bool = False, loose: bool = False) -> list[str]:
    """Bodies of the successive non-overlapping ``<tag>…</tag>`` blocks, in linear time.

    The result is ``re.findall`` of the lazy pattern (see `first_block`).

    Args:
        text: The text.
        tag: Tag name.
        ignore_case: Match the tag name in any case.
        loose: Allow whitespace before ``>``.

    Returns:
        The bodies in order.
    """
    out: list[str] = []
    pos = 0
    while (block := first_block(text, tag, ignore_case=ignore_case, loose=loose, start=pos)) is not None:
        out.append(block.body)
        pos = block.end
    return out


def extract_numbered(text: str, tag: str, m: int, *, ignore_case: bool = True) -> list[str | None]:
    """The body of the first ``<tag_i>…</tag_i>`` for i = 1..m (whitespace allowed before ``>``).

    Linear in ``len(text)`` per tag, whatever the text holds (see `first_block`).

    Args:
        text: Completion text.
        tag: Tag stem.
        m: Number of answers.
        ignore_case: Match tags case-insensitively.

    Returns:
        m entries: the body of tag i, or None where tag i is absent or unclosed.
    """
    out: list[str | None] = []
    for i in range(1, m + 1):
        block = first_block(text, f"{tag}_{i}", ignore_case=ignore_case, loose=True)
        out.append(None if block is None else block.body)
    return out


def dedupe_reward_rows(rewards: ArrayLike, keys: Sequence[Hashable | None] | None = None) -> NDArray[np.float64]:
    """Zero out duplicate candidates and move the zero rows to the end (de-duplicate, zero-pad).

    Args:
        rewards: Reward matrix of one completion, shape (k, d).
        keys: One key per row; a row whose key equals an earlier row's is a duplicate, and a None key
            marks a row to drop (an empty answer). Without keys, rows with identical reward vectors
            are duplicates.

    Returns:
        A new matrix, shape (k, d): the kept rows in their original order, then zero rows.

    Raises:
        ValueError: If `rewards` is not 2-D or `keys` has the wrong length.
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 2:
        raise ValueError(f"rewards must have shape (k, d), got {r.shape}.")
    if keys is not None and len(keys) != r.shape[0]:
        raise ValueError(f"keys must have one entry per row ({r.shape[0]}), got {len(keys)}.")
    seen: set[Hashable] = set()
    kept: list[int] = []
    for i in range(r.shape[0]):
        key = r[i].tobytes() if keys is None else keys[i]
        if key is None or key in seen:
            continue
        seen.add(key)
        kept.append(i)
    out = np.zeros_like(r)
    out[: len(kept)] = r[kept]
    return out


def text_candidates(
    completion: str, mode: str, m: int, *, tag: str = "response", ignore_case: bool = True
) -> list[Candidate[str]]:
    """Candidates whose answer is the raw text of each answer (for envs that score the text itself).

    Args:
        completion: The completion.
        mode: ``"single"`` (the whole completion is one answer) or ``"multi"`` (the bodies of
            ``<tag_1>…</tag_m>``).
        m: Number of answers.
        tag: Tag stem of the numbered answers.
        ignore_case: Match tags case-insensitively.

    Returns:
        m `vpo_core.Candidate` objects; a missing or blank answer has ``answer=None``.
    """
    bodies = [completion] if mode == "single" else extract_numbered(completion, tag, m, ignore_case=ignore_case)
    return [
        Candidate(
            index=i,
            text=body or "",
            answer=body if body and body.strip() else None,
            error=None if body and body.strip() else "missing",
        )
        for i, body in enumerate(bodies)
    ]
