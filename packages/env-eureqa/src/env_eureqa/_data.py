"""Loading EUREQA (``vincentleebang/EUREQA`` on the Hugging Face Hub) and the paper's mixed split.

The Hub repository holds one parquet file per split, ``data/<split>-00000-of-00001.parquet``, with
the columns ``idx``, ``question`` (a list of sentences), ``entity_masks`` and ``entities``. Rows are
checked field by field (`vpo_core.data.DataError` names file, row and field); local files are read
from disk on every load, never from the ``datasets`` cache.
The paper's split (seed 0): shuffle ``questions_hard_5``, train = all of ``questions_normal_5`` then
the first half of the shuffled hard rows (428 + 681 = 1,109), test = the other half (682).
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from vpo_core.data import (
    DataError,
    RowReader,
    check_type,
    hf_download_command,
    hub_data_source,
    load_checked_rows,
    report_filtered,
)

__all__ = ["DEFAULT_REVISION", "HUB_ID", "build_splits", "data_source", "load_source_split", "mixed_split"]

HUB_ID = "vincentleebang/EUREQA"
DEFAULT_REVISION = "main"
"""No commit of ``vincentleebang/EUREQA`` could be looked up offline; `data_source` records the commit
the cache resolved ``main`` to. Pass ``revision=<commit>`` to pin one."""
NORMAL, HARD = "questions_normal_5", "questions_hard_5"
MIN_MASKS = 6
ROW_FORMAT = "a EUREQA row {idx: int64, question: list<string>, entity_masks: list<string>, entities: list<string>}"
_log = logging.getLogger("env_eureqa")
_Row = TypeVar("_Row")  # a row, or a (source, row) pair: mixed_split keeps whatever it is given


def _file(data_dir: str | os.PathLike[str], name: str) -> Path:
    return Path(data_dir).expanduser() / "data" / f"{name}-00000-of-00001.parquet"


def _how_to_get(detail: str, hub_id: str = HUB_ID, revision: str = DEFAULT_REVISION) -> str:
    return (
        f"EUREQA data not available ({detail}). Either let `datasets` download it from the Hub (`{hub_id}`, needs "
        "network), or pass data_dir=<folder> holding the Hub layout data/questions_normal_5-00000-of-00001.parquet "
        f"and data/questions_hard_5-00000-of-00001.parquet, e.g. after `{hf_download_command(hub_id, revision, 'eureqa')}`"
        ": vpo_core.make('eureqa-v1', data_dir='eureqa')."
    )


def load_source_split(
    name: str, data_dir: str | os.PathLike[str] | None, revision: str, hub_id: str = HUB_ID
) -> list[dict[str, Any]]:
    """Rows of one upstream split (e.g. ``questions_hard_5``) in Hub order, checked against the upstream format.

    Raises:
        FileNotFoundError: If the local file is missing, or the Hub cannot be reached without one.
        DataError: If the file is empty, truncated, not parquet, or a row has a missing or mistyped field.
    """
    local = None if data_dir is None else _file(data_dir, name)
    how_to_get = functools.partial(_how_to_get, hub_id=hub_id, revision=revision)
    return load_checked_rows(name, local, hub_id, revision, expected=ROW_FORMAT, how_to_get=how_to_get, check=_checked)


def _checked(row: RowReader) -> dict[str, Any]:
    out: dict[str, Any] = {"idx": row.get("idx", int, "an integer")}
    for field in ("question", "entity_masks", "entities"):
        values = row.get(field, list, "a list of strings")
        for j, value in enumerate(values):
            check_type(value, str, row.error_for(f"{field}[{j}]", "a string"))
        out[field] = values
    return out


def build_splits(
    normal: list[dict[str, Any]], hard: list[dict[str, Any]], *, seed: int
) -> tuple[dict[str, list[tuple[str, dict[str, Any]]]], dict[str, int]]:
    """The paper's split of the usable rows, and how many rows each source lost to the filter.

    A row is usable when it has at least six masks and six entities (the sixth, F, is the revealed
    leaf); others are skipped, counted and logged.

    Returns:
        ``{"train": [(source, row), ...], "test": [...]}`` and ``{source: skipped rows}``.

    Raises:
        DataError: If a split ends up empty.
    """
    kept: dict[str, list[tuple[str, dict[str, Any]]]] = {}
    skipped: dict[str, int] = {}
    for source, rows in ((NORMAL, normal), (HARD, hard)):
        kept[source] = [(source, r) for r in rows if min(len(r["entity_masks"]), len(r["entities"])) >= MIN_MASKS]
        skipped[source] = len(rows) - len(kept[source])
        report_filtered(
            _log, f"EUREQA {source}", len(rows), {f"with fewer than {MIN_MASKS} masks or entities": skipped[source]}
        )
    splits = mixed_split(kept[NORMAL], kept[HARD], seed=seed)
    for split, items in splits.items():
        if not items:
            raise DataError(
                f"the EUREQA {split} split is empty: {NORMAL} has {len(kept[NORMAL])} usable rows "
                f"({skipped[NORMAL]} skipped) and {HARD} {len(kept[HARD])} ({skipped[HARD]} skipped); a usable row "
                f"has at least {MIN_MASKS} entity_masks and entities, and test needs at least 2 usable {HARD} rows."
            )
    return splits, skipped


def data_source(data_dir: str | None, revision: str, hub_id: str = HUB_ID) -> dict[str, Any]:
    """Where the rows come from, for a run's config: Hub id, revision and resolved commit, local files."""
    files = [] if data_dir is None else [_file(data_dir, name) for name in (NORMAL, HARD)]
    return hub_data_source("eureqa-v1", hub_id=hub_id, revision=revision, data_dir=data_dir, files=files)


def mixed_split(normal: Sequence[_Row], hard: Sequence[_Row], *, seed: int = 0) -> dict[str, list[_Row]]:
    """The paper's train/test split.

    ``datasets.Dataset.shuffle(seed=s)`` is ``numpy.random.default_rng(s).permutation(n)``; the first
    ``n // 2`` shuffled hard rows join the normal rows in train, the rest are test.
    """
    order = np.random.default_rng(seed).permutation(len(hard))
    half = len(hard) // 2
    shuffled = [hard[int(i)] for i in order]
    return {"train": list(normal) + shuffled[:half], "test": shuffled[half:]}
