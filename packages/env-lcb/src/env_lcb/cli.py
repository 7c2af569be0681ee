"""``env-lcb`` / ``python -m env_lcb``: render, export and score code tasks (see vpo_core.envcli).

Pass the data with ``env.data_dir=DIR`` (and ``env.source=lcb_lite`` for LiveCodeBench jsonl).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from env_lcb._env import LcbEnv
from vpo_core import envcli
from vpo_core.metrics import pass_at_k

__all__ = ["main"]


def _pass_at_k(env: Any, task: Any, rewards: np.ndarray) -> dict[str, float]:
    solved = env.is_success(rewards, task).reshape(-1)
    n, c = solved.size, int(solved.sum())
    out = {"pass_rate": float(rewards.mean())}
    for k in (1, 5, 10):
        if k <= n:
            out[f"pass@{k}"] = float(pass_at_k(n, c, k))
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``env-lcb`` command."""
    return envcli.main(LcbEnv, argv, prog="env-lcb", extra=_pass_at_k)
