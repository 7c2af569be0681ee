"""The MuSiQue reward of the VPO paper: [hop_1, hop_2, hop_3, hop_4, answer_f1].

* The first ``<support>`` and first ``<answer>`` blocks (case-sensitive) are read; support is split
  on commas, pieces stripped, and only pure-digit pieces kept (``[3]`` or ``3 7`` are dropped).
* No answer, or an empty one, scores all zeros.
* Citations are de-duplicated in order and cut to the first 4 distinct indices (out-of-range ones
  count against the cap).
* ``hop_i`` = 1 if the gold paragraph of reasoning step i is cited; steps beyond the question's hop
  count score 1.
* ``answer_f1`` = the best token F1 (SQuAD/MuSiQue normalisation) over the answer and its aliases.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

from vpo_core.multi_answer import first_block
from vpo_core.text import normalize

__all__ = ["answer_f1", "parse_reply", "score_reply"]

MAX_CITATIONS = 4
MAX_INDEX_DIGITS = 18
"""Citations with more significant digits than this are kept as digit strings (far out of range of the
20 paragraphs, so never a hit, but still counted against the cap) instead of being converted with
``int``, which refuses strings beyond 4,300 digits."""


def _citations(support: str) -> tuple[int | str, ...]:
    cited: list[int | str] = []
    for piece in support.split(","):
        piece = piece.strip()
        if not (piece.isdigit() and piece.isascii()):
            continue
        digits = piece.lstrip("0") or "0"
        index: int | str = int(digits) if len(digits) <= MAX_INDEX_DIGITS else digits
        if index not in cited:
            cited.append(index)
            if len(cited) == MAX_CITATIONS:
                break
    return tuple(cited)


def parse_reply(text: str) -> tuple[tuple[int | str, ...], str | None]:
    """Cited paragraph indices (de-duplicated, first 4) and the answer (None when absent).

    Reads the first ``<support>`` and ``<answer>`` blocks in time linear in the text. An index too long
    to be a paragraph number (over `MAX_INDEX_DIGITS` digits) is kept as its digit string.
    """
    support = first_block(text, "support")
    answer = first_block(text, "answer")
    cited = _citations(support.body) if support is not None else ()
    return cited, (answer.body.strip() if answer is not None else None)


@lru_cache(maxsize=65536)
def _gold_tokens(gold: str) -> Counter[str]:
    return Counter(normalize(gold).split())


def answer_f1(prediction: str, golds: tuple[str, ...]) -> float:
    """Best token F1 of `prediction` over the gold answer and aliases (gold tokens cached)."""
    pred = Counter(normalize(prediction).split())
    best = 0.0
    for gold in golds:
        ref = _gold_tokens(gold)
        if not pred or not ref:
            score = float(pred == ref)
        else:
            overlap = sum((pred & ref).values())
            score = 0.0 if overlap == 0 else 2 * overlap / (sum(pred.values()) + sum(ref.values()))
        best = max(best, score)
    return best


def score_reply(text: str, support: tuple[int, ...], golds: tuple[str, ...]) -> NDArray[np.float64]:
    """The reward of one reply.

    Args:
        text: The reply.
        support: Gold paragraph index of each reasoning step, in order (2–4 of them).
        golds: The gold answer followed by its aliases.

    Returns:
        (hop_1, hop_2, hop_3, hop_4, answer_f1), shape (5,).
    """
    cited, answer = parse_reply(text)
    if not answer:
        return np.zeros(5)
    hops = [1.0 if i >= len(support) else float(support[i] in cited) for i in range(4)]
    return np.array([*hops, answer_f1(answer, golds)])
