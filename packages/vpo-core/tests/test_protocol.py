"""The env protocol: RewardSpec, TextEnv's enforcement, the goal suffix, check_env and the gym view."""

from __future__ import annotations

import pickle
import re
from dataclasses import dataclass

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from vpo_core import Candidate, RewardSpec, Task, TextEnv, goal_suffix
from vpo_core.multi_answer import extract_numbered, render_numbered
from vpo_core.testing import EnvCheckError, check_env

SPEC = RewardSpec.uniform(["a", "b", "c"], ["Matching digit A", "Matching digit B", "Matching digit C"])


class DigitsEnv(TextEnv[tuple[int, int, int], tuple[int, ...]]):
    """Guess three digits; each dimension is 1 when its digit is right."""

    env_id = "digits-v0"
    reward_spec = SPEC

    def __init__(self, n_train: int = 6, n_test: int = 3) -> None:
        self.sizes = {"train": n_train, "test": n_test}

    def tasks(self, split):
        if split not in self.sizes:
            raise ValueError(f"unknown split {split!r}")
        offset = 0 if split == "train" else 500
        return [
            Task(id=f"digits/{split}/{i}", split=split, index=i, payload=tuple(int(c) for c in f"{offset + i:03d}"))
            for i in range(self.sizes[split])
        ]

    def _render_prompt(self, task, mode, m):
        ask = "one answer in <answer> tags" if mode == "single" else f"{m} answers in <response_i> tags"
        return [{"role": "system", "content": "Guess digits."}, {"role": "user", "content": f"Give {ask}."}]

    def _parse(self, task, completion, mode, m):
        bodies = [completion] if mode == "single" else extract_numbered(completion, "response", m)
        out = []
        for i, body in enumerate(bodies):
            digits = re.findall(r"\d", body or "")
            answer = tuple(int(d) for d in digits[:3]) if len(digits) >= 3 else None
            out.append(Candidate(index=i, text=body or "", answer=answer, error=None if answer else "no digits"))
        return out

    def reward(self, task, candidate):
        if candidate.answer is None:
            return np.zeros(3)
        return (np.asarray(candidate.answer) == np.asarray(task.payload)).astype(np.float64)

    def reference_completion(self, task, *, mode="single", m=1):
        answer = " ".join(map(str, task.payload))
        return answer if mode == "single" else render_numbered("response", [answer] * m)


# ------------------------------------------------------------------------------------------ spec
def test_spec_scalarize_and_bounds():
    assert SPEC.dim == 3
    np.testing.assert_allclose(SPEC.scalarize([[1, 0, 1], [0, 0, 0]]), [2 / 3, 0])
    np.testing.assert_allclose(SPEC.scalarize([1, 0, 1], w=[0, 0, 1]), 1.0)
    assert SPEC.max_scalar() == pytest.approx(1.0)
    assert SPEC.max_scalar([1.0, -1.0, 0.0]) == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"names": ()}, "empty"),
        ({"names": ("a", "a")}, "duplicates"),
        ({"w_star": (1.0,)}, "w_star has 1 entries"),
        ({"low": (0.0, 2.0), "high": (1.0, 1.0)}, "low must not exceed high"),
        ({"w_star": (float("nan"), 1.0)}, "finite"),
    ],
)
def test_spec_rejects_bad_definitions(kwargs, message):
    base = {"names": ("a", "b"), "w_star": (0.5, 0.5), "low": (0, 0), "high": (1, 1), "descriptions": ("A", "B")}
    base.update(kwargs)
    if "names" in kwargs and len(kwargs["names"]) != 2:
        base["descriptions"] = tuple(kwargs["names"])
        base.update({k: (0.5,) * len(kwargs["names"]) for k in ("w_star", "low", "high")})
    with pytest.raises(ValueError, match=message):
        RewardSpec(**base)


def test_spec_check_rejects_bad_rewards():
    with pytest.raises(ValueError, match=r"shape \(\.\.\., 3\)"):
        SPEC.check(np.zeros((2, 4)))
    with pytest.raises(ValueError, match="NaN"):
        SPEC.check([np.nan, 0, 0])
    with pytest.raises(ValueError, match="out of bounds"):
        SPEC.check([2.0, 0, 0])
    with pytest.raises(ValueError, match=r"w must have shape \(3,\)"):
        SPEC.scalarize([1, 0, 0], w=[1, 0])


# ------------------------------------------------------------------------------------ protocol
def test_parse_pads_truncates_and_validates_mode():
    env = DigitsEnv()
    task = env.tasks("train")[1]
    cands = env.parse(task, "<response_2>0 0 1</response_2>", mode="multi", m=4)
    assert len(cands) == 4
    assert [c.answer for c in cands] == [None, (0, 0, 1), None, None]
    np.testing.assert_array_equal(env.rewards(task, cands)[1], [1, 1, 1])
    with pytest.raises(ValueError, match="m must be 1"):
        env.parse(task, "x", mode="single", m=3)
    with pytest.raises(ValueError, match="mode must be one of"):
        env.parse(task, "x", mode="double", m=1)
    with pytest.raises(ValueError, match="positive int"):
        env.render_prompt(task, mode="multi", m=0)
    with pytest.raises(TypeError, match="completion must be a str"):
        env.parse(task, None)


def test_goal_suffix_is_the_papers_text():
    suffix = goal_suffix(SPEC, [0.5, 0.25, 0.25])
    assert suffix == (
        "\n\nYour objective weights (higher = more important to optimize):\n"
        "- Matching digit A: 0.50\n- Matching digit B: 0.25\n- Matching digit C: 0.25\n\n"
        "Maximize your weighted score."
    )
    env = DigitsEnv()
    task = env.tasks("test")[0]
    plain = env.render_prompt(task)
    goal = env.render_prompt(task, goal_weights=[0.5, 0.25, 0.25])
    assert goal[0] == plain[0]
    assert goal[-1]["content"] == plain[-1]["content"] + suffix
    with pytest.raises(ValueError, match="3 finite numbers"):
        env.render_prompt(task, goal_weights=[1.0, 0.0])


def test_training_rewards_dedupe_by_reward_vector():
    env = DigitsEnv()
    task = env.tasks("train")[2]  # payload (0, 0, 2)
    text = render_numbered("response", ["0 0 2", "0 0 2", "9 9 9", "0 1 2"])
    np.testing.assert_array_equal(
        env.score_completion(task, text, mode="multi", m=4).training_rewards,
        [[1, 1, 1], [0, 0, 0], [1, 0, 1], [0, 0, 0]],
    )


@given(st.text(max_size=300), st.integers(1, 5))
def test_parsing_is_total(text, m):
    env = DigitsEnv()
    task = env.tasks("train")[0]
    rewards = env.score(task, text, mode="multi", m=m)
    assert rewards.shape == (m, 3)
    assert np.all((rewards == 0) | (rewards == 1))


# ------------------------------------------------------------------------------------ check_env
def test_check_env_passes_a_conforming_env():
    check_env(DigitsEnv())


class _RaisingParse(DigitsEnv):
    def _parse(self, task, completion, mode, m):
        return [Candidate(index=0, text=completion, answer=(int(completion[0]),) * 3)]


class _OutOfBounds(DigitsEnv):
    def reward(self, task, candidate):
        return super().reward(task, candidate) * 2.0


class _EmptyScores(DigitsEnv):
    def reward(self, task, candidate):
        return np.ones(3) * 0.5


class _WrongOracle(DigitsEnv):
    def reference_completion(self, task, *, mode="single", m=1):
        return "9 9 9" if mode == "single" else render_numbered("response", ["9 9 9"] * m)


class _OverlappingSplits(DigitsEnv):
    def tasks(self, split):
        tasks = super().tasks("train")
        return [Task(id=f"{split}/{t.index}", split=split, index=t.index, payload=t.payload) for t in tasks]


class _Unpicklable(DigitsEnv):
    def __init__(self):
        super().__init__()
        self.callback = lambda: None


@pytest.mark.parametrize(
    ("env_cls", "message"),
    [
        (_RaisingParse, "parse raised"),
        (_OutOfBounds, "leave the bounds"),
        (_EmptyScores, "empty completion must score all zeros"),
        (_WrongOracle, "is not a success"),
        (_OverlappingSplits, "also appears in split"),
        (_Unpicklable, "does not pickle"),
    ],
)
def test_check_env_catches_broken_envs(env_cls, message):
    with pytest.raises(EnvCheckError, match=message):
        check_env(env_cls())


def test_env_pickles_and_keeps_scoring():
    env = DigitsEnv()
    clone = pickle.loads(pickle.dumps(env))
    task = env.tasks("test")[2]
    assert clone.score(task, "5 0 2").tolist() == env.score(task, "5 0 2").tolist() == [[1, 1, 1]]


# ------------------------------------------------------------------------------------------ gym
def test_gym_view_passes_gymnasiums_checker_with_mo_gymnasiums_vector_reward():
    from gymnasium.utils.env_checker import check_env as gym_check_env

    from vpo_core.gym import as_gym

    genv = as_gym(DigitsEnv(), split="test", mode="single")
    # gymnasium's checker asks for a float reward, warning only (MO-Gymnasium's `make` turns this check off)
    with pytest.warns(UserWarning, match="reward returned by `step\\(\\)` must be a float"):
        gym_check_env(genv, skip_render_check=True)
    assert genv.reward_space.shape == (3,)
    assert genv.reward_space.dtype == np.float32
    assert (genv.reward_dim, genv.reward_names) == (3, ("a", "b", "c"))
    obs, info = genv.reset(seed=3, options={"index": 1})
    assert "Guess digits." in obs
    assert info["task_id"] == "digits/test/1"
    _, reward, terminated, truncated, info = genv.step("5 9 1")
    assert (terminated, truncated) == (True, False)
    assert reward.dtype == np.float32
    assert reward.tolist() == [1.0, 0.0, 1.0]
    assert info["candidate_rewards"].tolist() == [[1.0, 0.0, 1.0]]
    with pytest.raises(ValueError, match="options\\['index'\\]"):
        genv.reset(options={"index": 99})
    with pytest.raises(ValueError, match="m must be 1"):
        as_gym(DigitsEnv(), mode="single", m=2)


def test_gym_view_in_multi_mode_returns_the_best_of_the_m_answers_per_dimension():
    mo_gym = pytest.importorskip("mo_gymnasium")

    from vpo_core.gym import as_gym

    genv = as_gym(DigitsEnv(), split="test", mode="multi", m=2)
    assert genv.reward_space.shape == (3,), "multi mode keeps MO-Gymnasium's (d,) reward"
    scalar_env = mo_gym.wrappers.LinearReward(genv, weight=genv.w_star)
    scalar_env.reset(options={"index": 1})  # digits 5 0 1
    _, scalar, _, _, info = scalar_env.step("<response_1>5 9 9</response_1><response_2>9 0 1</response_2>")
    assert info["candidate_rewards"].tolist() == [[1, 0, 0], [0, 1, 1]]
    assert info["vector_reward"].tolist() == [1, 1, 1]  # each digit is right in some answer
    assert scalar == pytest.approx(1.0)  # w*·(the set's ideal point) ...
    assert (info["candidate_rewards"] @ info["w_star"]).max() == pytest.approx(2 / 3)  # ... >= best-of-m under w*


class _FewerDimsDigitsEnv(DigitsEnv):
    """Task 0 scores its first two digits only (a per-task dimension count, like env-lcb's tests)."""

    def spec_for(self, task):
        return RewardSpec.uniform(["a", "b"]) if task.index == 0 else SPEC

    def reward(self, task, candidate):
        return super().reward(task, candidate)[: self.spec_for(task).dim]


class _RenamedDimsDigitsEnv(DigitsEnv):
    def spec_for(self, task):
        return RewardSpec.uniform(["b", "a"])


def test_gym_view_pads_a_tasks_fewer_dimensions_and_rejects_misplaced_ones():
    from vpo_core.gym import as_gym

    genv = as_gym(_FewerDimsDigitsEnv(), split="test")
    _, info = genv.reset(options={"index": 0})  # digits 5 0 0
    assert info["w_star"].tolist() == [0.5, 0.5, 0.0]
    _, reward, _, _, info = genv.step("5 0 0")
    assert reward.tolist() == [1.0, 1.0, 0.0]  # zero beyond the task's two dimensions
    assert info["candidate_rewards"].shape == (1, 3)
    renamed = as_gym(_RenamedDimsDigitsEnv(), split="test")
    with pytest.raises(ValueError, match="must be a prefix of the env's"):
        renamed.reset(options={"index": 0})


def test_gym_view_pickles_without_its_task_list():
    from vpo_core.gym import as_gym

    genv = as_gym(DigitsEnv(), split="test")
    genv.reset(seed=5)
    assert "_tasks" not in genv.__getstate__()
    clone = pickle.loads(pickle.dumps(genv))
    assert clone.reset()[1]["task_id"] == genv.reset()[1]["task_id"]
    assert clone.step("5 0 2")[1].tolist() == genv.step("5 0 2")[1].tolist()


class CountingDigitsEnv(DigitsEnv):
    """DigitsEnv that counts `rewards` calls (each one is a sandbox run or a reward-model pass in a real env)."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    def rewards(self, task, candidates):
        self.calls += 1
        return super().rewards(task, candidates)


def test_one_scoring_step_returns_raw_and_deduplicated_rewards_from_one_rewards_call():
    env = CountingDigitsEnv()
    task = env.tasks("train")[1]
    text = render_numbered("response", ["0 0 1", "0 0 1", "0 0 9"])
    scored = env.score_completion(task, text, mode="multi", m=3)
    assert env.calls == 1
    np.testing.assert_array_equal(scored.rewards, [[1, 1, 1], [1, 1, 1], [1, 1, 0]])
    np.testing.assert_array_equal(scored.training_rewards, [[1, 1, 1], [1, 1, 0], [0, 0, 0]])
    np.testing.assert_array_equal(
        scored.training_rewards, env.dedupe_rewards(task, scored.candidates, env.rewards(task, scored.candidates))
    )
    single = env.score_completion(task, "0 0 1", mode="single", m=1)
    assert single.training_rewards is single.rewards  # nothing to de-duplicate in single mode
    assert [c.answer for c in scored.candidates] == [(0, 0, 1), (0, 0, 1), (0, 0, 9)]


def test_the_env_cli_scores_each_completion_with_one_rewards_call():
    from vpo_core.envcli import score_pools

    env = CountingDigitsEnv()
    tasks = env.tasks("test")
    pools = {i: [render_numbered("response", ["5 0 0", "1 2 3"])] * 4 for i in range(len(tasks))}
    score_pools(env, tasks, pools, mode="multi", m=2)
    assert env.calls == 4 * len(tasks)


# ------------------------------------------------------------------ typed config, generic pickling
@dataclass(frozen=True)
class SizedDigitsConfig:
    n_train: int = 6
    n_test: int = 3

    def __post_init__(self):
        if self.n_train < 1:
            raise ValueError(f"n_train must be >= 1, got {self.n_train}.")


class SizedDigitsEnv(DigitsEnv):
    """DigitsEnv with its options as a config record (no pickling of its own)."""

    config_cls = SizedDigitsConfig

    def __init__(self, config=None, /, **options):
        TextEnv.__init__(self, config, **options)
        self.sizes = {"train": self.config.n_train, "test": self.config.n_test}
        self.built = getattr(self, "built", 0) + 1  # a cache that must not travel with the env


def test_an_env_takes_its_config_record_or_its_fields_and_pickles_as_the_config():
    env = SizedDigitsEnv(n_train=4)
    assert env.config == SizedDigitsConfig(n_train=4)
    assert len(env.tasks("train")) == 4
    assert SizedDigitsEnv(SizedDigitsConfig(n_train=2)).config.n_train == 2
    assert env.__getstate__() == {"n_train": 4, "n_test": 3}
    env.built = 99
    copy = pickle.loads(pickle.dumps(env))
    assert (copy.config, copy.built) == (env.config, 1)  # rebuilt from the config, caches not shipped
    with pytest.raises(TypeError, match="not both"):
        SizedDigitsEnv(SizedDigitsConfig(), n_train=2)
    with pytest.raises(TypeError, match="takes a SizedDigitsConfig"):
        SizedDigitsEnv({"n_train": 2})
    with pytest.raises(TypeError, match="unexpected keyword"):
        SizedDigitsEnv(n_trian=2)
    with pytest.raises(ValueError, match="n_train must be"):
        SizedDigitsEnv(n_train=0)


def test_an_env_without_a_config_record_pickles_its_attributes_as_before():
    env = DigitsEnv(n_train=2)
    env.note = "kept"
    copy = pickle.loads(pickle.dumps(env))
    assert (copy.sizes, copy.note) == ({"train": 2, "test": 3}, "kept")
    with pytest.raises(TypeError, match="takes no options"):
        TextEnv.__init__(env, n_train=2)


def test_env_options_are_checked_against_the_config_fields(monkeypatch):
    from vpo_core import registry

    monkeypatch.setattr(registry, "resolve_env_class", lambda env_id: SizedDigitsEnv)
    assert registry.check_env_options("digits-v0", {"n_test": 2}) == ("digits-v0", {"n_test": 2})
    with pytest.raises(ValueError, match=r"env.n_trian is not an option of digits-v0; did you mean env.n_train\?"):
        registry.check_env_options("digits-v0", {"n_trian": 2})
    with pytest.raises(ValueError, match=r"env\.n_train of digits-v0 expects int"):
        registry.check_env_options("digits-v0", {"n_train": "many"})
