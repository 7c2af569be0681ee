"""`ToolRLEnv`: ToolRL (rlla_4k) tool calling with the VPO paper's 4-dim reward (``toolrl-v1``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_toolrl._data import DEFAULT_REVISION, data_source, load_rows
from env_toolrl._parse import ToolCall, parse_reply
from env_toolrl._profile import PROFILE
from env_toolrl._reward import score_reply
from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv
from vpo_core.env_options import check_fields
from vpo_core.multi_answer import render_numbered, text_candidates

__all__ = ["TOOLRL_SPEC", "ToolRLConfig", "ToolRLEnv", "ToolTask"]

TOOLRL_SPEC = RewardSpec.uniform(
    ["format", "tool_name", "arg_key", "arg_value"],
    [
        "Producing a well-formed structured response",
        "Calling the right tools",
        "Filling in the right argument keys",
        "Using the right argument values",
    ],
)

MULTI_INSTRUCTION = (
    "\n\n---\nADDITIONAL INSTRUCTION (overrides the single-attempt output format above): Provide {m} different "
    "attempts at the task. Wrap each attempt in numbered outer tags <response_1>...</response_1> through "
    "<response_{m}>...</response_{m}>. Inside each <response_i>, follow the original output format from the "
    "system prompt (your <think>, optional <tool_call>, and inner <response> sections). The {m} attempts should "
    "be genuinely different --- different tool choices, different argument values, or different reasoning --- "
    "not paraphrases. Closing tags are required on every outer attempt."
)


@dataclass(frozen=True)
class ToolTask:
    """One rlla_4k row: the chat messages as stored upstream and the gold reply."""

    messages: tuple[tuple[str, str], ...]
    ground_truth: str
    source_index: int


@lru_cache(maxsize=8192)
def gold_calls(ground_truth: str) -> tuple[ToolCall, ...]:
    """The gold reply's calls, parsed with the same parser as predictions."""
    return parse_reply(ground_truth).calls


@lru_cache(maxsize=8192)
def gold_responds(ground_truth: str) -> bool:
    """Whether the gold reply has a ``<response>`` block (the format check asks for one then)."""
    return parse_reply(ground_truth).response is not None


@dataclass(frozen=True)
class ToolRLConfig:
    """The options of toolrl-v1 (``env.<field>=`` on the command lines).

    Attributes:
        data_dir: Folder holding the upstream ``train.parquet`` / ``test.parquet`` (default:
            ``$VPO_TOOLRL_DIR``). A missing file is an error only when its split is asked for. A path is kept as text.
        revision: Git ref of ``qiancheng0/ToolRL`` the files come from (used in the download
            command and recorded by `ToolRLEnv.data_source`).
    """

    data_dir: str | None = None
    revision: str = DEFAULT_REVISION

    def __post_init__(self) -> None:
        if self.data_dir is not None:
            object.__setattr__(self, "data_dir", str(self.data_dir))
        check_fields(self, env_id="toolrl-v1")  # revision=True is refused, not read as text


class ToolRLEnv(TextEnv[ToolTask, str]):
    """Answer a multi-turn tool-use dialogue with ``<think>``, ``<tool_call>`` and ``<response>``.

    Reward (format, tool_name, arg_key, arg_value) in [0, 1]^4, w* = the uniform mean; success =
    all four at 1.

    Options: `ToolRLConfig` (``ToolRLEnv(data_dir=...)`` or ``ToolRLEnv(ToolRLConfig(...))``).
    """

    env_id = "toolrl-v1"
    reward_spec = TOOLRL_SPEC
    profile = PROFILE
    config_cls = ToolRLConfig
    config: ToolRLConfig

    def data_source(self) -> dict[str, Any]:
        """Where the data comes from (upstream repository and ref, local files and sha256), for a run's config."""
        return data_source(self.config.data_dir, self.config.revision)

    def _load_tasks(self, split: str) -> list[Task[ToolTask]]:
        """The rows of a split (3,920 train / 80 test upstream), in file order."""
        rows = load_rows(split, self.config.data_dir, self.config.revision)
        return [self._task(split, i, row) for i, row in enumerate(rows)]

    @staticmethod
    def _task(split: str, index: int, row: dict[str, Any]) -> Task[ToolTask]:
        messages = tuple((str(msg["role"]), str(msg["content"])) for msg in row["prompt"])
        extra = row.get("extra_info") or {}
        payload = ToolTask(
            messages=messages,
            ground_truth=str(row["reward_model"]["ground_truth"]),
            source_index=int(extra.get("index", index)),
        )
        return Task(id=f"toolrl-v1/{split}/{index}", split=split, index=index, payload=payload)

    def _render_prompt(self, task: Task[ToolTask], mode: Mode, m: int) -> list[Message]:
        messages = [Message(role=role, content=content) for role, content in task.payload.messages]  # type: ignore[typeddict-item]
        if mode == "multi":
            last = max(i for i, msg in enumerate(messages) if msg["role"] == "user")
            messages[last] = Message(role="user", content=messages[last]["content"] + MULTI_INSTRUCTION.format(m=m))
        return messages

    def _parse(self, task: Task[ToolTask], completion: str, mode: Mode, m: int) -> list[Candidate[str]]:
        return text_candidates(completion, mode, m)

    def reward(self, task: Task[ToolTask], candidate: Candidate[str]) -> NDArray[np.float64]:
        """(format, tool_name, arg_key, arg_value) of one reply, shape (4,)."""
        if candidate.answer is None:
            return np.zeros(4)
        gold = task.payload.ground_truth
        return score_reply(candidate.answer, gold_calls(gold), gold_response=gold_responds(gold))

    def rewards(self, task: Task[ToolTask], candidates: Sequence[Candidate[str]]) -> NDArray[np.float64]:
        """Rewards of several replies, shape (k, 4)."""
        return np.stack([self.reward(task, c) for c in candidates]) if candidates else np.zeros((0, 4))

    def reference_completion(self, task: Task[ToolTask], *, mode: Mode = "single", m: int = 1) -> str | None:
        """The gold reply (single), or the gold reply in each of the m ``<response_i>`` tags (multi)."""
        gold = task.payload.ground_truth
        return gold if mode == "single" else render_numbered("response", [gold] * m)
