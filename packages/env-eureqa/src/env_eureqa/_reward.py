"""The EUREQA reward: one exact-match indicator per masked entity A–E.

The first ``<entity_X>…</entity_X>`` per letter (any case) is compared with the gold entity after
Wikipedia-style normalisation (``_`` → space, lowercase, articles and punctuation dropped, whitespace
collapsed); an empty prediction or gold scores 0, and a reply with all five tags empty scores zeros.
"""

from __future__ import annotations

import re

import numpy as np
from numpy.typing import NDArray

from vpo_core.text import normalize

__all__ = ["LETTERS", "parse_entities", "score_entities"]

LETTERS = ("A", "B", "C", "D", "E")
_ENTITY = {
    letter: re.compile(rf"<entity_{letter}>(.*?)</entity_{letter}>", re.DOTALL | re.IGNORECASE) for letter in LETTERS
}


def parse_entities(text: str) -> tuple[str, ...]:
    """The stripped body of the first ``<entity_X>…</entity_X>`` for X = A..E ("" where absent)."""
    found = []
    for letter in LETTERS:
        match = _ENTITY[letter].search(text)
        found.append(match.group(1).strip() if match else "")
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
