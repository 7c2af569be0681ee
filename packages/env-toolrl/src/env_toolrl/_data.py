"""Loading the rlla_4k parquet files of ``qiancheng0/ToolRL`` through Hugging Face ``datasets``.

ToolRL's data is not a Hub dataset: the upstream files are ``dataset/rlla_4k/train.parquet``
(3,920 rows) and ``dataset/rlla_4k/test.parquet`` (80 rows) of the GitHub repository. Put them in a
folder under those names and pass it as ``data_dir`` (or set ``VPO_TOOLRL_DIR``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["ENV_VAR", "SPLIT_FILES", "load_rows", "resolve_data_dir"]

ENV_VAR = "VPO_TOOLRL_DIR"
SPLIT_FILES = {"train": "train.parquet", "test": "test.parquet"}
UPSTREAM = "https://raw.githubusercontent.com/qiancheng0/ToolRL/main/dataset/rlla_4k"


def _how_to_get(missing: str) -> str:
    return (
        f"ToolRL rlla_4k data not found ({missing}). Either download the upstream files into a folder:\n"
        f"    mkdir -p toolrl && curl -L -o toolrl/train.parquet {UPSTREAM}/train.parquet"
        f" && curl -L -o toolrl/test.parquet {UPSTREAM}/test.parquet\n"
        f"and pass it as data_dir (vpo_core.make('toolrl-v1', data_dir='toolrl')), "
        f"or set the environment variable {ENV_VAR} to that folder."
    )


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The folder to read: `data_dir`, else ``$VPO_TOOLRL_DIR``, else None."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else None


def load_rows(split: str, data_dir: str | os.PathLike[str] | None) -> list[dict[str, Any]]:
    """The rows of one split, in file order, read with ``datasets.load_dataset("parquet", ...)``.

    Raises:
        ValueError: For an unknown split.
        FileNotFoundError: If the split's file is absent, saying how to get it.
    """
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown ToolRL split {split!r}; choose one of {sorted(SPLIT_FILES)}.")
    folder = resolve_data_dir(data_dir)
    if folder is None:
        raise FileNotFoundError(_how_to_get("no data_dir given"))
    path = folder / SPLIT_FILES[split]
    if not path.is_file():
        raise FileNotFoundError(_how_to_get(f"{path} does not exist"))
    import datasets

    dataset = datasets.load_dataset("parquet", data_files={split: str(path)}, split=split)
    required = {"prompt", "reward_model"}
    if not required <= set(dataset.column_names):
        raise ValueError(
            f"{path} is not an rlla_4k file: it lacks the columns {sorted(required - set(dataset.column_names))}."
        )
    return list(dataset)
