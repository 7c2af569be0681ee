"""Entry point of the gymnasium id ``vpo/Maze-v1`` (MO-Gymnasium's vector-reward contract: `vpo_core.gym`)."""

from __future__ import annotations

from typing import Any

from env_maze._env import MazeEnv
from vpo_core.gym import TextGymEnv, as_gym

__all__ = ["make_gym_env"]


def make_gym_env(split: str = "train", mode: str = "single", m: int = 1, **config: Any) -> TextGymEnv:
    """``gymnasium.make("vpo/Maze-v1", split=..., mode=..., m=...)`` or ``mo_gymnasium.make(...)``.

    The reward is the 4-vector (completion, gold, diamond, avoid_lava), float32, in ``[0, 1]^4``
    (``env.unwrapped.reward_space``); multi mode gives the best of the m routes per dimension. The paper's
    scalar is MO-Gymnasium's ``LinearReward(env, weight=env.unwrapped.w_star)``.
    """
    return as_gym(MazeEnv(**config), split=split, mode=mode, m=m)  # type: ignore[arg-type]
