"""Issue 37: a correct EUREQA answer written in another Unicode form (NFD) scores 1, not 0.

`vpo_core.text.normalize` (shared by EUREQA, MuSiQue and ToolRL's tool names) puts text in NFKC
before anything else.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env_eureqa import EureqaEnv, parse_entities, score_entities
from vpo_core.text import normalize, token_f1

GOLD = ("Zoë_Saldaña", "Gabriel_García_Márquez", "Ångström", "Nicolás_Maduro", "Bogotá")


def _reply(entities: tuple[str, ...]) -> str:
    return "".join(f"<entity_{x}>{e}</entity_{x}>" for x, e in zip("ABCDE", entities, strict=True))


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_a_correct_answer_scores_one_in_every_unicode_form(form):
    answer = tuple(unicodedata.normalize(form, g.replace("_", " ")) for g in GOLD)
    np.testing.assert_array_equal(score_entities(parse_entities(_reply(answer)), GOLD), np.ones(5))
    gold_nfd = tuple(unicodedata.normalize("NFD", g) for g in GOLD)  # and whatever form the gold is in
    np.testing.assert_array_equal(score_entities(parse_entities(_reply(answer)), gold_nfd), np.ones(5))


def test_an_nfd_answer_scores_one_through_the_env():
    env = EureqaEnv(data_dir=Path(__file__).parent / "data")
    task = env.tasks("test")[0]
    reference = env.reference_completion(task)
    np.testing.assert_array_equal(env.score(task, reference), [np.ones(5)])
    gold = tuple(e.replace("e", "\u00e9") for e in parse_entities(reference))  # accented entities ...
    answer = _reply(tuple(unicodedata.normalize("NFD", e) for e in gold))  # ... answered in NFD
    assert answer != _reply(gold)
    np.testing.assert_array_equal(score_entities(parse_entities(answer), gold), np.ones(5))


def test_other_letters_still_differ():
    assert score_entities(parse_entities(_reply(("Zoe Saldana", *GOLD[1:]))), GOLD).tolist() == [0, 1, 1, 1, 1]
    assert normalize("Ångström") != normalize("Angstrom")


def test_compatibility_forms_are_the_same_text():
    assert normalize("Ｐａｒｉｓ！") == normalize("Paris") == "paris"  # full-width letters and punctuation
    assert normalize("ﬁnal") == "final"  # ligature
    assert token_f1("Gabriel Garci\u0301a Ma\u0301rquez", "Gabriel García Márquez") == 1.0


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_normalize_is_the_same_for_every_canonically_equivalent_spelling(text):
    spellings = {unicodedata.normalize(form, text) for form in ("NFC", "NFD")}
    assert len({normalize(s) for s in spellings}) == 1
