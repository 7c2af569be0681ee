"""Turning model text into move lists: tolerant, total, never raising.

A route is read as the whole words UP, DOWN, LEFT, RIGHT in any case, separated by anything that is
not a letter, digit or underscore (spaces, commas, newlines, ``->``, periods); glued tokens such as
``UPUP`` or ``UP_LEFT`` and abbreviations such as ``U`` are ignored, as in the authors' parser.
"""

from __future__ import annotations

import re

from vpo_core.multi_answer import all_blocks, extract_numbered, first_block

__all__ = ["MOVE_CODE", "extract_answer", "parse_moves", "split_routes"]

MOVE_CODE = {"UP": 0, "DOWN": 1, "LEFT": 2, "RIGHT": 3}
_MOVE_WORD = re.compile(r"\b(UP|DOWN|LEFT|RIGHT)\b")


def parse_moves(text: str) -> tuple[int, ...]:
    """Move codes (0 UP, 1 DOWN, 2 LEFT, 3 RIGHT) of every move word in `text`, in order."""
    return tuple(MOVE_CODE[word] for word in _MOVE_WORD.findall(text.upper()))


def extract_answer(completion: str) -> str:
    """The body of the first ``<answer>…</answer>`` (any case), or the whole completion when there is none."""
    block = first_block(completion, "answer", ignore_case=True)
    return block.body if block is not None else completion


def split_routes(completion: str, m: int) -> list[str]:
    """The m route texts of a multi-route completion.

    ``<route_i>…</route_i>`` tags (any case) take precedence: when any is present, tag i gives route
    i and a missing tag gives an empty route. Without tags, the completion falls back to ``---``
    separated parts (at least two), then to two or more ``<answer>`` blocks, else to one route made
    of the whole text.

    Returns:
        Exactly m strings (empty where a route is missing).
    """
    tagged = extract_numbered(completion, "route", m)
    if any(body is not None for body in tagged):
        return [body or "" for body in tagged]
    parts = [part.strip() for part in completion.split("---") if part.strip()]
    if len(parts) < 2:
        parts = all_blocks(completion, "answer", ignore_case=True)
    if len(parts) < 2:
        parts = [completion]
    return (parts + [""] * m)[:m]
