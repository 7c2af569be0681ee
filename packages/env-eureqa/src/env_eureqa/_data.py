"""Loading EUREQA (``vincentleebang/EUREQA`` on the Hugging Face Hub) and the paper's mixed split.

The Hub repository holds one parquet file per split, ``data/<split>-00000-of-00001.parquet``, with
the columns ``idx``, ``question`` (a list of sentences), ``entity_masks`` and ``entities``.
The paper's split (seed 0): shuffle ``questions_hard_5``, train = all of ``questions_normal_5`` then
the first half of the shuffled hard rows (428 + 681 = 1,109), test = the other half (682).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["HUB_ID", "load_source_split", "mixed_split"]

HUB_ID = "vincentleebang/EUREQA"
NORMAL, HARD = "questions_normal_5", "questions_hard_5"


def _how_to_get(detail: str) -> str:
    return (
        f"EUREQA data not available ({detail}). Either let `datasets` download it from the Hub "
        f"(`{HUB_ID}`, needs network; `huggingface-cli download {HUB_ID} --repo-type dataset --local-dir eureqa`), "
        "or pass data_dir=<folder> holding the Hub layout data/questions_normal_5-00000-of-00001.parquet and "
        "data/questions_hard_5-00000-of-00001.parquet (vpo_core.make('eureqa-v1', data_dir='eureqa'))."
    )


def load_source_split(name: str, data_dir: str | os.PathLike[str] | None, revision: str) -> list[dict[str, Any]]:
    """Rows of one upstream split (e.g. ``questions_hard_5``) in Hub order.

    Raises:
        FileNotFoundError: If the local file is missing, or the Hub cannot be reached without one.
    """
    import datasets

    if data_dir is not None:
        path = Path(data_dir).expanduser() / "data" / f"{name}-00000-of-00001.parquet"
        if not path.is_file():
            raise FileNotFoundError(_how_to_get(f"{path} does not exist"))
        dataset = datasets.load_dataset("parquet", data_files={name: str(path)}, split=name)
    else:
        try:
            dataset = datasets.load_dataset(HUB_ID, split=name, revision=revision)
        except (ConnectionError, OSError, ValueError) as exc:  # offline, or the Hub unreachable
            raise FileNotFoundError(_how_to_get(f"loading {HUB_ID} failed: {type(exc).__name__}: {exc}")) from exc
    missing = {"idx", "question", "entity_masks", "entities"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"the {name} split lacks the EUREQA columns {sorted(missing)}.")
    return list(dataset)


def mixed_split(
    normal: list[dict[str, Any]], hard: list[dict[str, Any]], *, seed: int = 0
) -> dict[str, list[dict[str, Any]]]:
    """The paper's train/test split.

    ``datasets.Dataset.shuffle(seed=s)`` is ``numpy.random.default_rng(s).permutation(n)``; the first
    ``n // 2`` shuffled hard rows join the normal rows in train, the rest are test.
    """
    order = np.random.default_rng(seed).permutation(len(hard))
    half = len(hard) // 2
    shuffled = [hard[int(i)] for i in order]
    return {"train": list(normal) + shuffled[:half], "test": shuffled[half:]}
