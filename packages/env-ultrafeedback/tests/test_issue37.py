"""Issue 37 on UltraFeedback: replies are de-duplicated by their letters and digits, and the
``<think>`` blocks are cut in linear time."""

from __future__ import annotations

import re
import unicodedata

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env_ultrafeedback._env import reply_key, strip_think
from vpo_core.objectives import multi_rlvr_reward

REPLY = "Blue light scatters more strongly off air molecules than red light does."


# ------------------------------------------------------------------------------ de-duplication
@pytest.mark.parametrize(
    "copy",
    [
        REPLY + " 😀",  # an emoji appended (the example)
        REPLY + "😀👍🏽",  # emoji with a skin-tone modifier
        REPLY + " ❤️",  # an emoji with its variation selector (U+FE0F, a combining mark)
        "🔥 " + REPLY,
        REPLY.replace("light", "light 👉", 1),  # an emoji between words
        REPLY.replace("scatters", "scat😀ters"),  # ... and inside a word
        REPLY + "!!!",
        REPLY[:-1] + " ...",
        REPLY.replace(" ", "  \n ", 3),
        REPLY.replace(" ", "", 2),  # spacing is not a letter
        REPLY.replace("Blue", "BLUE"),
        REPLY.replace("molecules", "mo\u200blecules"),  # an invisible format character
        REPLY.replace("red", "r\u0336e\u0336d\u0336"),  # combining strokes (Zalgo-style marks)
        REPLY.replace("Blue", "Ｂｌｕｅ"),  # full-width forms
        REPLY.replace("than", "than ★ → ✓"),  # symbols
        "**" + REPLY + "**",  # Markdown emphasis
    ],
)
def test_copies_of_a_reply_that_differ_only_in_non_letters_are_duplicates(copy):
    assert reply_key(copy) == reply_key(REPLY)


def test_unicode_forms_and_accents_are_not_letters_of_their_own():
    assert reply_key("\u00e9t\u00e9") == reply_key("e\u0301te\u0301") == reply_key("ete") == "ete"  # NFC, NFD
    assert reply_key("\ufb01ne \u2460") == reply_key("fine 1")  # ligature, circled digit (compatibility forms)
    assert reply_key("Straße") == reply_key("STRASSE")  # case folding


def test_replies_that_differ_in_a_letter_or_digit_stay_distinct():
    texts = [
        REPLY,
        REPLY.replace("Blue", "Red"),
        REPLY.replace("more", "less"),
        REPLY + " Also, the sun is low at dusk.",
        "It costs 12 dollars.",
        "It costs 13 dollars.",
        "Ça coûte 12 €.",
        "这是一个回答。",
        "这是另一个回答。",
    ]
    assert len({reply_key(t) for t in texts}) == len(texts)


def _no_letter(ch: str) -> bool:
    """A character that is no letter or digit even in its compatibility form (``⒜`` is ``(a)``)."""
    return not any(unicodedata.category(c)[0] in "LN" for c in unicodedata.normalize("NFKD", ch))


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.characters(categories=["L", "N"]), min_size=1, max_size=30),
    st.lists(
        st.text(alphabet=st.characters(categories=["P", "S", "Z", "Cf", "Me"]).filter(_no_letter), max_size=3),
        min_size=31,
        max_size=31,
    ),
)
def test_inserting_punctuation_symbols_or_spaces_anywhere_never_makes_a_new_reply(words, noise):
    noisy = "".join(n + c for n, c in zip(noise, words, strict=False)) + noise[-1]
    assert reply_key(noisy) == reply_key(words)


def test_an_emoji_copy_earns_no_second_reward_in_training(make_env, tiny_rm):
    env = make_env(tiny_rm)
    task = env.tasks("test")[0]
    other = "Because shorter wavelengths are scattered by the atmosphere in every direction."
    texts = [REPLY, REPLY + " 😀", other]
    body = "".join(f"<response_{i}>{t}</response_{i}>" for i, t in enumerate(texts, start=1))
    scored = env.score_completion(task, body, mode="multi", m=3)
    raw, training = scored.rewards, scored.training_rewards
    assert raw[:2].any(axis=1).all()  # both replies are scored as replies ...
    np.testing.assert_array_equal(training[0], raw[0])
    np.testing.assert_array_equal(training[1], raw[2])  # ... but the copy is dropped, the distinct reply kept
    np.testing.assert_array_equal(training[2], 0.0)
    w = env.reward_spec.w_star
    assert multi_rlvr_reward(training, w) == pytest.approx(raw[0] @ w + raw[2] @ w)


# ------------------------------------------------------------------------------ <think> blocks
_LAZY = re.compile(r"<think>.*?</think>", re.DOTALL)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(["<think>", "</think>", "<think", "think>", "</", "a", " ", "\n", "é"]), max_size=40))
def test_strip_think_is_the_lazy_regex(pieces):
    text = "".join(pieces)
    assert strip_think(text) == _LAZY.sub("", text)


class _CountingStr(str):
    """A str whose `find` counts the characters it scans (up to the end of the match, or to the end)."""

    scanned = 0
    calls = 0

    def find(self, sub, start=0, end=None):  # type: ignore[override]
        found = super().find(sub, start) if end is None else super().find(sub, start, end)
        stop = found + len(sub) if found >= 0 else len(self)
        type(self).scanned += max(0, stop - start)
        type(self).calls += 1
        return found


@pytest.mark.parametrize(
    "unit",
    [
        "<think>",  # unclosed opening tags: the lazy regex's quadratic case
        "<think></think>",
        "<think>x</think>y",
        "</think><think>",
        "<thinkk>a",
    ],
)
@pytest.mark.parametrize("size", [10_000, 1_000_000])
def test_strip_think_reads_each_character_a_bounded_number_of_times(unit, size):
    text = _CountingStr(unit * (size // len(unit)) + "<think>tail")
    _CountingStr.scanned = _CountingStr.calls = 0
    out = strip_think(text)
    blocks = len(text) - len(out)  # characters cut
    assert len(text) // 2 <= _CountingStr.scanned <= 2 * len(text)  # the scans read the text once, never again
    assert _CountingStr.calls <= 2 * (blocks // len("<think></think>") + 1) + 1
    small = unit * (1000 // len(unit)) + "<think>tail"
    assert strip_think(small) == _LAZY.sub("", small)  # and the same answer as the regex


def test_a_megabyte_of_unclosed_think_tags_parses_to_one_reply(make_env):
    env = make_env()
    task = env.tasks("test")[0]
    text = "<think>" * 150_000 + " the reply"  # ≈ 1 MB; the lazy regex took 4.7 s for 112 KB
    [candidate] = env.parse(task, text)
    assert candidate.answer == text.strip()
    [closed] = env.parse(task, "<think>" * 150_000 + "</think> the reply")
    assert closed.answer == "the reply"
