"""How gymnasium users reach the envs, each in a fresh interpreter (gymnasium's registry is per process).

gymnasium 1.x has no plugin loader (0.x loaded the ``gymnasium.envs`` entry-point group; 1.0 removed it),
so an env package registers its ids when it is imported, and ``gymnasium.make("env_maze:vpo/Maze-v1")``
(gymnasium's own ``module:id`` form) imports it first.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("gymnasium", reason="needs the gym extra: `pip install 'env-maze[gym]'`")


def _fresh(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=120, check=False
    )


def test_module_prefixed_id_works_without_importing_the_package():
    result = _fresh(
        """
        import sys
        import gymnasium
        assert "env_maze" not in sys.modules
        env = gymnasium.make("env_maze:vpo/Maze-v1", split="test", mode="multi", m=3)
        observation, info = env.reset(seed=0, options={"index": 0})
        _, reward, terminated, _, info = env.step("no answer")
        print(type(env.unwrapped).__name__, reward.shape, info["candidate_rewards"].shape, terminated, "env_maze" in sys.modules)
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["TextGymEnv", "(4,)", "(3,", "4)", "True", "True"]


def test_mo_gymnasium_make_takes_the_module_prefixed_id():
    """MO-Gymnasium's `make` (gymnasium's, with the passive checker off): the vector reward, no warning."""
    result = _fresh(
        """
        import warnings
        import mo_gymnasium as mo_gym  # (its own envs import pygame, which warns about pkg_resources)
        warnings.simplefilter("error")
        env = mo_gym.make("env_maze:vpo/Maze-v1", split="test")
        env.reset(seed=0)
        _, reward, *_ = env.step("no answer")
        print(env.unwrapped.reward_space, reward.dtype, reward.tolist())
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Box(0.0, 1.0, (4,), float32) float32 [0.0, 0.0, 0.0, 0.0]"


def test_bare_id_needs_the_package_imported_first():
    """Documents gymnasium's behaviour: if a future gymnasium loads plugins again, revisit the README."""
    result = _fresh(
        """
        import gymnasium
        try:
            gymnasium.make("vpo/Maze-v1")
        except gymnasium.error.NamespaceNotFound as exc:
            print("NamespaceNotFound", exc)
        import env_maze  # registers the id
        print(gymnasium.make("vpo/Maze-v1").spec.id)
        """
    )
    assert result.returncode == 0, result.stderr
    first, second = result.stdout.strip().splitlines()
    assert first.startswith("NamespaceNotFound Namespace vpo not found")
    assert second == "vpo/Maze-v1"


def test_vpo_core_points_gymnasium_ids_to_the_module_form():
    import vpo_core

    with pytest.raises(KeyError) as excinfo:
        vpo_core.make("vpo/Maze-v1")
    message = excinfo.value.args[0]
    assert """use `vpo_core.make('maze-v1')`, or with gymnasium `gymnasium.make("env_maze:vpo/Maze-v1")`""" in message
