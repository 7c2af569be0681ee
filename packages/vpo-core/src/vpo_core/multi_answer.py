"""The multi-answer protocol: numbered tags in one completion, and training de-duplication."""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from functools import lru_cache

import numpy as np
from numpy.typing import ArrayLike, NDArray

from vpo_core.types import Candidate

__all__ = ["dedupe_reward_rows", "extract_numbered", "numbered_tag_list", "render_numbered", "text_candidates"]


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


@lru_cache(maxsize=256)
def _tag_regex(tag: str, i: int, ignore_case: bool) -> re.Pattern[str]:
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(rf"<{re.escape(tag)}_{i}\s*>(.*?)</{re.escape(tag)}_{i}\s*>", flags)


def extract_numbered(text: str, tag: str, m: int, *, ignore_case: bool = True) -> list[str | None]:
    """The body of the first ``<tag_i>…</tag_i>`` for i = 1..m.

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
        match = _tag_regex(tag, i, ignore_case).search(text)
        out.append(match.group(1) if match else None)
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
