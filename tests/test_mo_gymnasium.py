"""Every installed env's gymnasium view against MO-Gymnasium's contract, with MO-Gymnasium's own wrappers.

MO-Gymnasium 1.3 ships no env checker of its own: its test suite (``tests/test_envs.py``) is the contract. It
runs gymnasium's `check_env` on the `LinearReward`-wrapped env, checks that every reward lies in
``env.unwrapped.reward_space`` (and that ``reward_dim`` is set), and that a pickled env replays the same reset
and step. These tests do the same for each env of the ``vpo.envs`` registry, in single and in multi mode, and
add what a text env's user meets: gymnasium's checker on the raw vector-reward env, `LinearReward` with the
env's w* giving the project's scalar reward, `MORecordEpisodeStatistics` / `MOClipReward` over episodes and
`MOSyncVectorEnv` batching completions.

Envs that need data run on their packages' small test fixtures (`FIXTURES`); an installed env with neither
a fixture here nor data of its own is skipped with the reason.
"""

from __future__ import annotations

import functools
import os
import pickle
import sys
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

pytest.importorskip("gymnasium", reason="needs the gym extra: `pip install 'vpo-core[gym]'`")
mo_gym = pytest.importorskip("mo_gymnasium", reason="needs the gym extra: `pip install 'vpo-core[gym]'`")

from gymnasium import spaces  # noqa: E402
from gymnasium.utils.env_checker import check_env, data_equivalence  # noqa: E402
from mo_gymnasium.wrappers import LinearReward, MOClipReward, MORecordEpisodeStatistics  # noqa: E402

import vpo_core  # noqa: E402
from vpo_core.errors import MissingDataError  # noqa: E402
from vpo_core.gym import TextGymEnv, as_gym  # noqa: E402
from vpo_core.testing import load_script  # noqa: E402

PACKAGES = Path(__file__).resolve().parents[1] / "packages"
ENV_IDS = vpo_core.list_envs()
N_SAMPLED_STEPS = 6  # random actions per env and mode (MO-Gymnasium's suite takes 50 steps of cheap envs)

# env id -> (constructor options on its package's test fixture, the split the episodes draw from)
FIXTURES: dict[str, tuple[dict[str, Any], str]] = {
    "maze-v1": ({"test_size": 5}, "test"),
    "eureqa-v1": ({"data_dir": PACKAGES / "env-eureqa/tests/data"}, "test"),
    # train: its fixture problems carry reference solutions (test's do not); 2 and 32 tests, so both padded and full
    "lcb-v1": ({"data_dir": PACKAGES / "env-lcb/tests/data/deepcoder", "time_limit_s": 2.0}, "train"),
    "musique-v1": ({"data_dir": PACKAGES / "env-musique/tests/data", "test_per_hop": 2}, "test"),
    "toolrl-v1": ({"data_dir": PACKAGES / "env-toolrl/tests/data"}, "test"),
    # + the tiny ArmoRM-shaped reward model of env-ultrafeedback's tests, scored in process (`_tiny_rm`)
    "ultrafeedback-v1": ({"data_dir": PACKAGES / "env-ultrafeedback/tests/data/ultrafeedback", "test_size": 3}, "test"),
}
MODES = [("single", 1), ("multi", 2)]
# The two warnings gymnasium's checker gives by design: the raw env's reward is a vector (MO-Gymnasium's
# convention; its own `make` turns gymnasium's passive checker off for this reason), and a wrapped env is checked.
EXPECTED_WARNINGS = ("The reward returned by `step()` must be a float", "is different from the unwrapped version")


@functools.cache
def _tiny_rm() -> str:
    """env-ultrafeedback's tiny reward model (its tests' builder), built once per session."""
    pytest.importorskip("torch", reason="env-ultrafeedback's in-process reward model needs the local extra")
    module = load_script(PACKAGES / "env-ultrafeedback/tests/conftest.py", "_ultrafeedback_test_fixtures")
    import tempfile

    out = Path(tempfile.mkdtemp(prefix="vpo-tiny-armorm-"))
    return str(module.build_tiny_armorm(out))


@functools.cache
def _sandbox_reason() -> str | None:
    from env_lcb.sandbox.host import _bwrap_works

    found = _bwrap_works(os.path.realpath(getattr(sys, "_base_executable", sys.executable)))
    return f"no bubblewrap can start here (system or bundled): {found}" if isinstance(found, str) else None


def _text_env(env_id: str) -> tuple[vpo_core.TextEnv[Any, Any], str]:
    options, split = FIXTURES.get(env_id, ({}, "test"))
    if env_id == "ultrafeedback-v1":
        options = options | {"scorer": "inprocess", "rm_model": _tiny_rm(), "rm_offset": 0.5, "rm_max_length": 64}
    env = vpo_core.make(env_id, **options)
    try:
        env.tasks(split)
    except (FileNotFoundError, MissingDataError) as exc:
        if env_id in FIXTURES:
            raise
        pytest.skip(f"{env_id} has no test fixture in tests/test_mo_gymnasium.py and no data here: {exc}")
    return env, split


def _checked(env: Any) -> None:
    """gymnasium's own env checker, allowing only the warnings that MO-Gymnasium's convention implies."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        check_env(env, skip_render_check=True)
    unexpected = [str(w.message) for w in caught if not any(e in str(w.message) for e in EXPECTED_WARNINGS)]
    assert not unexpected, unexpected


def _actions(genv: TextGymEnv, task_index: int) -> list[str]:
    """Seeded random completions, then the env's reference completion of the task (a real, rewarded answer)."""
    genv.action_space.seed(0)
    actions = [genv.action_space.sample() for _ in range(N_SAMPLED_STEPS)]
    text_env = genv.text_env
    task = genv._tasks[task_index]
    reference = text_env.reference_completion(task, mode=genv.mode, m=genv.m)
    if reference is not None and not (text_env.env_id == "lcb-v1" and _sandbox_reason()):
        actions.append(reference)
    return actions


@pytest.mark.parametrize(("mode", "m"), MODES)
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_every_env_follows_mo_gymnasiums_contract(env_id, mode, m):
    text_env, split = _text_env(env_id)
    genv = as_gym(text_env, split=split, mode=mode, m=m)
    spec = text_env.reward_spec
    d = spec.dim

    # the declared reward space: a float32 Box of the spec's bounds, and the attributes MO-Gymnasium reads
    space = genv.unwrapped.reward_space
    assert isinstance(space, spaces.Box)
    assert (space.shape, space.dtype) == ((d,), np.float32)
    np.testing.assert_array_equal(space.low, spec.low_array.astype(np.float32))
    np.testing.assert_array_equal(space.high, spec.high_array.astype(np.float32))
    assert genv.unwrapped.reward_dim == d
    np.testing.assert_array_equal(genv.unwrapped.w_star, spec.w_star_array)

    # gymnasium's checker on the raw vector-reward env and on MO-Gymnasium's scalarisation (as MO-Gymnasium's suite)
    _checked(genv)
    scalar_env = LinearReward(genv, weight=genv.unwrapped.w_star)
    _checked(scalar_env)

    # rewards: in the reward space, the best of the m answers per dimension, and LinearReward(w*) is w*·r
    references = 0
    for index in range(min(2, len(genv._tasks))):
        actions = _actions(genv, index)
        references += len(actions) - N_SAMPLED_STEPS
        for action in actions:
            _, reset_info = scalar_env.reset(options={"index": index})
            _, scalar, terminated, truncated, info = scalar_env.step(action)
            reward = info["vector_reward"]
            assert (terminated, truncated) == (True, False)
            assert isinstance(reward, np.ndarray)
            assert reward.dtype == np.float32
            assert space.contains(reward), f"{env_id}: reward {reward} outside {space}"
            candidates = info["candidate_rewards"]
            assert candidates.shape == (m, d)
            np.testing.assert_array_equal(reward, candidates.max(axis=0).astype(np.float32))
            np.testing.assert_array_equal(info["reward_weights"], spec.w_star_array)
            assert scalar == pytest.approx(float(reward.astype(np.float64) @ spec.w_star_array), abs=1e-6)
            task = genv._tasks[index]
            fixed_d = text_env.spec_for(task).names == spec.names
            best_of_m = float(text_env.spec_for(task).scalarize(text_env.score(task, action, mode=mode, m=m)).max())
            assert float((candidates @ info["w_star"]).max()) == pytest.approx(best_of_m)
            np.testing.assert_array_equal(info["w_star"], reset_info["w_star"])
            if mode == "single":  # one answer: MO-Gymnasium's LinearReward(w*) is the project's scalar reward
                assert scalar == pytest.approx(best_of_m if fixed_d else float(reward @ spec.w_star_array), abs=1e-6)
                scalar_env.set_weight(reset_info["w_star"])  # the task's own w* (env-lcb: its tests, not 32 slots)
                scalar_env.reset(options={"index": index})
                assert scalar_env.step(action)[1] == pytest.approx(best_of_m, abs=1e-6)
                scalar_env.set_weight(genv.unwrapped.w_star)
    if text_env.reference_completion(genv._tasks[0], mode=mode, m=m) is not None and env_id != "lcb-v1":
        assert references > 0

    # pickling replays the same reset and step (MO-Gymnasium's `_test_pickle_env`)
    scalar_env.reset(seed=3)
    clone = pickle.loads(pickle.dumps(scalar_env))
    data_equivalence(scalar_env.reset(), clone.reset())
    action = genv.action_space.sample()
    data_equivalence(scalar_env.step(action), clone.step(action))


@pytest.mark.parametrize(("mode", "m"), MODES)
def test_mo_gymnasiums_episode_statistics_and_clipping_wrap_the_view(mode, m):
    text_env, split = _text_env("maze-v1")
    genv = mo_gym.make("env_maze:vpo/Maze-v1", split=split, mode=mode, m=m, test_size=5)
    assert type(genv.unwrapped) is TextGymEnv
    stats = MORecordEpisodeStatistics(MOClipReward(genv, idx=1, min_r=0.0, max_r=0.5))
    seen = []
    for index in range(3):
        task = text_env.tasks(split)[index]
        stats.reset(options={"index": index})
        _, reward, _, _, info = stats.step(text_env.reference_completion(task, mode=mode, m=m))
        expected = text_env.score(task, text_env.reference_completion(task, mode=mode, m=m), mode=mode, m=m).max(0)
        expected[1] = min(expected[1], 0.5)
        np.testing.assert_allclose(reward, expected, rtol=0, atol=1e-7)
        np.testing.assert_array_equal(info["episode"]["r"], reward)
        assert info["episode"]["l"] == 1
        seen.append(reward)
    assert len(stats.return_queue) == 3
    np.testing.assert_array_equal(np.stack(list(stats.return_queue)), np.stack(seen))
    assert any(r[1] == 0.5 for r in seen), "the clip acted on the second dimension (gold)"


def test_mo_gymnasiums_vector_env_batches_completions():
    """`MOSyncVectorEnv`: one completion per sub-env, rewards (n_envs, d), episode statistics per sub-env."""
    from mo_gymnasium.wrappers.vector import MORecordEpisodeStatistics as MOVectorEpisodeStatistics
    from mo_gymnasium.wrappers.vector import MOSyncVectorEnv

    text_env, split = _text_env("maze-v1")
    task = text_env.tasks(split)[0]
    reference = text_env.reference_completion(task)
    vector_env = MOSyncVectorEnv([lambda: mo_gym.make("env_maze:vpo/Maze-v1", split=split, test_size=5)] * 2)
    stats = MOVectorEpisodeStatistics(vector_env)
    observations, info = stats.reset(seed=0, options={"index": 0})
    assert len(observations) == 2
    assert list(info["task_id"]) == [task.id, task.id]
    _, rewards, terminated, _, info = stats.step((reference, "no answer"))
    assert rewards.dtype == np.float32
    np.testing.assert_array_equal(rewards, np.stack([text_env.score(task, reference)[0], np.zeros(4)]))
    assert terminated.tolist() == [True, True]
    np.testing.assert_array_equal(info["episode"]["r"], rewards)
