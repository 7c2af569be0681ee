"""Tag scanning is total and linear: the same blocks as the lazy regex, at any size of adversarial input."""

from __future__ import annotations

import re
import time

from hypothesis import given, settings
from hypothesis import strategies as st

from vpo_core.multi_answer import all_blocks, extract_numbered, first_block, text_candidates

# Fragments a hostile or broken completion is made of: the tags themselves, near-misses, case variants.
_FRAGMENTS = st.sampled_from(
    ["<a>", "</a>", "<A>", "</A >", "<a  >", "<a", "</a", "<", ">", "x", "\n", "<b>", "</b>", "\x00", "\ud800", "é"]
)
_TEXTS = st.lists(_FRAGMENTS, max_size=40).map("".join)


def _lazy(tag: str, ignore_case: bool, loose: bool) -> re.Pattern[str]:
    """The pattern the scanner replaces (the reference semantics)."""
    space = r"\s*" if loose else ""
    flags = re.DOTALL | (re.IGNORECASE if ignore_case else 0)
    return re.compile(rf"<{tag}{space}>(.*?)</{tag}{space}>", flags)


@settings(max_examples=400, deadline=None)
@given(_TEXTS, st.booleans(), st.booleans(), st.integers(0, 5))
def test_scanner_matches_the_lazy_regex(text, ignore_case, loose, start):
    start = min(start, len(text))
    pattern = _lazy("a", ignore_case, loose)
    match = pattern.search(text, start)
    block = first_block(text, "a", ignore_case=ignore_case, loose=loose, start=start)
    assert (block is None) == (match is None)
    if match is not None:
        assert block == (match.group(1), match.end())
    assert all_blocks(text, "a", ignore_case=ignore_case, loose=loose) == pattern.findall(text)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(["<r_1>", "</r_1>", "<r_2 >", "</R_2>", "<r_3>", "</r_3>", "y", "<r_1"]), max_size=30))
def test_extract_numbered_matches_the_lazy_regex(parts):
    text = "".join(parts)
    expected = []
    for i in (1, 2, 3):
        match = _lazy(f"r_{i}", True, True).search(text)
        expected.append(match.group(1) if match else None)
    assert extract_numbered(text, "r", 3) == expected


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def test_megabyte_of_unmatched_opening_tags_parses_in_linear_time():
    # The lazy regex restarts at every unmatched opening tag: 192 KB took 18.8 s, so 1 MB would take minutes.
    for text in (
        "<response_1>" * 90_000,  # ~1.1 MB, all unclosed
        "<response_1>" * 90_000 + "</response_2>",
        "<Response_1 " * 90_000,  # opening tags that never close their '>'
        "<response_1>" + "<response_2>" * 90_000 + "</response_1>",
    ):
        assert len(text) >= 1_000_000
        bodies, seconds = _timed(extract_numbered, text, "response", 3)
        assert len(bodies) == 3
        assert seconds < 2.0, f"{seconds:.1f} s for {len(text)} characters"
        candidates, seconds = _timed(text_candidates, text, "multi", 3)
        assert len(candidates) == 3
        assert seconds < 2.0
    assert extract_numbered("<response_1>" + "<response_2>" * 10 + "</response_1>", "response", 2) == [
        "<response_2>" * 10,
        None,
    ]


def test_all_blocks_is_linear_on_alternating_unclosed_tags():
    text = "<answer>x" * 120_000 + "</answer>"
    blocks, seconds = _timed(all_blocks, text, "answer", ignore_case=True)
    assert blocks == ["x" + "<answer>x" * (120_000 - 1)]
    assert seconds < 2.0
