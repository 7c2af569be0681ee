"""`EureqaEnv`: EUREQA 5-hop entity chains with a per-entity exact-match reward (``eureqa-v1``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

import numpy as np
from numpy.typing import NDArray

from env_eureqa._data import DEFAULT_REVISION, HARD, HUB_ID, NORMAL, build_splits, data_source, load_source_split
from env_eureqa._profile import PROFILE
from env_eureqa._prompts import multi_prompt, single_prompt
from env_eureqa._reward import LETTERS, parse_entities, score_entities
from vpo_core import Candidate, Message, Mode, RewardSpec, Task, TextEnv
from vpo_core.env_options import check_fields
from vpo_core.multi_answer import extract_numbered, render_numbered

__all__ = ["EUREQA_SPEC", "EureqaConfig", "EureqaEnv", "EureqaTask"]

EUREQA_SPEC = RewardSpec.uniform(
    [f"entity_{letter}" for letter in LETTERS],
    [
        "Resolving the answered entity (Person A)",
        "Resolving masked entity B",
        "Resolving masked entity C",
        "Resolving masked entity D",
        "Resolving masked entity E",
    ],
)


@dataclass(frozen=True)
class EureqaTask:
    """One EUREQA question: the narrative sentences, the first five masks and their gold entities."""

    sentences: tuple[str, ...]
    masks: tuple[str, ...]
    entities: tuple[str, ...]
    source: str
    idx: int


@dataclass(frozen=True)
class EureqaConfig:
    """The options of eureqa-v1 (``env.<field>=`` on the command lines).

    Attributes:
        data_dir: Folder with the Hub layout (``data/<split>-00000-of-00001.parquet``); default: the Hub.
            A path is kept as text.
        revision: Hub revision to load (default ``"main"``; pin a commit for exact reproducibility).
        seed: Seed of the hard-split shuffle (the paper: 0).
        hub_id: Hub dataset id (a mirror or fork with the same files).
    """

    data_dir: str | None = None
    revision: str = DEFAULT_REVISION
    seed: int = 0
    hub_id: str = HUB_ID

    def __post_init__(self) -> None:
        if self.data_dir is not None:
            object.__setattr__(self, "data_dir", str(self.data_dir))
        check_fields(self, env_id="eureqa-v1")  # seed=True is refused, not read as 1


class EureqaEnv(TextEnv[EureqaTask, tuple[str, ...]]):
    """Back-chain through a 5-relation narrative to name the masked entities A–E.

    Reward: one exact-match indicator per entity (Wikipedia-style names, ``_`` ≡ space, case,
    articles and punctuation ignored), w* = the uniform mean. Rows with fewer than six masks are
    skipped (the sixth, F, is the revealed leaf).

    Options: `EureqaConfig` (``EureqaEnv(data_dir=...)`` or ``EureqaEnv(EureqaConfig(...))``).
    """

    env_id = "eureqa-v1"
    reward_spec = EUREQA_SPEC
    profile = PROFILE
    config_cls = EureqaConfig
    config: EureqaConfig

    filtered: Mapping[str, int] = MappingProxyType({})
    """Rows skipped per upstream split (fewer than six masks or entities), known once tasks are loaded."""

    def data_source(self) -> dict[str, Any]:
        """Where the data comes from (Hub id, revision, resolved commit, local files and sha256), for a run's config."""
        return data_source(self.config.data_dir, self.config.revision, self.config.hub_id)

    def _load_tasks(self, split: str) -> dict[str, list[Task[EureqaTask]]]:
        """The paper's mixed split: train 1,109 (all normal_5 + half of hard_5), test 682 (other half).

        Both splits come from one shuffle, so the first call builds both (`tasks` caches them).
        """
        c = self.config
        normal = load_source_split(NORMAL, c.data_dir, c.revision, c.hub_id)
        hard = load_source_split(HARD, c.data_dir, c.revision, c.hub_id)
        rows, self.filtered = build_splits(normal, hard, seed=c.seed)
        return {
            name: [self._task(name, i, source, row) for i, (source, row) in enumerate(items)]
            for name, items in rows.items()
        }

    @staticmethod
    def _task(split: str, index: int, source: str, row: dict[str, Any]) -> Task[EureqaTask]:
        payload = EureqaTask(
            sentences=tuple(str(s) for s in row["question"]),
            masks=tuple(str(m) for m in row["entity_masks"][:5]),
            entities=tuple(str(e) for e in row["entities"][:5]),
            source=source,
            idx=int(row["idx"]),
        )
        return Task(
            id=f"eureqa-v1/{split}/{index}",
            split=split,
            index=index,
            payload=payload,
            metadata={"source": source, "idx": payload.idx},
        )

    def _render_prompt(self, task: Task[EureqaTask], mode: Mode, m: int) -> list[Message]:
        p = task.payload
        text = single_prompt(p.sentences, p.masks) if mode == "single" else multi_prompt(p.sentences, p.masks, m)
        return [Message(role="user", content=text)]

    def _parse(self, task: Task[EureqaTask], completion: str, mode: Mode, m: int) -> list[Candidate[tuple[str, ...]]]:
        bodies: list[str | None] = (
            [completion] if mode == "single" else list(extract_numbered(completion, "response", m))
        )
        out = []
        for i, body in enumerate(bodies):
            entities = parse_entities(body or "")
            ok = any(entities)
            out.append(
                Candidate(
                    index=i, text=body or "", answer=entities if ok else None, error=None if ok else "no entity tags"
                )
            )
        return out

    def reward(self, task: Task[EureqaTask], candidate: Candidate[tuple[str, ...]]) -> NDArray[np.float64]:
        """Exact match of entities A–E, shape (5,)."""
        if candidate.answer is None:
            return np.zeros(5)
        return score_entities(candidate.answer, task.payload.entities)

    def reference_completion(self, task: Task[EureqaTask], *, mode: Mode = "single", m: int = 1) -> str | None:
        """The gold entities in the answer format (m copies in multi mode)."""
        body = "\n".join(
            f"<entity_{letter}>{e}</entity_{letter}>" for letter, e in zip(LETTERS, task.payload.entities, strict=True)
        )
        return body if mode == "single" else render_numbered("response", [body] * m)
