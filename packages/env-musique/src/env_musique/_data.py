"""Loading MuSiQue-Ans (``dgslibisey/MuSiQue`` on the Hub) and the paper's hop-stratified test split.

The Hub repository holds the upstream files ``musique_ans_v1.0_train.jsonl`` (19,938 rows, split
``train``) and ``musique_ans_v1.0_dev.jsonl`` (2,417 rows, split ``validation``). The paper's test
split takes, from validation in Hub order, 100 questions each of 2, 3 and 4 hops (each hop group
shuffled with seed 42), concatenates them and shuffles the 300 with seed 42.

Every row is checked against the upstream format: a defect raises `vpo_core.data.DataError` naming
the file (or Hub split), the row and the field. Local files are read from disk on every load, never
from the ``datasets`` cache.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core.data import RowReader, check_type, hf_download_command, hub_data_source, load_checked_rows

__all__ = ["DEFAULT_REVISION", "FILES", "HUB_ID", "data_source", "load_source_split", "stratified_test"]

HUB_ID = "dgslibisey/MuSiQue"
DEFAULT_REVISION = "main"
"""No commit of ``dgslibisey/MuSiQue`` could be looked up offline; `data_source` records the commit
the cache resolved ``main`` to. Pass ``revision=<commit>`` to pin one."""
FILES = {"train": "musique_ans_v1.0_train.jsonl", "validation": "musique_ans_v1.0_dev.jsonl"}
ROW_FORMAT = (
    "a MuSiQue-Ans object {id, question, answer, answer_aliases: [str], answerable, paragraphs: 20 × {idx: int, "
    "title, paragraph_text, is_supporting}, question_decomposition: [{id, question, answer, "
    "paragraph_support_idx: int}]}"
)


def _how_to_get(detail: str, hub_id: str = HUB_ID, revision: str = DEFAULT_REVISION) -> str:
    return (
        f"MuSiQue data not available ({detail}). Either let `datasets` download it from the Hub (`{hub_id}`, needs "
        f"network), or pass data_dir=<folder> holding {FILES['train']} and {FILES['validation']}, e.g. after "
        f"`{hf_download_command(hub_id, revision, 'musique')}`: vpo_core.make('musique-v1', data_dir='musique')."
    )


def load_source_split(
    name: str, data_dir: str | os.PathLike[str] | None, revision: str, hub_id: str = HUB_ID
) -> list[dict[str, Any]]:
    """Rows of ``train`` or ``validation`` in Hub order, checked against the upstream format.

    Raises:
        FileNotFoundError: If the local file is missing, or the Hub cannot be reached without one.
        DataError: If the file is empty, truncated or a row does not have the upstream format.
    """
    local = None if data_dir is None else Path(data_dir).expanduser() / FILES[name]
    how_to_get = functools.partial(_how_to_get, hub_id=hub_id, revision=revision)
    return load_checked_rows(name, local, hub_id, revision, expected=ROW_FORMAT, how_to_get=how_to_get, check=_checked)


def _checked(row: RowReader) -> dict[str, Any]:
    """The fields the env uses, type-checked (an error names the row and the field)."""
    paragraphs = []
    for j, item in enumerate(row.get("paragraphs", list, "a list of 20 paragraph objects")):
        where = f"paragraphs[{j}]"
        item = check_type(item, dict, row.error_for(where, "an object {idx, title, paragraph_text}"))
        paragraphs.append({key: _sub(row, item, where, key, kind) for key, kind in _PARAGRAPH.items()})
    steps = row.get("question_decomposition", list, "a list of 2–4 reasoning steps")
    if not 1 <= len(steps) <= 4:
        raise row.fail("question_decomposition", f"{len(steps)} steps", "1–4 steps (MuSiQue-Ans has 2, 3 or 4 hops)")
    support = []
    for j, step in enumerate(steps):
        where = f"question_decomposition[{j}]"
        step = check_type(step, dict, row.error_for(where, "an object {paragraph_support_idx, ...}"))
        support.append({"paragraph_support_idx": _sub(row, step, where, "paragraph_support_idx", int)})
    aliases = row.get("answer_aliases", list, "a list of strings", default=[])
    for j, alias in enumerate(aliases):
        check_type(alias, str, row.error_for(f"answer_aliases[{j}]", "a string"))
    return {
        "id": row.get("id", str, "a string such as '2hop__1234_5678'"),
        "question": row.get("question", str, "a string"),
        "answer": row.get("answer", str, "a string"),
        "answer_aliases": aliases,
        "paragraphs": paragraphs,
        "question_decomposition": support,
    }


_PARAGRAPH = {"idx": int, "title": str, "paragraph_text": str}


def _sub(row: RowReader, item: dict[str, Any], where: str, key: str, kind: type) -> Any:
    field = f"{where}.{key}"
    expected = "an integer" if kind is int else "a string"
    if item.get(key) is None:
        raise row.fail(field, "missing", expected)
    return check_type(item[key], kind, lambda p: row.fail(field, p, expected))


def data_source(data_dir: str | None, revision: str, hub_id: str = HUB_ID) -> dict[str, Any]:
    """Where the rows come from, for a run's config: Hub id, revision and resolved commit, local files."""
    files = [] if data_dir is None else [Path(data_dir).expanduser() / name for name in FILES.values()]
    return hub_data_source("musique-v1", hub_id=hub_id, revision=revision, data_dir=data_dir, files=files)


def stratified_test(rows: list[dict[str, Any]], *, per_hop: int = 100, seed: int = 42) -> list[dict[str, Any]]:
    """The paper's test split: `per_hop` questions of each of 2, 3, 4 hops, then one shuffle.

    Raises:
        ValueError: If a hop count has fewer than `per_hop` questions.
    """
    picked: list[dict[str, Any]] = []
    for hops in (2, 3, 4):
        group = [row for row in rows if len(row["question_decomposition"]) == hops]
        if len(group) < per_hop:
            raise ValueError(f"validation has {len(group)} {hops}-hop questions, fewer than per_hop={per_hop}.")
        order = np.random.default_rng(seed).permutation(len(group))
        picked.extend(group[int(i)] for i in order[:per_hop])
    order = np.random.default_rng(seed).permutation(len(picked))
    return [picked[int(i)] for i in order]
