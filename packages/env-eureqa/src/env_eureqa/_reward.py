"""The EUREQA reward: one exact-match indicator per masked entity A–E.

The first ``<entity_X>…</entity_X>`` per letter (any case) is compared with the gold entity after
Wikipedia-style normalisation (Unicode NFKC, ``_`` → space, lowercase, articles and punctuation
dropped, whitespace collapsed); an empty prediction or gold scores 0, and a reply with all five tags empty scores zeros.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from vpo_core.multi_answer import first_block
from vpo_core.text import normalize

__all__ = ["LETTERS", "parse_entities", "score_entities"]

LETTERS = ("A", "B", "C", "D", "E")


def parse_entities(text: str) -> tuple[str, ...]:
    """The stripped body of the first ``<entity_X>…</entity_X>`` for X = A..E ("" where absent).

    Tags match in any case; the scan is linear in the text whatever it holds.
    """
    found = []
    for letter in LETTERS:
        block = first_block(text, f"entity_{letter}", ignore_case=True)
        found.append(block.body.strip() if block is not None else "")
    return tuple(found)


def score_entities(predicted: tuple[str, ...], gold: tuple[str, ...]) -> NDArray[np.float64]:
    """Exact match per entity after Wikipedia-style normalisation; all-empty predictions score zeros."""
    if not any(predicted):
        return np.zeros(5)
    out = np.zeros(5)
    for i, (p, g) in enumerate(zip(predicted, gold, strict=True)):
        p_norm, g_norm = normalize(p, underscore_to_space=True), normalize(g, underscore_to_space=True)
        out[i] = float(bool(p_norm) and bool(g_norm) and p_norm == g_norm)
    return out
