"""Entry point of the gymnasium id ``vpo/Maze-v1``."""

from __future__ import annotations

from typing import Any

from env_maze._env import MazeEnv
from vpo_core.gym import as_gym

__all__ = ["make_gym_env"]


def make_gym_env(split: str = "train", mode: str = "single", m: int = 1, **config: Any) -> Any:
    """``gymnasium.make("vpo/Maze-v1", split=..., mode=..., m=...)``."""
    return as_gym(MazeEnv(**config), split=split, mode=mode, m=m)  # type: ignore[arg-type]
