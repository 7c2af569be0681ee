"""Every installed env against the protocol's rules; the five paper envs also against the paper's rules.

The protocol's rules hold for any env package (a new domain, a scaffolded one): its entry point names a
`TextEnv` with a valid spec and profile, it builds from keyword configuration and pickles. The paper's
rules are facts of the five domains of the paper (convex w*, rewards in [0, 1], the appendix's
generation and evaluation settings) and are not asked of other envs.
"""

from __future__ import annotations

import pickle
from collections.abc import Mapping

import numpy as np
import pytest

import vpo_core
from vpo_core import RewardSpec, TextEnv
from vpo_core.profile import EnvProfile, Generation, VerlRecipe
from vpo_core.registry import resolve_env_class

ENV_IDS = vpo_core.list_envs()
PAPER_ENVS = ("maze-v1", "musique-v1", "eureqa-v1", "toolrl-v1", "lcb-v1")


# ------------------------------------------------------------------------------ the protocol: every env
@pytest.mark.parametrize("env_id", ENV_IDS)
def test_entry_point_resolves_to_a_text_env_with_a_valid_spec(env_id):
    cls = resolve_env_class(env_id)
    assert issubclass(cls, TextEnv)
    assert cls.env_id == env_id
    spec = cls.reward_spec
    assert isinstance(spec, RewardSpec)
    assert len(spec.descriptions) == spec.dim
    assert np.all(spec.low_array <= 0.0), "the zero vector (what an unparseable completion scores) must be in bounds"
    assert np.all(spec.high_array > spec.low_array)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_profile_is_well_formed(env_id):
    cls = resolve_env_class(env_id)
    profile = cls.profile
    assert isinstance(profile, EnvProfile)
    assert isinstance(profile.train, Generation)
    assert isinstance(profile.eval, Generation)
    assert isinstance(profile.chat_template_kwargs, Mapping)
    assert set(profile.report_dims) <= set(cls.reward_spec.names), "report_dims name reward dimensions"
    if profile.recipe is not None:
        assert isinstance(profile.recipe, VerlRecipe)
        assert set(profile.recipe.methods) <= set(vpo_core.METHODS)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_env_builds_with_defaults_and_pickles(env_id):
    env = vpo_core.make(env_id)
    assert pickle.loads(pickle.dumps(env)).env_id == env_id


# --------------------------------------------------------------------------- the paper: its five envs
def test_the_paper_domains_are_installed():
    assert set(PAPER_ENVS) <= set(ENV_IDS)


@pytest.mark.parametrize("env_id", PAPER_ENVS)
def test_paper_rewards_are_convex_scalarisations_of_unit_dimensions(env_id):
    spec = resolve_env_class(env_id).reward_spec
    assert np.isclose(spec.w_star_array.sum(), 1.0), "w* is a convex weighting in every paper domain"
    assert np.all(spec.low_array == 0.0)
    assert np.all(spec.high_array == 1.0)


# (train temperature, eval temperature, eval top-p, evaluation seeds): appendix "Training Setup"
# ("Final-evaluation sampling"), the EUREQA/ToolRL "averaged over 4 evaluation seeds", and the
# LiveCodeBench case study (T = 0.8 for training and for the 30 candidates per problem)
SAMPLING = {
    "maze-v1": (1.0, 0.7, 1.0, 1),
    "musique-v1": (1.0, 0.7, 1.0, 1),
    "eureqa-v1": (1.0, 0.7, 0.95, 4),
    "toolrl-v1": (1.0, 0.7, 0.95, 4),
    "lcb-v1": (0.8, 0.8, 1.0, 1),
}


@pytest.mark.parametrize("env_id", PAPER_ENVS)
def test_paper_profiles_follow_the_appendix(env_id):
    profile = resolve_env_class(env_id).profile
    train_t, eval_t, eval_top_p, seeds = SAMPLING[env_id]
    assert (profile.train.temperature, profile.train.top_p) == (train_t, 1.0)
    assert (profile.eval.temperature, profile.eval.top_p, profile.eval_seeds) == (eval_t, eval_top_p, seeds)
    assert profile.eval_samples == 30  # best@30 in every table; LCB's 30 candidates per problem
    recipe = profile.recipe
    assert recipe is not None, "every paper domain declares its veRL recipe"
    # Qwen3 thinking is off in training and evaluation (the budgets are for the answer alone)
    assert dict(profile.chat_template_kwargs) == (
        {"enable_thinking": False} if recipe.model.startswith("Qwen/Qwen3-") else {}
    )
    # rollouts of the local engine and of veRL share the budgets
    assert profile.train.max_new_tokens_single == recipe.response_single
    assert profile.train.max_new_tokens_multi == recipe.response_multi
    assert profile.eval.max_new_tokens_multi >= recipe.response_multi, "evaluation never cuts what training allows"
    set_fields = [
        name
        for name in ("model", "n_gpus", "train_batch", "mini_batch", "micro_batch", "prompt_length", "epochs")
        if getattr(recipe, name) is not None
    ]
    assert all(recipe.sources.get(name) for name in set_fields), "every recipe value names its source"


def test_musique_reports_its_answer_f1():
    assert resolve_env_class("musique-v1").profile.report_dims == ("answer_f1",)
