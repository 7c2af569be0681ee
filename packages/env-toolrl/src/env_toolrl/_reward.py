"""The 4-dimensional ToolRL reward of the VPO paper: format, tool_name, arg_key, arg_value.

* ``format`` is 1 iff the reply is well formed for the gold's structure (`well_formed`): exactly a
  ``<think>`` block, then the ``<tool_call>`` block (of well-formed calls only) if the gold calls
  tools, then the ``<response>`` block if the gold responds; whitespace between, nothing else.
* Calls are read from the first ``<tool_call>`` block outside the ``<think>`` block.
* ``tool_name`` is the multiset F1 of normalised tool names.
* Predicted calls are aligned greedily to the gold calls in order: each gold call takes the unused
  prediction maximising 100·[same normalised name] + |shared keys| (first maximum wins); leftovers
  on either side pair with nothing.
* ``arg_key`` is the mean over pairs of the key-set F1 (0 for an unpaired call).
* ``arg_value`` is the mean over pairs of the summed `value_match` of the gold keys present in the
  prediction, divided by the number of gold keys (1 when the gold call has no parameters; 0 for an
  unpaired call).
* A reply and a gold that both call no tool get 1 on the last three dimensions. An empty reply
  scores all zeros (the paper), and so does one without any parseable structure.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Hashable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_toolrl._parse import MAX_INT_DIGITS, ToolCall, parse_reply, well_formed
from vpo_core.text import multiset_f1, normalize, set_f1

__all__ = ["align_calls", "score_reply", "value_match", "value_tokens"]

NUMERAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
"""A number written as text: optional minus, ASCII digits, an optional fraction and exponent. Nothing
else reads as a number (no ``+``, ``_``, ``inf``, ``nan``, bare ``.``), so two numerals read as the same
number only if they denote it (``27.0`` ≡ ``27`` ≡ ``2.7e1``, never ``270``)."""


def _numeral(token: str) -> Decimal | None:
    """The exact value of a numeral (`NUMERAL`, whole token), or None (also for an exponent beyond Decimal's range)."""
    if not NUMERAL.fullmatch(token):
        return None
    try:
        return Decimal(token)
    except InvalidOperation:
        return None


def value_tokens(text: str) -> list[Hashable]:
    """The tokens under which two text values are compared: nothing but case and spacing is forgiven.

    The text is put in Unicode NFC (the same characters in another encoding are the same text),
    case-folded and split on whitespace; a token that is a numeral (`NUMERAL`) stands for its exact
    value, any other token for itself, punctuation included. Two values that differ in a digit or a
    punctuation mark therefore never give the same tokens unless they differ only in how one number is
    written, and a value of only whitespace gives no tokens.

    Args:
        text: A text value.

    Returns:
        The tokens, in order: ``("num", Decimal)`` or ``("text", str)`` pairs.
    """
    folded = unicodedata.normalize("NFC", unicodedata.normalize("NFC", text).casefold())
    tokens: list[Hashable] = []
    for token in folded.split():
        number = _numeral(token)
        tokens.append(("num", number) if number is not None else ("text", token))
    return tokens


def value_match(predicted: Any, gold: Any) -> float:
    """How well one argument value matches the gold value, in [0, 1].

    The paper's arg_value is the token-level F1 of the values; it is applied by type, and a value of
    one type never matches a value of another (upstream ToolRL compares with type-sensitive ``==``):

    * text: multiset F1 of the `value_tokens` (case and spacing forgiven, punctuation kept, numerals
      compared by value: ``"27.0"`` ≡ ``"27"`` but not ``"270"``, ``"2021-12"`` not ``"202112"``); a
      gold of only whitespace matches only a value of only whitespace; a number predicted for a text
      gold that is a numeral matches it by value (``"1"`` ≡ ``1``);
    * numbers: equal within 1e-9 (a prediction in text is read as a number);
    * booleans: only a boolean of the same value (``1``, ``"true"``, ``"yes"`` match nothing);
    * ``null``: only ``null``;
    * lists: multiset F1 of the elements, each compared exactly by type (a scalar prediction counts
      as a one-element list);
    * objects: an F1 over keys weighted by the values, ``2·Σ_shared value_match / (|pred| + |gold|)``
      (1 when both are empty), so right keys with wrong values score 0.
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


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def _as_number(x: Any) -> int | float | None:
    """A number, or text that is one numeral (`NUMERAL`, spaces around allowed: ``" 3.50"``); None otherwise."""
    if _is_number(x):
        return x
    if isinstance(x, str) and NUMERAL.fullmatch(text := x.strip()):
        if text.lstrip("-").isdigit() and len(text) <= MAX_INT_DIGITS:
            return int(text)  # exact: "12345678901234567891" is not the float of ...890
        return float(text)  # finite or ±inf (an exponent out of range), never an error
    return None


def _atom(x: Any) -> Hashable:
    """A hashable key under which two values are equal iff they match exactly, by type."""
    if isinstance(x, bool) or x is None:
        return ("const", x)
    number = _as_number(x)
    if number is not None:  # Python compares and hashes ints and floats by exact value: 27 ≡ 27.0, 2**60 + 1 ≢ 2.0**60
        return ("num", number)
    if isinstance(x, str):
        return ("text", tuple(value_tokens(x)))
    if isinstance(x, list | tuple):
        return ("list", tuple(_atom(v) for v in x))
    if isinstance(x, dict):
        return ("dict", tuple(sorted(((str(k), _atom(v)) for k, v in x.items()), key=lambda kv: kv[0])))
    return ("other", tuple(value_tokens(str(x))))


def _value_match(predicted: Any, gold: Any) -> float:
    if isinstance(gold, bool) or isinstance(predicted, bool) or gold is None or predicted is None:
        return float(type(gold) is type(predicted) and gold == predicted)
    if _is_number(gold):
        number = _as_number(predicted)
        return float(number is not None and _close(number, gold))
    if isinstance(gold, list):
        items = predicted if isinstance(predicted, list) else [predicted]
        return multiset_f1([_atom(x) for x in items], [_atom(x) for x in gold])
    if isinstance(gold, dict):
        if not isinstance(predicted, dict):
            return 0.0
        if not predicted and not gold:
            return 1.0
        shared = sum(_value_match(predicted[k], v) for k, v in gold.items() if k in predicted)
        return 2 * shared / (len(predicted) + len(gold))
    if isinstance(gold, str):
        if isinstance(predicted, str):
            return multiset_f1(value_tokens(predicted), value_tokens(gold))
        number = _as_number(gold) if _is_number(predicted) else None
        return float(number is not None and _close(predicted, number))
    return float(_atom(predicted) == _atom(gold))


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


def score_reply(text: str, gold: Sequence[ToolCall], *, gold_response: bool | None = None) -> NDArray[np.float64]:
    """The reward of one reply against the gold calls.

    Args:
        text: The reply (a single completion, or one ``<response_i>`` body).
        gold: The gold calls (empty for a response-only gold).
        gold_response: Whether the gold has a ``<response>`` block (default: iff it calls no tool, as
            in every rlla_4k row).

    Returns:
        (format, tool_name, arg_key, arg_value), shape (4,).
    """
    if not text.strip():
        return np.zeros(4)
    reply = parse_reply(text)
    if not (reply.has_think or reply.has_tool_call or reply.response is not None):
        return np.zeros(4)
    fmt = float(well_formed(text, tool_call=bool(gold), response=not gold if gold_response is None else gold_response))
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
