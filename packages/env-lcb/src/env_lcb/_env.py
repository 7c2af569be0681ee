"""`LcbEnv`: LiveCodeBench-style code generation with one reward dimension per test (``lcb-v1``)."""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_lcb._config import MAX_TESTS, LcbConfig
from env_lcb._data import Problem, data_source, load_problems
from env_lcb._dedup import program_key
from env_lcb._parse import extract_code, parse_programs
from env_lcb._profile import PROFILE
from env_lcb._reward import pass_vectors
from env_lcb._search import LcbSearchMixin
from env_lcb.sandbox import Sandbox
from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv
from vpo_core.multi_answer import render_numbered

__all__ = ["LCB_SPEC", "LcbConfig", "LcbEnv", "extract_code"]

LCB_SPEC = RewardSpec.uniform([f"tc_{i}" for i in range(MAX_TESTS)], [f"Passing test {i}" for i in range(MAX_TESTS)])

SYSTEM = (
    "You are an expert Python programmer. You will be given a question (problem specification) and will generate "
    "a correct Python program that matches the specification and passes all tests."
)
FORMAT_STARTER = (
    "### Format: You will use the following starter code to write the solution to the problem and enclose your "
    "code within delimiters.\n```python\n{starter}\n```\n\n"
)
FORMAT_STDIN = (
    "### Format: Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test "
    "on the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program "
    "runs, it reads the inputs, runs the algorithm and writes output to STDOUT.\n```python\n# YOUR CODE HERE\n```\n\n"
)
ANSWER_SINGLE = "### Answer: (use the provided format with backticks)\n\n"
ANSWER_MULTI = (
    "### Answer: Give {m} different solutions (genuinely different approaches, not paraphrases). Wrap each one in "
    "numbered tags <response_1>...</response_1> through <response_{m}>...</response_{m}>, each holding one "
    "```python code block in the format above.\n\n"
)


class LcbEnv(LcbSearchMixin, TextEnv[Problem, str]):
    """Write a Python program; each test is one reward dimension (1 if it passes in the sandbox).

    d varies per problem (its number of tests, at most `max_tests`): `spec_for(task)` gives the
    task's spec ``tc_0..tc_{d-1}``; the class-level `reward_spec` describes the 32-test maximum.
    w* is the mean (the pass rate); success = every test passes (pass@k).

    Options: `LcbConfig` (``LcbEnv(data_dir=...)`` or ``LcbEnv(LcbConfig(...))``).
    """

    env_id = "lcb-v1"
    reward_spec = LCB_SPEC
    profile = PROFILE
    config_cls = LcbConfig
    config: LcbConfig

    filtered: Mapping[str, Mapping[str, int]] = MappingProxyType({})
    """Rows skipped per split and reason (problems without tests), known once the split is loaded."""
    _sandbox: Sandbox | None = None

    @property
    def sandbox(self) -> Sandbox:
        """The env's sandbox (started on first use)."""
        if self._sandbox is None:
            self._sandbox = Sandbox(workers=self.config.workers)
        return self._sandbox

    def _load_tasks(self, split: str) -> list[Task[Problem]]:
        """The problems of a split (tests capped at `max_tests`)."""
        dropped: dict[str, int] = {}  # filled while the split loads
        self.filtered = {**self.filtered, split: dropped}
        problems = load_problems(
            split,
            source=self.config.source,
            data_dir=self.config.data_dir,
            max_tests=self.config.max_tests,
            revision=self.config.revision,
            hub_id=self.config.hub_id,
            filtered=dropped,
        )
        return [
            Task(id=f"lcb-v1/{split}/{i}", split=split, index=i, payload=p, metadata={"pid": p.pid})
            for i, p in enumerate(problems)
        ]

    def data_source(self) -> dict[str, Any]:
        """Where the problems come from (Hub id, revision, resolved commit, local files and sha256), for a run's config."""
        c = self.config
        return data_source(c.source, c.data_dir, c.revision, c.hub_id)

    def spec_for(self, task: Task[Problem]) -> RewardSpec:
        """``tc_0..tc_{d-1}`` for the task's d tests, w* = the mean."""
        d = len(task.payload.tests)
        return RewardSpec.uniform([f"tc_{i}" for i in range(d)], [f"Passing test {i}" for i in range(d)])

    def _render_prompt(self, task: Task[Problem], mode: Mode, m: int) -> list[Message]:
        p = task.payload
        body = f"### Question:\n{p.question}\n\n"
        body += FORMAT_STARTER.format(starter=p.starter_code) if p.starter_code else FORMAT_STDIN
        body += ANSWER_SINGLE if mode == "single" else ANSWER_MULTI.format(m=m)
        return [Message(role="system", content=SYSTEM), Message(role="user", content=body)]

    def _parse(self, task: Task[Problem], completion: str, mode: Mode, m: int) -> list[Candidate[str]]:
        return parse_programs(completion, mode, m)

    def dedup_key(self, task: Task[Problem], candidate: Candidate[str]) -> Hashable | None:
        """The normalised program; an empty answer is dropped.

        `program_key`: the syntax tree without comments, layout, docstrings, bare constants, ``pass``
        or literal assignments to names nothing else mentions (the functional entry point is kept).
        """
        fn_name = task.payload.fn_name
        return program_key(candidate.answer, keep=(fn_name,) if fn_name else ()) if candidate.answer else None

    def reward(self, task: Task[Problem], candidate: Candidate[str]) -> NDArray[np.float64]:
        """Per-test pass indicators, shape (d,)."""
        return self.rewards(task, [candidate])[0]

    def rewards(self, task: Task[Problem], candidates: Sequence[Candidate[str]]) -> NDArray[np.float64]:
        """Grade the candidates in parallel sandbox workers, shape (k, d); a missing program scores zeros."""
        return pass_vectors(
            self.sandbox,
            task.payload,
            [c.answer for c in candidates],
            time_limit_s=self.config.time_limit_s,
            workers=self.config.workers,
        )

    def reference_completion(self, task: Task[Problem], *, mode: Mode = "single", m: int = 1) -> str | None:
        """A known-correct solution where the data has one (DeepCoder primeintellect/taco), else None."""
        if not task.payload.solution:
            return None
        block = f"```python\n{task.payload.solution}\n```"
        return block if mode == "single" else render_numbered("response", [block] * m)
