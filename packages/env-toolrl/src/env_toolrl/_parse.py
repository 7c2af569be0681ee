"""Reading a ToolRL completion.

The first ``<think>``, ``<tool_call>`` and ``<response>`` blocks (case-sensitive), and the JSON
calls inside ``<tool_call>`` (one object per line, comma separated, or a JSON array).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ParsedReply", "ToolCall", "parse_reply", "parse_tool_calls"]

_THINK = re.compile(r"<think>(.*?)</think>", re.DOTALL)
_TOOL_CALL = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_RESPONSE = re.compile(r"<response>(.*?)</response>", re.DOTALL)


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


def _objects(text: str) -> list[Any]:
    """JSON objects separated by whitespace or commas; stops at the first thing that is not one."""
    decoder = json.JSONDecoder()
    out, i, n = [], 0, len(text)
    while i < n:
        while i < n and text[i] in " \t\r\n,":
            i += 1
        if i >= n or text[i] != "{":
            break
        try:
            obj, i = decoder.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            break
        out.append(obj)
    return out


def parse_tool_calls(body: str) -> tuple[ToolCall, ...]:
    """The calls in a ``<tool_call>`` body; malformed JSON ends the list (never raises)."""
    text = body.strip()
    if not text:
        return ()
    if text.startswith("["):
        try:
            loaded = json.loads(text)
        except (json.JSONDecodeError, RecursionError):
            loaded = []
        objects = loaded if isinstance(loaded, list) else []
    else:
        objects = _objects(text)
    calls = []
    for obj in objects:
        if not isinstance(obj, dict):
            continue
        params = obj.get("parameters", obj.get("arguments", {}))
        calls.append(ToolCall(name=str(obj.get("name", "")), parameters=params if isinstance(params, dict) else {}))
    return tuple(calls)


def parse_reply(text: str) -> ParsedReply:
    """Parse one reply (a single-mode completion, or the body of one ``<response_i>``)."""
    think = _THINK.search(text)
    tool_call = _TOOL_CALL.search(text)
    response = _RESPONSE.search(text)
    body = tool_call.group(1).strip() if tool_call else ""
    return ParsedReply(
        has_think=think is not None,
        has_tool_call=tool_call is not None,
        tool_call_body=body,
        calls=parse_tool_calls(body),
        response=response.group(1).strip() if response else None,
    )
