"""Reading a ToolRL completion.

The first ``<think>`` block, the first ``<tool_call>`` and ``<response>`` blocks outside it
(case-sensitive), and the JSON calls inside ``<tool_call>`` (one object per line, comma separated, or
a JSON array). `well_formed` is the format check: the reply is exactly the blocks the gold has.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from vpo_core.multi_answer import first_block

__all__ = ["ParsedReply", "ToolCall", "parse_reply", "parse_tool_calls", "well_formed"]

_JSON_ERRORS = (ValueError, RecursionError)
"""What `json` raises on untrusted text: `json.JSONDecodeError` (a ValueError), the plain ValueError of
an integer literal over `MAX_INT_DIGITS` digits, and RecursionError on deeply nested arrays/objects."""

MAX_INT_DIGITS = 4300
"""Longest integer literal a call may hold: Python's default int/str limit, enforced here so the parse
does not depend on whatever limit the importing process set (LiveCodeBench-style graders raise it)."""


def _bounded_int(literal: str) -> int:
    """`int(literal)`, or ValueError for a literal over `MAX_INT_DIGITS` digits (a malformed call)."""
    if len(literal) - literal.startswith("-") > MAX_INT_DIGITS:
        raise ValueError(f"integer literal of more than {MAX_INT_DIGITS} digits")
    return int(literal)


_DECODER = json.JSONDecoder(parse_int=_bounded_int)


@dataclass(frozen=True)
class ToolCall:
    """One call: a tool name and its parameters (``{}`` when absent or not an object)."""

    name: str
    parameters: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ParsedReply:
    """The structure of one reply."""

    has_think: bool
    has_tool_call: bool
    tool_call_body: str
    calls: tuple[ToolCall, ...]
    response: str | None


def _objects(text: str) -> tuple[list[Any], bool]:
    """JSON objects separated by whitespace or commas; stops at the first thing that is not one.

    Returns:
        The objects, and whether they make up the whole text.
    """
    out: list[Any] = []
    i, n = 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n:
            return out, True
        if text[i] != "{":
            return out, False
        try:
            obj, i = _DECODER.raw_decode(text, i)
        except _JSON_ERRORS:
            return out, False
        out.append(obj)
    return out, True


def _json_calls(body: str) -> tuple[list[Any], bool]:
    """The JSON values of a ``<tool_call>`` body, and whether the body is nothing but them."""
    text = body.strip()
    if not text:
        return [], True
    if text.startswith("["):
        try:
            loaded = _DECODER.decode(text)
        except _JSON_ERRORS:
            return [], False
        return (loaded, True) if isinstance(loaded, list) else ([], False)
    return _objects(text)


def _is_call(obj: Any) -> bool:
    """A well-formed call: an object with a string ``name`` and, if present, object ``parameters``."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
        return False
    params = obj.get("parameters", obj.get("arguments", {}))
    return isinstance(params, dict)


def parse_tool_calls(body: str) -> tuple[ToolCall, ...]:
    """The calls in a ``<tool_call>`` body; malformed JSON ends the list (never raises)."""
    objects, _ = _json_calls(body)
    calls = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        params = obj.get("parameters", obj.get("arguments", {}))
        calls.append(ToolCall(name=str(obj.get("name", "")), parameters=params if isinstance(params, dict) else {}))
    return tuple(calls)


def _without_think(text: str) -> tuple[bool, str]:
    """Whether the text has a ``<think>`` block, and the text with its first one cut out.

    A ``<tool_call>`` or ``<response>`` written inside the reasoning is part of the reasoning, not of
    the reply. The cut leaves a newline, so no tag can be formed across it.
    """
    think = first_block(text, "think")
    if think is None:
        return False, text
    start = think.end - len("</think>") - len(think.body) - len("<think>")
    return True, text[:start] + "\n" + text[think.end :]


def parse_reply(text: str) -> ParsedReply:
    """Parse one reply (a single-mode completion, or the body of one ``<response_i>``).

    ``<tool_call>`` and ``<response>`` are read outside the first ``<think>`` block. Never raises,
    and runs in time linear in the text (tags are found by forward scans).
    """
    has_think, rest = _without_think(text)
    tool_call = first_block(rest, "tool_call")
    response = first_block(rest, "response")
    body = tool_call.body.strip() if tool_call is not None else ""
    return ParsedReply(
        has_think=has_think,
        has_tool_call=tool_call is not None,
        tool_call_body=body,
        calls=parse_tool_calls(body),
        response=response.body.strip() if response is not None else None,
    )


_TAGS = ("think", "tool_call", "response")


def well_formed(text: str, *, tool_call: bool, response: bool) -> bool:
    """The format check of ToolRL (upstream ``customize_format_reward_func``), one rule for its four cases.

    After stripping surrounding whitespace the reply must be exactly ``<think>…</think>``, then
    ``<tool_call>…</tool_call>`` if the gold calls tools, then ``<response>…</response>`` if the gold
    responds, in that order, separated by whitespace only; each of the six tags occurs exactly once
    if its block is due and never otherwise (so no block inside another, none repeated, no stray
    tag). A ``<tool_call>`` body must be nothing but one or more well-formed calls (JSON objects with a
    string ``name`` and object ``parameters``; one per line, comma separated, or a JSON array).
    Upstream requires exactly one newline between blocks; any whitespace is accepted here so that a
    chat template's pre-fill (Qwen3 writes an empty think block followed by blank lines) does not decide the format.

    Args:
        text: The reply.
        tool_call: Whether the gold has a ``<tool_call>`` block.
        response: Whether the gold has a ``<response>`` block.

    Returns:
        Whether the reply is well formed. Linear time in the text.
    """
    due = {"think": True, "tool_call": tool_call, "response": response}
    for tag in _TAGS:
        want = 1 if due[tag] else 0
        if text.count(f"<{tag}>") != want or text.count(f"</{tag}>") != want:
            return False
    rest = text.strip()
    for tag in _TAGS:
        if not due[tag]:
            continue
        opening, closing = f"<{tag}>", f"</{tag}>"
        if not rest.startswith(opening):
            return False
        end = rest.find(closing)  # after the opening tag: each tag occurs once
        body, rest = rest[len(opening) : end], rest[end + len(closing) :].lstrip()
        if tag == "tool_call":
            objects, complete = _json_calls(body)
            if not (complete and objects and all(_is_call(obj) for obj in objects)):
                return False
    return not rest
