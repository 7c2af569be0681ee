"""Task ids key the group-shared weights, so they must be the same in every process."""

from __future__ import annotations

import os
import subprocess
import sys

from env_maze import MazeEnv

GRID = """\
S . . #
. # . .
. . . E"""

_PRINT_IDS = (
    "from env_maze import MazeEnv\n"
    f"print(MazeEnv.task_from_grid({GRID!r}, 9).id)\n"
    f"print(MazeEnv.task_from_grid({GRID!r}, 10).id)\n"
    "print(MazeEnv(train_size=1, test_size=1).tasks('test')[0].id)\n"
)


def _ids_with_hash_seed(seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    out = subprocess.run([sys.executable, "-c", _PRINT_IDS], env=env, capture_output=True, text=True, check=True)
    return out.stdout.split()


def test_custom_task_ids_are_equal_across_interpreters_with_different_hash_seeds():
    first, second = _ids_with_hash_seed("1"), _ids_with_hash_seed("2")
    assert first == second
    assert first[0] != first[1]  # the budget is part of the task
    assert first[0] == MazeEnv.task_from_grid(GRID, 9).id


def test_custom_task_id_is_a_content_digest():
    task = MazeEnv.task_from_grid(GRID, 9)
    # sha256 of the canonical JSON {"budget": 9, "rows": [...]}: fixed forever, not per process
    assert task.id == "maze-v1/custom/7a584fc3f92a480d"
    assert MazeEnv.task_from_grid(GRID.replace(" ", "  "), 9).id == task.id  # same maze, other spacing
