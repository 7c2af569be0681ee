"""`UltrafeedbackEnv`: the ``ultrafeedback-v1`` text environment (UltraFeedback prompts, ArmoRM-5 reward)."""

from __future__ import annotations

import math
import os
import unicodedata
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_ultrafeedback._data import HUB_ID, Prompt, load_rows, make_splits, parse_rows
from env_ultrafeedback._profile import PROFILE
from env_ultrafeedback._prompts import TAG, multi_prompt, single_prompt
from env_ultrafeedback._reward import make_scorer
from env_ultrafeedback._scorer import ARMORM_ID, DIMENSIONS, RewardScorer
from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv
from vpo_core.env_options import check_fields
from vpo_core.errors import ConfigError
from vpo_core.multi_answer import render_numbered, text_candidates

__all__ = ["SPEC", "UltrafeedbackConfig", "UltrafeedbackEnv"]

SPEC = RewardSpec(
    names=DIMENSIONS,
    w_star=(1.0, 0.0, 0.0, 0.0, 0.0),
    low=(0.0,) * 5,
    high=(1.0,) * 5,
    descriptions=(
        "Overall quality of the reply",
        "Following the instruction",
        "Truthfulness (no fabrication)",
        "Honesty (calibrated confidence)",
        "Helpfulness and informativeness",
    ),
)
"""ArmoRM's five UltraFeedback objectives; w* = the "overall" dimension (paper appendix: "the ArmoRM
'overall' dim for UltraFeedback" is the GRPO scalar)."""


def reply_key(text: str) -> str:
    """The de-duplication key of a reply: its letters and digits, in order, and nothing else.

    The text is put in Unicode NFKD (compatibility forms such as full-width letters, ligatures and
    circled digits become their plain letters and digits, and accents come apart from their letters)
    and case-folded; then only letters and digits (Unicode categories L* and N*) are kept, joined
    without separators. Everything else is dropped: whitespace, punctuation, symbols and emoji
    (categories P*, S*, Z*), combining marks (M*: accents, emoji variation selectors, keycaps) and
    control, format and private-use characters (C*: zero-width spaces and joiners, tags). So two
    replies are the same answer iff they have the same letters and digits in the same order: a copy
    with an emoji, an exclamation mark, a zero-width space, other spacing, other case or accents is a
    duplicate, and so is one that differs only in a symbol (``a + b`` ≡ ``a - b``, the price of
    closing the class). Linear in the text.
    """
    folded = unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    return "".join(ch for ch in folded if unicodedata.category(ch)[0] in "LN")


_OPEN_THINK, _CLOSE_THINK = "<think>", "</think>"


def strip_think(text: str) -> str:
    """The text without its ``<think>…</think>`` blocks, in time linear in the text.

    The result is ``re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)``: from left to right, an
    opening tag and the first closing tag after it are cut with what lies between. It is found with
    forward `str.find` scans that never go back: the scan for an opening tag starts where the last
    block ended, the scan for its closing tag right after it, and when an opening tag has no closing
    tag after it no later one has either, so the scan stops. Each character is read a bounded number
    of times (a test counts them); the lazy regex restarts at every unclosed opening tag and takes
    time quadratic in their number (4.7 s for 112 KB of ``<think>``).

    Args:
        text: A completion (untrusted model output).

    Returns:
        The text with the blocks cut out.
    """
    parts: list[str] = []
    pos = 0
    while (start := text.find(_OPEN_THINK, pos)) >= 0:
        end = text.find(_CLOSE_THINK, start + len(_OPEN_THINK))
        if end < 0:
            break
        parts.append(text[pos:start])
        pos = end + len(_CLOSE_THINK)
    if not parts:
        return text
    parts.append(text[pos:])
    return "".join(parts)


@dataclass(frozen=True)
class UltrafeedbackConfig:
    """The options of ultrafeedback-v1 (``env.<field>=`` on the command lines).

    Attributes:
        data_dir: Folder of upstream rows (``*.jsonl`` or ``*.parquet`` in the Hub's format); default:
            ``openbmb/UltraFeedback`` from the Hub.
        revision: Hub revision of the dataset.
        test_size: Test prompts (the paper's pools: 200).
        train_size: Train prompts (default: all the rest).
        scorer: ``"http"`` (default): the machine's scoring server (``env-ultrafeedback-rm``);
            ``"inprocess"``: load the reward model in this process (explicit opt-in).
        scorer_url: Server URL (default: ``$VPO_RM_URL`` or ``http://127.0.0.1:8765``).
        rm_model: Reward model for ``scorer="inprocess"`` (Hub id or local directory).
        rm_device: Its device (default: CUDA when available).
        rm_dtype: Its dtype (default: bfloat16 on GPU, float32 on CPU).
        rm_batch_size: Sequences per forward pass.
        rm_max_length: Token budget per conversation.
        rm_scale: Affine map of the raw head before the [0, 1] clip (see `env_ultrafeedback._scorer`).
        rm_offset: See `rm_scale`.
    """

    data_dir: str | None = None
    revision: str = "main"
    test_size: int = 200
    train_size: int | None = None
    scorer: str = "http"
    scorer_url: str | None = None
    rm_model: str = ARMORM_ID
    rm_device: str | None = None
    rm_dtype: str | None = None
    rm_batch_size: int = 8
    rm_max_length: int = 4096
    rm_scale: float = 1.0
    rm_offset: float = 0.0

    def __post_init__(self) -> None:
        if self.data_dir is not None and isinstance(self.data_dir, os.PathLike):
            object.__setattr__(self, "data_dir", os.fspath(self.data_dir))
        check_fields(self, env_id="ultrafeedback-v1")  # a boolean is not a size: test_size=True is refused, not 1
        if self.scorer not in ("http", "inprocess"):
            raise ConfigError(
                f"scorer must be 'http' (the machine's scoring server) or 'inprocess', got {self.scorer!r}."
            )
        for name in ("test_size", "train_size", "rm_batch_size", "rm_max_length"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ConfigError(f"{name} must be an int >= 1, got {value!r}.")
        for name in ("rm_scale", "rm_offset"):
            if not math.isfinite(getattr(self, name)):
                raise ConfigError(f"{name} must be a finite number, got {getattr(self, name)!r}.")
        if self.data_dir is not None:
            object.__setattr__(self, "data_dir", str(self.data_dir))


class UltrafeedbackEnv(TextEnv[Prompt, str]):
    """UltraFeedback prompts, free-form replies scored by a reward model on 5 dimensions in [0, 1].

    Options: `UltrafeedbackConfig` (``UltrafeedbackEnv(scorer="inprocess")`` or
    ``UltrafeedbackEnv(UltrafeedbackConfig(...))``).
    """

    env_id = "ultrafeedback-v1"
    reward_spec = SPEC
    profile = PROFILE
    config_cls = UltrafeedbackConfig
    config: UltrafeedbackConfig

    _scorer: RewardScorer | None = None

    # ---------------------------------------------------------------------------------- data
    def _load_tasks(self, split: str) -> dict[str, list[Task[Prompt]]]:
        """The tasks of both splits, in hash order of their instructions (one read; `tasks` caches them)."""
        c = self.config
        rows, where = load_rows(c.data_dir, c.revision)
        splits = make_splits(parse_rows(rows, where), c.test_size, c.train_size)
        return {
            name: [Task(id=f"{self.env_id}/{p.key}", split=name, index=i, payload=p) for i, p in enumerate(prompts)]
            for name, prompts in splits.items()
        }

    def data_source(self) -> dict[str, Any]:
        """The dataset: local folder or Hub id and revision."""
        c = self.config
        return {"data_dir": c.data_dir} if c.data_dir else {"hub_id": HUB_ID, "revision": c.revision}

    # ------------------------------------------------------------------------------- prompts
    def _render_prompt(self, task: Task[Prompt], mode: Mode, m: int) -> list[Message]:
        text = task.payload.instruction
        return [Message(role="user", content=single_prompt(text) if mode == "single" else multi_prompt(text, m))]

    def _parse(self, task: Task[Prompt], completion: str, mode: Mode, m: int) -> list[Candidate[str]]:
        candidates = text_candidates(strip_think(completion), mode, m, tag=TAG)
        return [c if c.answer is None else replace(c, answer=c.answer.strip()) for c in candidates]

    def dedup_key(self, task: Task[Prompt], candidate: Candidate[str]) -> Hashable | None:
        """The normalised reply (`reply_key`); reward-model scores are continuous, so equal vectors would miss copies."""
        return None if candidate.answer is None else reply_key(candidate.answer)

    # -------------------------------------------------------------------------------- reward
    @property
    def scorer(self) -> RewardScorer:
        """The reward model: a client of the scoring server, or the in-process model (created on first use)."""
        if self._scorer is None:
            c = self.config
            if c.scorer == "http":
                self._scorer = make_scorer("http", url=c.scorer_url)
            else:
                self._scorer = make_scorer(
                    "inprocess",
                    model=c.rm_model,
                    device=c.rm_device,
                    dtype=c.rm_dtype,
                    batch_size=c.rm_batch_size,
                    max_length=c.rm_max_length,
                    scale=c.rm_scale,
                    offset=c.rm_offset,
                )
        return self._scorer

    def reward(self, task: Task[Prompt], candidate: Candidate[str]) -> NDArray[np.float64]:
        """The 5 reward-model scores of one reply, shape (5,); zeros for a missing reply."""
        return self.rewards(task, [candidate])[0]

    def rewards(self, task: Task[Prompt], candidates: Sequence[Candidate[str]]) -> NDArray[np.float64]:
        """Scores of several replies to one prompt in one reward-model batch, shape (k, 5)."""
        out = np.zeros((len(candidates), SPEC.dim), dtype=np.float64)
        present = [i for i, c in enumerate(candidates) if c.answer is not None and c.answer.strip()]
        if present:
            scores = self.scorer.score(
                [task.payload.instruction] * len(present), [candidates[i].answer or "" for i in present]
            )
            out[present] = np.clip(np.asarray(scores, dtype=np.float64), 0.0, 1.0)
        return out

    def demonstration(
        self, task: Task[Prompt], *, mode: Mode = "single", m: int = 1, rng: np.random.Generator | None = None
    ) -> str | None:
        """UltraFeedback's best-rated completion (single mode) or its m best-rated ones (multi mode), or None."""
        ranked = task.payload.ranked_responses
        if not ranked:
            return None
        return ranked[0] if mode == "single" else render_numbered(TAG, list(ranked[:m]))
