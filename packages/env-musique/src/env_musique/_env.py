"""`MusiqueEnv`: MuSiQue-Ans multi-hop QA with per-hop citation and answer-F1 rewards (``musique-v1``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_musique._data import DEFAULT_REVISION, HUB_ID, data_source, load_source_split, stratified_test
from env_musique._profile import PROFILE
from env_musique._reward import score_reply
from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv
from vpo_core.multi_answer import render_numbered, text_candidates

__all__ = ["MUSIQUE_SPEC", "MusiqueConfig", "MusiqueEnv", "MusiqueTask"]

MUSIQUE_SPEC = RewardSpec(
    names=("hop_1", "hop_2", "hop_3", "hop_4", "answer_f1"),
    w_star=(1 / 7, 1 / 7, 1 / 7, 1 / 7, 3 / 7),
    low=(0.0,) * 5,
    high=(1.0,) * 5,
    descriptions=(
        "Finding evidence for reasoning step 1",
        "Finding evidence for reasoning step 2",
        "Finding evidence for reasoning step 3",
        "Finding evidence for reasoning step 4",
        "Answer word-level accuracy",
    ),
)

_HEADER = """\
Read the paragraphs below and answer the multi-hop question. Identify which paragraphs support your answer.

Paragraphs:
{paragraphs}

Question: {question}

"""
_SINGLE_TAIL = """\
First reason about which paragraphs are relevant, then output your supporting paragraph indices and answer.
<support>comma-separated paragraph indices (e.g., 3, 7, 12)</support>
<answer>your answer</answer>"""
_MULTI_TAIL = (
    "Give {m} different answers in <response_i>...</response_i> tags, each with <support>indices</support> "
    "and <answer>answer</answer>."
)


@dataclass(frozen=True)
class MusiqueTask:
    """One question: its 20 paragraphs ((idx, title, text), file order), the gold support per hop, answers."""

    qid: str
    question: str
    paragraphs: tuple[tuple[int, str, str], ...]
    support: tuple[int, ...]
    answers: tuple[str, ...]


@dataclass(frozen=True)
class MusiqueConfig:
    """The options of musique-v1 (``env.<field>=`` on the command lines).

    Attributes:
        data_dir: Folder with ``musique_ans_v1.0_train.jsonl`` / ``musique_ans_v1.0_dev.jsonl``;
            default: the Hub (``dgslibisey/MuSiQue``). A path is kept as text.
        revision: Hub revision: a branch, tag or (for exact reproducibility) a commit.
        test_per_hop: Questions per hop count in the test split (the paper: 100, so 300 in all).
        seed: Seed of the test stratification (the paper: 42).
        hub_id: Hub dataset id (a mirror or fork with the same files).
    """

    data_dir: str | None = None
    revision: str = DEFAULT_REVISION
    test_per_hop: int = 100
    seed: int = 42
    hub_id: str = HUB_ID

    def __post_init__(self) -> None:
        if not isinstance(self.test_per_hop, int) or self.test_per_hop < 1:
            raise ValueError(f"test_per_hop must be a positive int, got {self.test_per_hop!r}.")
        if self.data_dir is not None:
            object.__setattr__(self, "data_dir", str(self.data_dir))


class MusiqueEnv(TextEnv[MusiqueTask, str]):
    """Answer a 2–4 hop question over 20 paragraphs, citing the supporting ones.

    Reward (hop_1..hop_4, answer_f1) in [0, 1]^5 with w*·r = (Σ hop_i + 3·answer_f1)/7; success = w*
    at its maximum (every gold paragraph cited and an exact answer).

    Options: `MusiqueConfig` (``MusiqueEnv(data_dir=...)`` or ``MusiqueEnv(MusiqueConfig(...))``).
    """

    env_id = "musique-v1"
    reward_spec = MUSIQUE_SPEC
    profile = PROFILE
    config_cls = MusiqueConfig
    config: MusiqueConfig

    def _load_tasks(self, split: str) -> list[Task[MusiqueTask]]:
        """Train = the train split; test = the hop-stratified 300 (``test_per_hop`` × 3) from validation."""
        c = self.config
        if split == "train":
            rows = load_source_split("train", c.data_dir, c.revision, c.hub_id)
        else:
            validation = load_source_split("validation", c.data_dir, c.revision, c.hub_id)
            rows = stratified_test(validation, per_hop=c.test_per_hop, seed=c.seed)
        return [self._task(split, i, row) for i, row in enumerate(rows)]

    def data_source(self) -> dict[str, Any]:
        """Where the data comes from (Hub id, revision, resolved commit, local files and sha256), for a run's config."""
        return data_source(self.config.data_dir, self.config.revision, self.config.hub_id)

    @staticmethod
    def _task(split: str, index: int, row: dict[str, Any]) -> Task[MusiqueTask]:
        payload = MusiqueTask(
            qid=str(row["id"]),
            question=str(row["question"]),
            paragraphs=tuple((int(p["idx"]), str(p["title"]), str(p["paragraph_text"])) for p in row["paragraphs"]),
            support=tuple(int(step["paragraph_support_idx"]) for step in row["question_decomposition"]),
            answers=(str(row["answer"]), *(str(a) for a in (row.get("answer_aliases") or []))),
        )
        return Task(
            id=f"musique-v1/{split}/{index}",
            split=split,
            index=index,
            payload=payload,
            metadata={"qid": payload.qid, "hops": len(payload.support)},
        )

    def _render_prompt(self, task: Task[MusiqueTask], mode: Mode, m: int) -> list[Message]:
        p = task.payload
        paragraphs = "\n".join(f"[{idx}] (Title: {title}) {text}" for idx, title, text in p.paragraphs)
        header = _HEADER.format(paragraphs=paragraphs, question=p.question)
        return [Message(role="user", content=header + (_SINGLE_TAIL if mode == "single" else _MULTI_TAIL.format(m=m)))]

    def _parse(self, task: Task[MusiqueTask], completion: str, mode: Mode, m: int) -> list[Candidate[str]]:
        return text_candidates(completion, mode, m, ignore_case=False)

    def reward(self, task: Task[MusiqueTask], candidate: Candidate[str]) -> NDArray[np.float64]:
        """(hop_1, hop_2, hop_3, hop_4, answer_f1) of one reply, shape (5,)."""
        if candidate.answer is None:
            return np.zeros(5)
        return score_reply(candidate.answer, task.payload.support, task.payload.answers)

    def reference_completion(self, task: Task[MusiqueTask], *, mode: Mode = "single", m: int = 1) -> str | None:
        """The gold support and answer (m copies in multi mode)."""
        p = task.payload
        body = f"<support>{', '.join(str(i) for i in p.support)}</support>\n<answer>{p.answers[0]}</answer>"
        return body if mode == "single" else render_numbered("response", [body] * m)
