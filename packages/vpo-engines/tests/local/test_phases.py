"""The phases of a local run read the env's profile and demonstrations, never domain strings."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.local.config import parse_overrides
from vpo_engines.local.train import open_run, token_budget

LOCAL = Path(__file__).resolve().parents[2] / "src" / "vpo_engines" / "local"


def test_sampling_comes_from_the_profile_unless_overridden(tmp_path):
    state = open_run(parse_overrides(["env.train_size=20", "env.test_size=2", f"out={tmp_path / 'a'}"]))
    profile = state.env.profile
    budget = profile.train.max_new_tokens(state.mode, state.m)
    assert state.rollout == SamplingSettings(profile.train.temperature, profile.train.top_p, budget)
    assert state.evaluation == SamplingSettings(profile.eval.temperature, profile.eval.top_p, budget)
    state = open_run(
        parse_overrides(
            ["env.train_size=20", "temperature=0.5", "eval_top_p=0.9", "max_new_tokens=9", f"out={tmp_path / 'b'}"]
        )
    )
    assert (state.rollout.temperature, state.evaluation.top_p) == (0.5, 0.9)
    assert (state.rollout.top_p, state.evaluation.temperature) == (profile.train.top_p, profile.eval.temperature)
    assert state.rollout.max_new_tokens == state.evaluation.max_new_tokens == 9
    state.limit_budget(5)
    assert (state.rollout.max_new_tokens, state.evaluation.max_new_tokens, state.rollout.temperature) == (5, 5, 0.5)


def test_sampling_settings_are_checked():
    assert SamplingSettings(1.0, 0.5, 3).as_kwargs() == {"temperature": 1.0, "top_p": 0.5, "max_new_tokens": 3}
    for bad in ((0.0, 1.0, 3), (1.0, 1.5, 3), (1.0, 1.0, 0), (float("nan"), 1.0, 3)):
        with pytest.raises(ValueError, match="must be"):
            SamplingSettings(*bad)


class _Tokenizer:
    eos_token = "</s>"

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": text.split()}


class _Policy:
    tokenizer = _Tokenizer()


def test_token_budget_is_the_profiles_capped_by_demonstrations(tmp_path, monkeypatch):
    state = open_run(parse_overrides(["env.train_size=20", f"out={tmp_path / 'a'}"]))
    budget = state.env.profile.train.max_new_tokens(state.mode, state.m)
    monkeypatch.setattr(type(state.env), "demonstration", lambda self, task, *, mode, m, rng: "x " * 40)
    assert token_budget(state, _Policy()) == min(budget, int(41 * 1.25) + 8)
    monkeypatch.setattr(type(state.env), "demonstration", lambda self, task, *, mode, m, rng: "x " * 10**5)
    assert token_budget(state, _Policy()) == budget
    state.config.max_new_tokens = 7
    assert token_budget(state, _Policy()) == 7


def test_warm_up_builds_examples_only_through_env_demonstration(monkeypatch):
    import vpo_core
    from vpo_engines.local.warmup import warm_up
    from vpo_engines.models.policy import ModelSpec, new_policy

    env = vpo_core.make("maze-v1", train_size=10, test_size=1)
    tasks = env.tasks("train")
    calls = []
    real = type(env).demonstration

    def spy(self, task, *, mode="single", m=1, rng=None):
        calls.append((mode, m, isinstance(rng, np.random.Generator)))
        return real(self, task, mode=mode, m=m, rng=rng)

    monkeypatch.setattr(type(env), "demonstration", spy)
    texts = [env.demonstration(t, mode="multi", m=3, rng=np.random.default_rng(0)) for t in tasks]
    policy = new_policy(texts, ModelSpec(vocab_size=400, hidden_size=32, layers=1, heads=2, max_positions=1024), seed=0)
    calls.clear()
    warm_up(policy, env, tasks, mode="multi", m=3, steps=2, batch_size=3, lr=1e-3, seed=0)
    assert calls == [("multi", 3, True)] * 6


def test_the_local_engine_holds_no_answer_format():
    for path in LOCAL.glob("*.py"):
        if path.name == "evaluation.py":  # shared with the evaluation app (pool metrics move to core)
            continue
        text = path.read_text()
        for needle in ("<answer>", "render_numbered", '"route"', "answer_f1", "demonstrations("):
            assert needle not in text, (path.name, needle)
