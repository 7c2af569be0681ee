"""``env-maze`` / ``python -m env_maze``: render, export and score maze tasks (see vpo_core.envcli)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from env_maze._env import MazeEnv
from vpo_core import envcli

__all__ = ["main"]


def _fraction_of_optimum(env: Any, task: Any, rewards: np.ndarray) -> dict[str, float]:
    best = float(env.reward_spec.scalarize(rewards).max())
    return {"fraction_of_optimum": best / env.optimum(task)}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``env-maze`` command."""
    return envcli.main(MazeEnv, argv, prog="env-maze", extra=_fraction_of_optimum)
