"""Answer normalisation (SQuAD / MuSiQue style) and the F1 measures shared by the text domains."""

from __future__ import annotations

import re
import string
import unicodedata
from collections import Counter
from collections.abc import Iterable
from typing import Any

__all__ = ["multiset_f1", "normalize", "set_f1", "token_f1"]

_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}]")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_SPACES = re.compile(r"\s+")


def normalize(value: Any, *, underscore_to_space: bool = False) -> str:
    """Normalise text for comparison.

    Unicode NFKC first, then the SQuAD/MuSiQue answer normalisation: lowercase, drop ASCII
    punctuation (``_`` included, so ``Get_News`` ≡ ``getnews``) and the articles a/an/the, collapse
    whitespace. With ``underscore_to_space`` underscores become spaces first (Wikipedia-style names:
    ``Robert_Rodriguez`` ≡ ``robert rodriguez``). Non-strings are normalised through ``str``.

    NFKC, not NFC: canonically equivalent spellings (``é`` as one code point or as ``e`` plus a
    combining accent, the NFD a model or a copy-paste may produce) become one, and so do compatibility
    forms that a reader takes for the same text (full-width ``Ｐａｒｉｓ``, the ligature ``ﬁ``,
    full-width punctuation, which then is dropped like its ASCII form). This normalisation is lenient
    by design (it already drops punctuation and articles), so folding compatibility forms fits it;
    the forms NFKC folds (superscripts, circled digits) are not how a different answer is written.
    Normalising first means everything after it sees one spelling of each text.
    """
    text = unicodedata.normalize("NFKC", value if isinstance(value, str) else str(value))
    if underscore_to_space:
        text = text.replace("_", " ")
    text = _PUNCTUATION.sub("", text.lower())
    return _SPACES.sub(" ", _ARTICLES.sub(" ", text)).strip()


def multiset_f1(predicted: Iterable[Any], gold: Iterable[Any]) -> float:
    """F1 of two multisets: 1 if both are empty, 0 if only one is."""
    pred, ref = Counter(predicted), Counter(gold)
    if not pred and not ref:
        return 1.0
    if not pred or not ref:
        return 0.0
    overlap = sum((pred & ref).values())
    if overlap == 0:
        return 0.0
    precision, recall = overlap / sum(pred.values()), overlap / sum(ref.values())
    return 2 * precision * recall / (precision + recall)


def set_f1(predicted: Iterable[Any], gold: Iterable[Any]) -> float:
    """F1 of two sets: 1 if both are empty, 0 if only one is."""
    return multiset_f1(set(predicted), set(gold))


def token_f1(predicted: str, gold: str) -> float:
    """Multiset F1 of the normalised whitespace tokens of two strings."""
    return multiset_f1(normalize(predicted).split(), normalize(gold).split())
