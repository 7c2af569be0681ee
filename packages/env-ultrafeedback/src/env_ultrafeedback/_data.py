"""UltraFeedback prompts (``openbmb/UltraFeedback`` on the Hub) and the env's deterministic splits.

The Hub dataset has one split, ``train`` (63,967 rows). Each row: ``source`` (the prompt's origin,
e.g. ``evol_instruct``), ``instruction`` (the user prompt), ``models`` (4 model names),
``completions`` (4 objects with ``response``, ``overall_score``, ``annotations``, ...),
``correct_answers`` and ``incorrect_answers``. The env uses the instruction as the prompt and keeps
the best-rated completion as a warm-start demonstration.

Splits (a choice: the authors' public code has no UltraFeedback task, see the README): unique
non-empty instructions ordered by the SHA-256 of their text; ``test`` = the first `test_size` (200,
the paper's pool of 200 prompts), ``train`` = the rest (capped at `train_size`). The order does not
depend on the Hub's row order, and an instruction that occurs twice lands in one split only.
"""

from __future__ import annotations

import hashlib
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.data import (
    DataError,
    check_type,
    hf_download_command,
    load_hub_split,
    read_jsonl,
    read_parquet,
    report_filtered,
)

__all__ = ["HUB_ID", "Prompt", "load_rows", "make_splits", "parse_rows"]

HUB_ID = "openbmb/UltraFeedback"
HUB_SPLIT = "train"
ROW_FORMAT = (
    "an UltraFeedback object {source: str, instruction: str, models: [str], completions: [{model, response: str, "
    "overall_score: number, annotations, ...}], correct_answers, incorrect_answers}"
)
_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Prompt:
    """One task: an UltraFeedback instruction.

    Attributes:
        key: First 16 hex digits of the SHA-256 of the instruction (stable id).
        instruction: The user prompt.
        source: Where UltraFeedback took it from (``evol_instruct``, ``sharegpt``, ...).
        ranked_responses: The row's distinct non-empty completions, highest ``overall_score`` first
            (warm-start demonstrations).
    """

    key: str
    instruction: str
    source: str
    ranked_responses: tuple[str, ...]


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _row_error(where: str, number: int, field: str) -> Callable[[str], DataError]:
    def error(problem: str) -> DataError:
        return DataError(f"{where}: row {number}: {field}{problem}; expected {ROW_FORMAT}.")

    return error


def parse_rows(rows: list[dict[str, Any]], where: str) -> list[Prompt]:
    """Prompts of upstream rows, one per unique non-empty instruction (first occurrence wins).

    Raises:
        DataError: On a row that is not in the upstream format (names the row and field).
    """
    prompts: dict[str, Prompt] = {}
    dropped = {"empty instruction": 0, "duplicate instruction": 0}
    for number, row in enumerate(rows, start=1):
        error = _row_error(where, number, "")
        check_type(row, dict, error)
        instruction = check_type(row.get("instruction"), str, _row_error(where, number, "instruction: "))
        source = check_type(row.get("source"), str, _row_error(where, number, "source: "))
        completions = check_type(row.get("completions"), list, _row_error(where, number, "completions: "))
        scored: list[tuple[float, int, str]] = []
        for j, c in enumerate(completions):
            check_type(c, dict, _row_error(where, number, f"completions[{j}]: "))
            response = check_type(c.get("response"), str, _row_error(where, number, f"completions[{j}].response: "))
            score = c.get("overall_score")
            if isinstance(score, (int, float)) and not isinstance(score, bool) and response.strip():
                scored.append((-float(score), j, response))
        ranked = tuple(dict.fromkeys(r for _, _, r in sorted(scored)))
        if not instruction.strip():
            dropped["empty instruction"] += 1
            continue
        digest = _key(instruction)
        if digest in prompts:
            dropped["duplicate instruction"] += 1
            continue
        prompts[digest] = Prompt(key=digest[:16], instruction=instruction, source=source, ranked_responses=ranked)
    report_filtered(_log, where, len(rows), dropped)
    return [prompts[k] for k in sorted(prompts)]


def load_rows(data_dir: str | os.PathLike[str] | None, revision: str = "main") -> tuple[list[dict[str, Any]], str]:
    """Upstream rows: every ``*.jsonl`` and ``*.parquet`` file under `data_dir` (sorted by path), else the Hub split.

    Returns:
        The rows and where they came from (for error messages).

    Raises:
        FileNotFoundError: If `data_dir` holds no such file, or the Hub is unreachable without a
            cached copy (the message says what to download).
    """
    if data_dir is not None:
        files = sorted(p for p in Path(data_dir).rglob("*") if p.suffix in (".jsonl", ".parquet"))
        if not files:
            raise FileNotFoundError(
                f"{data_dir} holds no *.jsonl or *.parquet file of UltraFeedback rows ({ROW_FORMAT}); "
                f"e.g. `{hf_download_command(HUB_ID, revision, str(data_dir))}`."
            )
        rows: list[dict[str, Any]] = []
        for f in files:
            read = read_jsonl if f.suffix == ".jsonl" else read_parquet
            rows += read(f, expected=ROW_FORMAT)
        return rows, str(data_dir)

    def how_to_get(reason: str) -> str:
        return (
            f"{HUB_ID} could not be loaded ({reason}). Let `datasets` download it (needs network), or download "
            f"it once with `{hf_download_command(HUB_ID, revision, 'ultrafeedback')}` and pass "
            "env.data_dir=ultrafeedback."
        )

    return load_hub_split(HUB_ID, split=HUB_SPLIT, revision=revision, how_to_get=how_to_get), f"{HUB_ID}:{HUB_SPLIT}"


def make_splits(prompts: list[Prompt], test_size: int, train_size: int | None) -> dict[str, list[Prompt]]:
    """``{"train": ..., "test": ...}`` from prompts in hash order.

    Raises:
        ValueError: If `test_size` leaves no train prompt, or a size is not positive.
    """
    if test_size < 1 or (train_size is not None and train_size < 1):
        raise ValueError(f"test_size and train_size must be >= 1, got {test_size} and {train_size}.")
    if test_size >= len(prompts):
        raise ValueError(
            f"test_size={test_size} leaves no train prompt out of {len(prompts)}; pass a smaller test_size."
        )
    train = prompts[test_size:]
    return {"test": prompts[:test_size], "train": train if train_size is None else train[:train_size]}
