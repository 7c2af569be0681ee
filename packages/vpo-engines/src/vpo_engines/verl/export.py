"""Export an env split as veRL parquet rows (``RLHFDataset`` input) for a method's prompt mode."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from vpo_core.methods import get_method
from vpo_core.registry import env_tasks, make_env

__all__ = ["OverlongReport", "count_overlong", "export_split", "load_tokenizer", "rows_for"]


def rows_for(
    env_id: str,
    split: str,
    method: str,
    *,
    m: int | None = None,
    seed: int = 0,
    env_config: dict[str, Any] | None = None,
    limit: int | None = None,
) -> list[dict[str, Any]]:
    """VeRL rows of one split.

    Each row: ``prompt`` (chat messages in the method's mode, with the goal-conditioning suffix for
    ``goal_cond``), ``data_source`` (the env id), ``ability``, ``reward_model`` (``style``,
    ``ground_truth`` as a JSON string: the task id) and ``extra_info`` (env id and config, split,
    index, mode, m, method, goal weights) — everything the ``vpo`` reward manager needs to rebuild the
    task in any worker.

    Args:
        env_id: The env.
        split: The split.
        method: A method of `vpo_core.METHODS`.
        m: Answers per completion (default: the method's).
        seed: Seed of the goal-conditioned weights.
        env_config: Keyword configuration of the env (e.g. ``{"data_dir": ...}``).
        limit: Keep the first `limit` tasks.
    """
    spec = get_method(method)
    m = spec.resolve_m(m)
    config = env_config or {}
    env = make_env(env_id, config)
    tasks = env_tasks(env, split)[:limit] if limit else env_tasks(env, split)
    rows = []
    for task in tasks:
        d = env.spec_for(task).dim
        weights = spec.prompt_goal_weights(d, seed=seed, task_id=task.id)
        goal = [] if weights is None else weights.tolist()
        prompt = env.render_prompt(task, mode=spec.mode, m=m, goal_weights=goal or None)
        rows.append(
            {
                "data_source": env_id,
                "prompt": [{"role": msg["role"], "content": msg["content"]} for msg in prompt],
                "ability": env_id.split("-")[0],
                "reward_model": {"style": "rule", "ground_truth": json.dumps({"task_id": task.id})},
                "extra_info": {
                    "env_id": env_id,
                    "env_config": json.dumps(config, sort_keys=True),
                    "split": split,
                    "index": task.index,
                    "mode": spec.mode,
                    "m": m,
                    "method": method,
                    "goal_weights": goal,
                },
            }
        )
    return rows


def export_split(path: str | Path, env_id: str, split: str, method: str, **kwargs: Any) -> Path:
    """Write `rows_for(...)` to a parquet file with ``datasets.Dataset.to_parquet``; returns the path."""
    import datasets

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    datasets.Dataset.from_list(rows_for(env_id, split, method, **kwargs)).to_parquet(str(path))
    return path


@dataclass(frozen=True)
class OverlongReport:
    """How many exported prompts veRL drops for being longer than ``data.max_prompt_length``.

    Attributes:
        total: Rows exported.
        dropped: Rows whose chat-formatted prompt has more than `limit` tokens.
        limit: ``data.max_prompt_length``.
        longest: Token count of the longest prompt.
    """

    total: int
    dropped: int
    limit: int
    longest: int

    def describe(self) -> str:
        """One line for the launcher's output."""
        share = 100.0 * self.dropped / self.total if self.total else 0.0
        verdict = "veRL drops them (data.filter_overlong_prompts=true)" if self.dropped else "none is dropped"
        return (
            f"{self.dropped} of {self.total} prompts ({share:.1f}%) exceed max_prompt_length {self.limit} "
            f"(longest {self.longest} tokens); {verdict}."
        )

    def as_dict(self) -> dict[str, int]:
        """JSON-ready fields."""
        return {"total": self.total, "dropped": self.dropped, "limit": self.limit, "longest": self.longest}


def _token_count(encoded: Any) -> int:
    ids = encoded["input_ids"] if isinstance(encoded, Mapping) or hasattr(encoded, "keys") else encoded
    if len(ids) and isinstance(ids[0], list | tuple):  # a batch of one
        ids = ids[0]
    return len(ids)


def count_overlong(
    rows: Sequence[Mapping[str, Any]], tokenizer: Any, max_prompt_length: int, chat_template_kwargs: Mapping[str, Any]
) -> OverlongReport:
    """Count the rows veRL's ``RLHFDataset`` filters out, measured as it measures them.

    veRL tokenises ``apply_chat_template(prompt, add_generation_prompt=True, **apply_chat_template_kwargs)``
    and keeps rows of at most ``max_prompt_length`` tokens.

    Args:
        rows: Exported rows (`rows_for`), each with a ``prompt`` chat list.
        tokenizer: The policy's tokenizer (with its chat template).
        max_prompt_length: ``data.max_prompt_length``.
        chat_template_kwargs: ``data.apply_chat_template_kwargs``.
    """
    lengths = [
        _token_count(
            tokenizer.apply_chat_template(
                list(row["prompt"]), add_generation_prompt=True, tokenize=True, **dict(chat_template_kwargs)
            )
        )
        for row in rows
    ]
    return OverlongReport(
        total=len(lengths),
        dropped=sum(n > max_prompt_length for n in lengths),
        limit=max_prompt_length,
        longest=max(lengths, default=0),
    )


def load_tokenizer(model: str) -> Any | None:
    """The tokenizer of a local model directory or a Hub id (downloaded or cached), or None if unavailable."""
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(model)
    except Exception:  # no network, no cache, or not a model: the launcher says so and goes on
        return None
