"""Every installed env: its entry point resolves to a conforming TextEnv class with a valid spec."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

import vpo_core
from vpo_core import RewardSpec, TextEnv
from vpo_core.registry import resolve_env_class

ENV_IDS = vpo_core.list_envs()


def test_the_implemented_paper_domains_are_installed():
    assert {"maze-v1", "musique-v1", "eureqa-v1", "toolrl-v1", "lcb-v1"} <= set(ENV_IDS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_entry_point_resolves_to_a_text_env(env_id):
    cls = resolve_env_class(env_id)
    assert issubclass(cls, TextEnv)
    assert cls.env_id == env_id
    spec = cls.reward_spec
    assert isinstance(spec, RewardSpec)
    assert len(spec.descriptions) == spec.dim
    assert np.isclose(spec.w_star_array.sum(), 1.0), "w* should be a convex weighting in every paper domain"
    assert np.all(spec.low_array == 0.0)
    assert np.all(spec.high_array == 1.0)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_builds_with_defaults_and_pickles(env_id):
    env = vpo_core.make(env_id)
    assert pickle.loads(pickle.dumps(env)).env_id == env_id
