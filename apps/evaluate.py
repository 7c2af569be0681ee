"""Evaluate checkpoints on an env's test split and write the paper's table, the pools and a best@k plot.

    uv run apps/evaluate.py env=maze-v1 checkpoints=runs/maze-v1-grpo-seed0,runs/maze-v1-vpo-seed0
    uv run apps/evaluate.py env=musique-v1 checkpoints=path/to/hf_model method=vpo env.data_dir=/data/musique
    uv run apps/evaluate.py env=lcb-v1 endpoint=http://127.0.0.1:8000/v1 method=vpo name=lcb-vpo

The evaluation is `vpo_core.adapters.local.evaluate` (also ``python -m vpo_core.adapters.local.evaluate``);
``--help`` lists every option with its default and meaning. It writes table.md, results.json, the pools
(pool_<row>.npy with their metadata, read by `vpo_core.evaluation.load_pool`) and best_at_k.png to out=.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    from vpo_core.adapters.local.evaluate import main as evaluate

    return evaluate(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    raise SystemExit(main())
