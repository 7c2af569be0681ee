"""env-maze: the VPO paper's designed-conflict maze as a text environment with vector rewards.

>>> import vpo_core
>>> env = vpo_core.make("maze-v1")
>>> task = env.tasks("test")[0]
>>> env.score(task, env.reference_completion(task)).tolist()
[[1.0, 1.0, 0.0, 1.0]]
"""

from env_maze._env import MAZE_SPEC, MazeEnv
from env_maze._maze import Maze
from env_maze._solver import MazeSolution, solve
from vpo_core.versions import installed_version

__all__ = ["MAZE_SPEC", "Maze", "MazeEnv", "MazeSolution", "solve"]
__version__ = installed_version("env-maze")  # single source: [project] version in pyproject.toml

try:  # gymnasium is optional: register "vpo/Maze-v1" when it is installed
    import gymnasium as _gymnasium
except ImportError:  # pragma: no cover
    pass
else:
    if "vpo/Maze-v1" not in _gymnasium.registry:
        _gymnasium.register(id="vpo/Maze-v1", entry_point="env_maze._gym:make_gym_env")
