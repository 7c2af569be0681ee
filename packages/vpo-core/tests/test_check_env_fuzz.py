"""check_env fuzzes every env with the shapes that broke real parsers, built from the env's own format.

Each broken env below uses its own tag (``<guess_i>``, never hard-coded in vpo_core.testing) and fails
on one shape: huge numbers, unmatched opening tags (quadratic time), deep nesting, NUL bytes.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings

from vpo_core import Candidate, RewardSpec, Task, TextEnv
from vpo_core.multi_answer import extract_numbered, render_numbered
from vpo_core.testing import (
    EnvCheckError,
    adversarial_completions,
    check_completion,
    check_env,
    hostile_completions,
    markers,
)

SPEC = RewardSpec.uniform(["hit"], ["Guessing the number"])


class GuessEnv(TextEnv[int, int]):
    """Guess a number in ``<guess>`` (single) or ``<guess_i>`` (multi) tags; a total, linear parser."""

    env_id = "guess-v0"
    reward_spec = SPEC

    def tasks(self, split):
        offset = 0 if split == "train" else 100
        return [Task(id=f"guess/{split}/{i}", split=split, index=i, payload=offset + i) for i in range(3)]

    def _render_prompt(self, task, mode, m):
        if mode == "single":
            return [{"role": "user", "content": "Guess my number. Answer as <guess>N</guess>."}]
        return [{"role": "user", "content": f"Give {m} guesses, <guess_1>N</guess_1> to <guess_{m}>N</guess_{m}>."}]

    def _bodies(self, completion, mode, m):
        if mode == "single":
            found = extract_numbered(
                completion.replace("<guess>", "<guess_1>").replace("</guess>", "</guess_1>"), "guess", 1
            )
            return found
        return extract_numbered(completion, "guess", m)

    def _number(self, body):
        digits = (body or "").strip()
        if not (digits.isdigit() and digits.isascii() and len(digits) <= 18):
            return None
        return int(digits)

    def _parse(self, task, completion, mode, m):
        return [
            Candidate(index=i, text=body or "", answer=self._number(body))
            for i, body in enumerate(self._bodies(completion, mode, m))
        ]

    def reward(self, task, candidate):
        return np.array([float(candidate.answer == task.payload)])

    def reference_completion(self, task, *, mode="single", m=1):
        if mode == "single":
            return f"<guess>{task.payload}</guess>"
        return render_numbered("guess", [str(task.payload)] * m)


class _IntOfDigits(GuessEnv):
    """``int()`` on any digit string: a 5,000-digit number raises ValueError."""

    def _number(self, body):
        digits = (body or "").strip()
        return int(digits) if digits.isdigit() and digits.isascii() else None


class _JsonOnlyDecodeError(GuessEnv):
    """Catches only JSONDecodeError: a huge integer inside JSON raises a plain ValueError."""

    def _number(self, body):
        try:
            value = json.loads(body or "")
        except json.JSONDecodeError:
            return None
        return value if isinstance(value, int) else None


class _LazyRegex(GuessEnv):
    """The lazy ``<guess_i>(.*?)</guess_i>`` search: quadratic in unmatched opening tags."""

    def _bodies(self, completion, mode, m):
        if mode == "single":
            match = re.search(r"<guess>(.*?)</guess>", completion, re.DOTALL)
            return [match.group(1) if match else None]
        out = []
        for i in range(1, m + 1):
            match = re.search(rf"<guess_{i}>(.*?)</guess_{i}>", completion, re.DOTALL)
            out.append(match.group(1) if match else None)
        return out


class _RecursiveTags(GuessEnv):
    """A recursive-descent reader of nested tags: deep nesting exhausts the stack."""

    def _depth(self, text, pos=0):
        if text.startswith("<guess", pos):
            end = text.find(">", pos)
            return 1 + self._depth(text, end + 1) if end >= 0 else 0
        return 0

    def _number(self, body):
        self._depth(body or "")
        return super()._number(body)


class _NulAssert(GuessEnv):
    """Chokes on NUL bytes (as C-string based tools do)."""

    def _number(self, body):
        if "\x00" in (body or ""):
            raise ValueError("embedded null byte")
        return super()._number(body)


def test_a_linear_total_parser_passes():
    check_env(GuessEnv(), fuzz_chars=100_000)


@pytest.mark.parametrize(
    ("env_cls", "message"),
    [
        (_IntOfDigits, r"parse raised ValueError: Exceeds the limit"),
        (_JsonOnlyDecodeError, r"parse raised ValueError: Exceeds the limit"),
        (_RecursiveTags, r"parse raised RecursionError"),
        (_NulAssert, r"NUL bytes\]: parse raised ValueError: embedded null byte"),
    ],
)
@pytest.mark.parametrize("raised_limits", [False, True], ids=["default-limits", "raised-limits"])
def test_check_env_catches_crashes_on_hostile_shapes(env_cls, message, raised_limits):
    # A checking process that raised Python's limits (as a LiveCodeBench-style grader does) must still
    # find the crashes a fresh interpreter would hit, and get its own limits back afterwards.
    saved = sys.get_int_max_str_digits(), sys.getrecursionlimit()
    if raised_limits:
        sys.set_int_max_str_digits(50_000)
        sys.setrecursionlimit(50_000)
    try:
        before = sys.get_int_max_str_digits(), sys.getrecursionlimit()
        with pytest.raises(EnvCheckError, match=message):
            check_env(env_cls(), fuzz_chars=20_000, max_tasks=1)
        assert (sys.get_int_max_str_digits(), sys.getrecursionlimit()) == before
    finally:
        sys.set_int_max_str_digits(saved[0])
        sys.setrecursionlimit(saved[1])


def test_check_env_bounds_the_work_of_each_input_in_linear_scans():
    # 30,000 characters of unmatched tags take the lazy regex ~5,000 scans of 30,000 characters; the linear
    # parser ~3. The bound is a count of scans measured in the same run, never a number of seconds.
    with pytest.raises(
        EnvCheckError, match=r"unmatched .* took [\d,]+ linear scans of 30,000 characters .* over the bound of 500; "
    ):
        check_env(_LazyRegex(), fuzz_chars=30_000, max_scans=500, max_tasks=1, splits=["train"])
    check_env(GuessEnv(), fuzz_chars=30_000, max_scans=500, max_tasks=1, splits=["train"])


class _Descheduled(GuessEnv):
    """A linear parser whose process loses the CPU for a while on each parse (a loaded machine)."""

    def _bodies(self, completion, mode, m):
        if len(completion) > 1_000:
            time.sleep(0.1)  # wall-clock time passes, no CPU time is spent
        return super()._bodies(completion, mode, m)


def test_check_env_cost_ignores_time_the_process_spends_waiting():
    # The cost is min(wall, CPU): another process holding the cores does not fail a linear parser
    # (it did with wall-clock time: check_env of env-lcb failed at load 16), the lazy regex still fails.
    check_env(_Descheduled(), fuzz_chars=30_000, max_scans=500, max_tasks=1, splits=["train"])


class _FixedCost(GuessEnv):
    """A linear parser whose scoring has a fixed CPU cost per call (a reward model's forward pass, a sandbox)."""

    def reward(self, task, candidate):
        deadline = time.process_time() + 0.002
        while time.process_time() < deadline:  # 2 ms of CPU per candidate, whatever the completion's length
            pass
        return super().reward(task, candidate)


def test_check_env_counts_growth_not_the_envs_fixed_cost_per_call():
    # Each check of a multi-answer parse scores 3 candidates 3 times: ~18 ms of CPU, ~200 scans of 30,000
    # characters here, and as much on the empty completion. The same cost on every input is no sign of a quadratic parser;
    # a timed bound of 0.05 s per input failed it on a machine twice as slow (or twice as loaded).
    check_env(_FixedCost(), fuzz_chars=30_000, max_scans=100, max_tasks=1, splits=["train"])


def test_the_scan_unit_is_measured_here_and_grows_with_the_text():
    from vpo_core.testing import linear_scan_seconds

    short, long = linear_scan_seconds(20_000), linear_scan_seconds(400_000)
    assert 0 < short < long
    with pytest.raises(ValueError, match="max_scans must be a finite number > 0"):
        check_env(GuessEnv(), max_scans=float("nan"))


def test_markers_come_from_the_envs_own_prompt_and_reference():
    env = GuessEnv()
    task = env.tasks("train")[0]
    prompt = env.render_prompt(task, mode="multi", m=2)[0]["content"]
    marks = markers(prompt, env.reference_completion(task, mode="multi", m=2), "```python\nx\n```")
    assert marks == ["</guess_1>", "</guess_2>", "<guess_1>", "<guess_2>", "```", "```python"]
    shapes = dict(adversarial_completions(marks, "<guess_1>7</guess_1>", 1000))
    assert len(shapes["unmatched opening markers"]) >= 1000
    assert "9" * 5000 in shapes["huge number 99999999..."]
    assert shapes["reference with NUL bytes"] == "<guess_1>\x007</guess_1>"


def test_testing_module_holds_no_domain_strings():
    source = (Path(__file__).parents[1] / "src" / "vpo_core" / "testing.py").read_text()
    for domain in ("route", "UP", "answer>", "response_", "python", "support", "entity", "tool_call"):
        assert domain not in source, f"vpo_core/testing.py names the domain string {domain!r}"


def test_check_completion_gives_the_rewards_of_a_total_parser_and_names_a_crash():
    env, nul = GuessEnv(), _NulAssert()
    task = env.tasks("test")[1]
    np.testing.assert_array_equal(
        check_completion(env, task, "<guess_2>101</guess_2>", mode="multi", m=3), [[0], [1], [0]]
    )
    assert check_completion(nul, task, "<guess>101</guess>", mode="single", m=1).tolist() == [[1.0]]
    with pytest.raises(
        EnvCheckError, match=r"check_completion: parse raised ValueError: embedded null byte on task guess/test/1"
    ):
        check_completion(nul, task, "<guess>\x00</guess>", mode="single", m=1)


@settings(max_examples=50, deadline=None)
@given(hostile_completions(["<guess_1>", "</guess_1>", "9" * 5000]))
def test_hostile_completions_join_the_pieces_with_one_answer_in_single_mode(completion):
    text, mode, m = completion
    assert isinstance(text, str)
    assert (mode, m) == ("single", 1) or (mode == "multi" and 1 <= m <= 4)
    check_completion(GuessEnv(), GuessEnv().tasks("train")[0], text, mode=mode, m=m)
