"""LCB parsing is total and linear: code extraction equals the fence regexes, in linear time."""

from __future__ import annotations

import re
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from env_lcb import LcbEnv, extract_code
from env_lcb._parse import parse_programs

DATA = Path(__file__).parent / "data"
# The regexes extract_code replaces: the reference semantics, quadratic on unclosed fences.
_CLOSED = re.compile(r"```python[^\n]*\n(.*?)```", re.DOTALL)
_OPEN = re.compile(r"```python[^\n]*\n(.*)\Z", re.DOTALL)
_ANY = re.compile(r"```[^\n]*\n(.*?)```", re.DOTALL)


def _reference(text: str) -> str:
    for pattern in (_CLOSED, _OPEN, _ANY):
        match = pattern.search(text)
        if match:
            return match.group(1)
    return text


_PIECES = st.sampled_from(["```", "```python", "`", "python", "\n", "x", " ", "``", "<response_1>", "\x00", "\ud800"])


@settings(max_examples=500, deadline=None)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_extract_code_matches_the_fence_regexes(text):
    assert extract_code(text) == _reference(text)


def test_a_megabyte_of_unclosed_fences_parses_in_linear_time():
    for text in ("```python" * 120_000, "```" * 350_000, "```python\n" + "```x" * 300_000, "<response_1>" * 90_000):
        assert len(text) >= 1_000_000
        start = time.perf_counter()
        extract_code(text)
        assert len(parse_programs(text, "multi", 3)) == 3
        assert len(parse_programs(text, "single", 1)) == 1
        assert time.perf_counter() - start < 2.0


@pytest.mark.sandbox
def test_hostile_programs_score_zeros_without_raising():
    env = LcbEnv(data_dir=DATA / "deepcoder", time_limit_s=2.0)
    task = env.tasks("test")[0]
    hostile = [
        "```python\nprint('\ud800')\n```",  # a lone surrogate cannot be encoded to send to the worker
        "```python\nx = '\x00'\n```",
        "```python\nx = " + "9" * 5000 + "\n```",  # the 4,300-digit limit applies to literals too
        "```python\n" + "(" * 100_000 + "\n```",
        "```python\n" + "-" * 100_000 + "1\n```",  # MemoryError in ast.parse (dedup key)
    ]
    for text in hostile:
        for mode, m in (("single", 1), ("multi", 3)):
            completion = (
                text if mode == "single" else "".join(f"<response_{i}>{text}</response_{i}>" for i in (1, 2, 3))
            )
            candidates = env.parse(task, completion, mode=mode, m=m)
            np.testing.assert_array_equal(
                env.dedupe_rewards(task, candidates, env.rewards(task, candidates)), np.zeros((m, 3))
            )
            for candidate in candidates:
                env.dedup_key(task, candidate)
