"""Evaluate checkpoints (or a served model) on an env's split: the paper's table, the pools and comparable results.

    uv run apps/evaluate.py env=maze-v1 checkpoints=runs/maze-v1-grpo-seed0,runs/maze-v1-vpo-seed0
    uv run apps/evaluate.py env=musique-v1 checkpoints=path/to/hf_model method=vpo env.data_dir=/data/musique
    uv run apps/evaluate.py env=lcb-v1 base_url=http://127.0.0.1:8000/v1 method=vpo name=lcb-vpo

The evaluation is `vpo_core.evaluation.cli`, the same command as ``vpo-eval`` (and
``python -m vpo_core.adapters.local evaluate``); ``--help`` lists every option with its default and meaning.
It writes results.json (the schema of docs/evaluation.md), the pools (pool_<row>.npy with their metadata, read
by `vpo_core.evaluation.load_pool`), table.md, best_at_k.png and, with log_samples=true, samples_<row>.jsonl.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from vpo_core.evaluation.cli import main as evaluate

    return evaluate(sys.argv[1:] if argv is None else argv, prog="apps/evaluate.py")


if __name__ == "__main__":
    raise SystemExit(main())
