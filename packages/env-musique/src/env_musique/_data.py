"""Loading MuSiQue-Ans (``dgslibisey/MuSiQue`` on the Hub) and the paper's hop-stratified test split.

The Hub repository holds the upstream files ``musique_ans_v1.0_train.jsonl`` (19,938 rows, split
``train``) and ``musique_ans_v1.0_dev.jsonl`` (2,417 rows, split ``validation``). The paper's test
split takes, from validation in Hub order, 100 questions each of 2, 3 and 4 hops (each hop group
shuffled with seed 42), concatenates them and shuffles the 300 with seed 42.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["FILES", "HUB_ID", "load_source_split", "stratified_test"]

HUB_ID = "dgslibisey/MuSiQue"
FILES = {"train": "musique_ans_v1.0_train.jsonl", "validation": "musique_ans_v1.0_dev.jsonl"}


def _how_to_get(detail: str) -> str:
    return (
        f"MuSiQue data not available ({detail}). Either let `datasets` download it from the Hub (`{HUB_ID}`, needs "
        f"network; `huggingface-cli download {HUB_ID} --repo-type dataset --local-dir musique`), or pass "
        f"data_dir=<folder> holding {FILES['train']} and {FILES['validation']} "
        "(vpo_core.make('musique-v1', data_dir='musique'))."
    )


def load_source_split(name: str, data_dir: str | os.PathLike[str] | None, revision: str) -> list[dict[str, Any]]:
    """Rows of ``train`` or ``validation`` in Hub order.

    Raises:
        FileNotFoundError: If the local file is missing, or the Hub cannot be reached without one.
    """
    import datasets

    if data_dir is not None:
        path = Path(data_dir).expanduser() / FILES[name]
        if not path.is_file():
            raise FileNotFoundError(_how_to_get(f"{path} does not exist"))
        dataset = datasets.load_dataset("json", data_files={name: str(path)}, split=name)
    else:
        try:
            dataset = datasets.load_dataset(HUB_ID, split=name, revision=revision)
        except (ConnectionError, OSError, ValueError) as exc:
            raise FileNotFoundError(_how_to_get(f"loading {HUB_ID} failed: {type(exc).__name__}: {exc}")) from exc
    missing = {"id", "paragraphs", "question", "question_decomposition", "answer"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"the MuSiQue {name} split lacks the columns {sorted(missing)}.")
    return list(dataset)


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
