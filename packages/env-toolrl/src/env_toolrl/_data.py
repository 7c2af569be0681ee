"""Loading the rlla_4k parquet files of ``qiancheng0/ToolRL`` through Hugging Face ``datasets``.

ToolRL's data is not a Hub dataset: the upstream files are ``dataset/rlla_4k/train.parquet``
(3,920 rows) and ``dataset/rlla_4k/test.parquet`` (80 rows) of the GitHub repository. Put them in a
folder under those names and pass it as ``data_dir`` (or set ``VPO_TOOLRL_DIR``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from vpo_core.data import DataError, RowReader, check_type, file_record, read_parquet

__all__ = ["DEFAULT_REVISION", "ENV_VAR", "SPLIT_FILES", "UPSTREAM", "data_source", "load_rows", "resolve_data_dir"]

ENV_VAR = "VPO_TOOLRL_DIR"
SPLIT_FILES = {"train": "train.parquet", "test": "test.parquet"}
UPSTREAM = "qiancheng0/ToolRL"
DEFAULT_REVISION = "main"
"""Git ref of ``qiancheng0/ToolRL`` in the download command; no commit could be looked up offline."""
ROLES = ("system", "user", "assistant")
ROW_FORMAT = (
    "an rlla_4k row {data_source, prompt: list<struct<content: string, role: string>>, ability, "
    "reward_model: struct<ground_truth: string, style: string>, extra_info: struct<index: int64, ...>}"
)


def _how_to_get(missing: str, revision: str = DEFAULT_REVISION) -> str:
    base = f"https://raw.githubusercontent.com/{UPSTREAM}/{revision}/dataset/rlla_4k"
    return (
        f"ToolRL rlla_4k data not found ({missing}). It is not on the Hugging Face Hub: download the upstream files "
        f"of github.com/{UPSTREAM} (ref {revision!r}) into a folder:\n"
        f"    mkdir -p toolrl && curl -fL -o toolrl/train.parquet {base}/train.parquet"
        f" && curl -fL -o toolrl/test.parquet {base}/test.parquet\n"
        f"and pass it as data_dir (vpo_core.make('toolrl-v1', data_dir='toolrl')), "
        f"or set the environment variable {ENV_VAR} to that folder."
    )


def resolve_data_dir(data_dir: str | os.PathLike[str] | None) -> Path | None:
    """The folder to read: `data_dir`, else ``$VPO_TOOLRL_DIR``, else None."""
    if data_dir is not None:
        return Path(data_dir).expanduser()
    env = os.environ.get(ENV_VAR)
    return Path(env).expanduser() if env else None


def load_rows(
    split: str, data_dir: str | os.PathLike[str] | None, revision: str = DEFAULT_REVISION
) -> list[dict[str, Any]]:
    """The rows of one split, in file order, read from disk now and checked against the upstream schema.

    Raises:
        ValueError: For an unknown split.
        FileNotFoundError: If the split's file is absent, saying how to get it.
        DataError: If the file is empty, truncated, not parquet, has no rows, or a row has a missing or
            mistyped field (the message names file, row and field).
    """
    if split not in SPLIT_FILES:
        raise ValueError(f"unknown ToolRL split {split!r}; choose one of {sorted(SPLIT_FILES)}.")
    folder = resolve_data_dir(data_dir)
    if folder is None:
        raise FileNotFoundError(_how_to_get("no data_dir given", revision))
    path = folder / SPLIT_FILES[split]
    if not path.is_file():
        raise FileNotFoundError(_how_to_get(f"{path} does not exist", revision))
    raw = read_parquet(path, expected=ROW_FORMAT)
    if not raw:
        raise DataError(f"{path} has no rows; expected {ROW_FORMAT} rows.")
    return [_checked(RowReader(row, str(path), i, ROW_FORMAT)) for i, row in enumerate(raw)]


def _checked(row: RowReader) -> dict[str, Any]:
    messages = row.get("prompt", list, "a list of chat messages {role, content}")
    if not messages:
        raise row.fail("prompt", "an empty list", "the system and user messages")
    for j, message in enumerate(messages):
        where = f"prompt[{j}]"
        message = check_type(message, dict, row.error_for(where, "a message {role, content}"))
        role = check_type(message.get("role"), str, row.error_for(f"{where}.role", f"one of {ROLES}"))
        if role not in ROLES:
            raise row.fail(f"{where}.role", f"{role!r}", f"one of {ROLES}")
        check_type(message.get("content"), str, row.error_for(f"{where}.content", "a string"))
    if not any(message["role"] == "user" for message in messages):
        raise row.fail("prompt", "no user message", "a user message with the dialogue")
    reward = row.get("reward_model", dict, "a struct {ground_truth: string, style: string}")
    truth = check_type(
        reward.get("ground_truth"),
        str,
        lambda p: row.fail("reward_model.ground_truth", p, "the gold reply as a string"),
    )
    extra = row.get("extra_info", dict, "a struct {index: int64, ...}", default={})
    index = extra.get("index", row.index)
    check_type(index, int, lambda p: row.fail("extra_info.index", p, "an integer"))
    return {"prompt": messages, "reward_model": {"ground_truth": truth}, "extra_info": {"index": index}}


def data_source(data_dir: str | None, revision: str) -> dict[str, Any]:
    """Where the rows come from, for a run's config: the upstream repository and ref, the local files."""
    folder = resolve_data_dir(data_dir)
    files = [] if folder is None else [file_record(folder / f) for f in SPLIT_FILES.values() if (folder / f).is_file()]
    return {
        "env_id": "toolrl-v1",
        "upstream": f"https://github.com/{UPSTREAM}",
        "revision": revision,
        "data_dir": None if folder is None else str(folder),
        "files": files,
    }
