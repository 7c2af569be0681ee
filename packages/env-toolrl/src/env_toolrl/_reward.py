"""The 4-dimensional ToolRL reward of the VPO paper: format, tool_name, arg_key, arg_value.

* ``format`` is 1 iff the reply has a ``<think>`` block and, when the gold calls tools, a
  ``<tool_call>`` block with at least one parsed call (when the gold calls none, no non-empty
  ``<tool_call>`` body).
* ``tool_name`` is the multiset F1 of normalised tool names.
* Predicted calls are aligned greedily to the gold calls in order: each gold call takes the unused
  prediction maximising 100·[same normalised name] + |shared keys| (first maximum wins); leftovers
  on either side pair with nothing.
* ``arg_key`` is the mean over pairs of the key-set F1 (0 for an unpaired call).
* ``arg_value`` is the mean over pairs of the fraction of gold keys whose value the prediction
  matches (1 when the gold call has no parameters; 0 for an unpaired call).
* A reply and a gold that both call no tool get 1 on the last three dimensions. An empty reply
  scores all zeros (the paper), and so does one without any parseable structure.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_toolrl._parse import ToolCall, parse_reply
from vpo_core.text import multiset_f1, normalize, set_f1, token_f1

__all__ = ["align_calls", "score_reply", "value_match"]


def value_match(predicted: Any, gold: Any) -> float:
    """How well one argument value matches the gold value, in [0, 1].

    Booleans compare by truth value (the string "false" is truthy); numbers numerically (1e-9);
    lists by the multiset F1 of normalised elements (a scalar prediction counts as a one-element
    list); objects by key-set F1; strings by token F1 (a non-string prediction by normalised
    equality, so ``"1"`` and ``1`` match).
    """
    try:
        return _value_match(predicted, gold)
    except RecursionError:  # a prediction nested too deeply to print or compare matches nothing
        return 0.0


def _close(a: float, b: float) -> bool:
    """|a − b| ≤ 1e-9, False where the difference overflows (an int beyond float range is never close)."""
    try:
        return abs(a - b) <= 1e-9
    except OverflowError:
        return False


def _value_match(predicted: Any, gold: Any) -> float:
    if isinstance(gold, bool) or isinstance(predicted, bool):
        return float(bool(gold) == bool(predicted))
    if isinstance(gold, int | float):
        if isinstance(predicted, int | float):
            return float(_close(predicted, gold))
        try:
            return float(_close(float(str(predicted)), float(gold)))
        except (ValueError, OverflowError):
            return float(normalize(predicted) == normalize(gold))
    if isinstance(gold, list):
        items = predicted if isinstance(predicted, list) else [predicted]
        return multiset_f1([normalize(x) for x in items], [normalize(x) for x in gold])
    if isinstance(gold, dict):
        return set_f1(predicted.keys(), gold.keys()) if isinstance(predicted, dict) else 0.0
    if isinstance(gold, str) and isinstance(predicted, str):
        return token_f1(predicted, gold)
    return float(normalize(predicted) == normalize(gold))


def align_calls(
    predicted: Sequence[ToolCall], gold: Sequence[ToolCall]
) -> list[tuple[ToolCall | None, ToolCall | None]]:
    """Greedy (gold, prediction) pairs, then unpaired gold and unpaired predictions."""
    used = [False] * len(predicted)
    pairs: list[tuple[ToolCall | None, ToolCall | None]] = []
    for g in gold:
        g_name, g_keys = normalize(g.name), set(g.parameters)
        best, best_score = -1, -1
        for j, p in enumerate(predicted):
            if used[j]:
                continue
            p_name = normalize(p.name)
            score = (100 if p_name and p_name == g_name else 0) + len(set(p.parameters) & g_keys)
            if score > best_score:
                best, best_score = j, score
        if best >= 0:
            used[best] = True
            pairs.append((g, predicted[best]))
        else:
            pairs.append((g, None))
    pairs.extend((None, p) for j, p in enumerate(predicted) if not used[j])
    return pairs


def score_reply(text: str, gold: Sequence[ToolCall]) -> NDArray[np.float64]:
    """The reward of one reply against the gold calls.

    Args:
        text: The reply (a single completion, or one ``<response_i>`` body).
        gold: The gold calls (empty for a response-only gold).

    Returns:
        (format, tool_name, arg_key, arg_value), shape (4,).
    """
    if not text.strip():
        return np.zeros(4)
    reply = parse_reply(text)
    if not (reply.has_think or reply.has_tool_call or reply.response is not None):
        return np.zeros(4)
    if gold:
        fmt = float(reply.has_think and reply.has_tool_call and len(reply.calls) > 0)
    else:
        fmt = float(reply.has_think and not reply.tool_call_body)
    predicted = reply.calls
    if not predicted and not gold:
        return np.array([fmt, 1.0, 1.0, 1.0])
    name = multiset_f1([normalize(c.name) for c in predicted], [normalize(c.name) for c in gold])
    keys, values = [], []
    for g, p in align_calls(predicted, gold):
        if g is None or p is None:
            keys.append(0.0)
            values.append(0.0)
            continue
        keys.append(set_f1(p.parameters, g.parameters))
        if not g.parameters:
            values.append(1.0)
        else:
            matched = sum(value_match(p.parameters[k], v) for k, v in g.parameters.items() if k in p.parameters)
            values.append(matched / len(g.parameters))
    return np.array([fmt, name, float(np.mean(keys)), float(np.mean(values))])
