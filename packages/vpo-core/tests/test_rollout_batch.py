"""One rollout batch and one options record (issue 39 item 4): the advantages are those of the old path.

``data/advantage_cases.npz`` holds fixed random batches and the scalars and advantages that the keyword API
of ``vpo_core.advantages`` (``compute_advantages(method, rewards, *, w_star, seed, group_keys, ...)``, before
`RolloutBatch` and `AdvantageConfig`) computed on them in session 24: every built-in method, with one d for
all groups and with ragged d, both z-score conventions, and the Sobol weight sampler. The new path must give
the same arrays to the bit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from vpo_core import Candidate, RewardSpec, Task, TextEnv
from vpo_core.advantages import AdvantageConfig, compute_advantages, rollout_scalars
from vpo_core.batch import RolloutBatch, score_groups
from vpo_core.methods import METHODS

CASES_FILE = Path(__file__).parent / "data" / "advantage_cases.npz"


def _cases() -> tuple[dict, list[dict]]:
    data = dict(np.load(CASES_FILE))
    return data, json.loads(str(data["cases"]))


DATA, CASES = _cases()


def _batch_and_config(case: dict) -> tuple[RolloutBatch, AdvantageConfig]:
    name, n = case["case"], case["B"]
    groups = [DATA[f"{name}/rewards/{b}"] for b in range(n)]
    w_star = [DATA[f"{name}/w_star/{b}"] for b in range(n)]
    goal = [DATA[f"{name}/goal/{b}"] for b in range(n)] if case["goal"] else None
    ragged = name.endswith("-ragged")
    batch = RolloutBatch.of(
        groups if ragged else np.stack(groups),
        w_star=w_star if ragged else w_star[0],
        keys=case["keys"],
        goal_weights=goal if ragged or goal is None else np.stack(goal),
        lengths=DATA[f"{name}/lengths"] if case["lengths"] else None,
    )
    options = dict(case["extra"])
    if case["gdpo_weights"]:
        options["gdpo_weights"] = DATA[f"{name}/gdpo_weights"]
    config = AdvantageConfig.parse(case["method"], **case["options"], options=options)
    return batch, config


def test_the_saved_cases_cover_every_built_in_method():
    assert {case["method"] for case in CASES} == set(METHODS.registered())
    assert {case["case"].rsplit("-", 1)[1] for case in CASES} == {"shared", "ragged", "unbiased", "sobol"}


@pytest.mark.parametrize("case", CASES, ids=[c["case"] for c in CASES])
def test_advantages_are_those_of_the_keyword_api_to_the_bit(case):
    batch, config = _batch_and_config(case)
    advantages = compute_advantages(batch, config)
    scalars = rollout_scalars(batch, config)
    expected_adv, expected_scalars = DATA[f"{case['case']}/advantages"], DATA[f"{case['case']}/scalars"]
    assert advantages.dtype == expected_adv.dtype
    assert advantages.shape == expected_adv.shape
    assert advantages.tobytes() == expected_adv.tobytes()
    assert scalars.tobytes() == expected_scalars.tobytes()
    assert np.abs(advantages).max() > 0  # the case tests something


# ---------------------------------------------------------------------------------------- options
def test_parse_fills_m_from_the_method_and_checks_once():
    config = AdvantageConfig.parse("vpo", seed=3, num_weights=7)
    assert (config.method.name, config.m, config.seed, config.num_weights) == ("vpo", 3, 3, 7)
    assert AdvantageConfig.parse("grpo").m == 1
    assert AdvantageConfig.parse("max_at_k", options={"k": None}).options == {}  # None is unset


def test_from_mapping_reads_the_option_names_once_and_only_the_normalisers_own():
    block = {
        "seed": "7",
        "num_weights": 12,
        "alpha": "0.5",
        "std": "unbiased",
        "eps": "1e-4",
        "k": 3,
        "divide_by_n": True,
    }
    config = AdvantageConfig.from_mapping(block, method="max_at_k")  # YAML may give numbers as text
    assert config == AdvantageConfig.parse(
        "max_at_k", seed=7, num_weights=12, alpha=0.5, std="unbiased", eps=1e-4, options={"k": 3}
    )
    assert AdvantageConfig.from_mapping(block, method="maxrl").options == {"divide_by_n": True}
    assert AdvantageConfig.from_mapping(block, method="vpo", m=2).options == {}  # zscore reads neither
    assert AdvantageConfig.from_mapping({}, method="vpo") == AdvantageConfig.parse("vpo")  # the defaults
    with pytest.raises(ValueError, match="std must be one of"):
        AdvantageConfig.from_mapping({"std": "sample"}, method="grpo")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"method": "ppo"}, "unknown method 'ppo'"),
        ({"method": "grpo", "m": 3}, "single-answer, so m must be 1"),
        ({"method": "vpo", "m": 1}, "m must be >= 2"),
        ({"method": "vpo", "std": "sample"}, "std must be one of"),
        ({"method": "vpo", "eps": -1.0}, "eps must be a finite number >= 0"),
        ({"method": "vpo", "num_weights": 0}, "num_weights"),
        ({"method": "vpo", "alpha": -1.0}, "alpha"),
        ({"method": "vpo", "weight_sampler": "halton"}, "weight_sampler"),
        ({"method": "grpo", "options": {"k": 2}}, r"option\(s\) \['k'\] do not apply to method 'grpo'"),
        ({"method": "gdpo", "options": {"response_lengths": [[1, 2]]}}, "data of the batch"),
        ({"method": "vpo", "num_weights": 10**9, "groups": 16, "group_size": 8}, "num_weights"),
    ],
)
def test_bad_options_are_named_when_the_record_is_made(kwargs, message):
    with pytest.raises(ValueError, match=message):
        AdvantageConfig.parse(**kwargs)


def test_a_batch_with_m_the_method_cannot_read_is_refused():
    with pytest.raises(ValueError, match="single-answer, so rewards must have m=1"):
        compute_advantages(RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5]), AdvantageConfig.parse("grpo"))


# ------------------------------------------------------------------------------------------ batch
@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: RolloutBatch.of(np.zeros((2, 3, 2)), w_star=[0.5, 0.5]), r"shape \(B groups, G rollouts"),
        (lambda: RolloutBatch.of(np.full((1, 2, 3, 2), np.nan), w_star=[0.5, 0.5]), "NaN or inf"),
        (lambda: RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[1.0]), r"w_star must have shape \(2,\)"),
        (lambda: RolloutBatch.of(np.zeros((1, 2, 3, 2)), w_star=[0.5, 0.5], keys=["a", "b"]), "one key per group"),
        (lambda: RolloutBatch.of([np.zeros((2, 1, 2)), np.zeros((3, 1, 2))], w_star=[0.5, 0.5]), "share G and m"),
        (
            lambda: RolloutBatch.of([np.zeros((2, 1, 2)), np.zeros((2, 1, 3))], w_star=[0.5, 0.5]),
            r"w_star\[1\] must have shape \(3,\)",
        ),
        (
            lambda: RolloutBatch.of(np.zeros((2, 2, 1, 2)), w_star=[0.5, 0.5], goal_weights=np.array([[1, 0]])),
            r"goal_weights must be finite with shape \(B=2, d=2\)",
        ),
        (lambda: RolloutBatch.of(np.zeros((2, 2, 1, 2)), w_star=[0.5, 0.5], lengths=[1, 2]), "lengths must have shape"),
    ],
)
def test_bad_batches_are_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()


DIMS = (2, 4, 2)


class _Ragged(TextEnv):
    """Task i has DIMS[i] dimensions; a candidate's reward reads its text; 'boom' makes `rewards` raise."""

    env_id = "ragged-batch-v0"
    reward_spec = RewardSpec.uniform(["r_0", "r_1", "r_2", "r_3"])

    def tasks(self, split):
        return [Task(id=f"t{i}", split=split, index=i, payload=d) for i, d in enumerate(DIMS)]

    def spec_for(self, task):
        return RewardSpec.uniform([f"r_{i}" for i in range(task.payload)])

    def _render_prompt(self, task, mode, m):
        return [{"role": "user", "content": "words"}]

    def _parse(self, task, completion, mode, m):
        words = (completion.split() + [""] * m)[:m]
        return [Candidate(index=j, text=w, answer=w) for j, w in enumerate(words)]

    def reward(self, task, candidate):
        if candidate.text == "boom":
            raise RuntimeError("the sandbox fell over")
        return np.array([len(candidate.text or "") % (i + 2) / (i + 1) for i in range(task.payload)])


def test_score_groups_keeps_each_tasks_spec_and_dedupes_in_multi_mode():
    env = _Ragged()
    tasks = env.tasks("train")
    texts = ["ab ab", "abc a", "a bb", "", "abcd abcd", "x yy"]  # G = 2 per task
    batch = score_groups(env, tasks, texts, mode="multi", m=2, keys=["k0", "k1", "k2"], lengths=np.ones((3, 2)))
    assert batch.dims == DIMS
    assert (batch.n_groups, batch.group_size, batch.m) == (3, 2, 2)
    assert batch.specs == tuple(env.spec_for(t) for t in tasks)
    assert batch.shared_spec is None
    for b, task in enumerate(tasks):
        for g in range(2):
            scored = env.score_completion(task, texts[2 * b + g], mode="multi", m=2)
            assert np.array_equal(batch.rewards[b][g], scored.rewards)
            assert np.array_equal(batch.training_rewards[b][g], scored.training_rewards)
    assert np.array_equal(batch.training_rewards[0][0][1], np.zeros(2))  # "ab ab": the duplicate is zeroed
    assert not np.array_equal(batch.rewards[0][0][1], np.zeros(2))
    assert [len(w) for w in batch.w_star] == list(DIMS)
    assert batch.padded(4).shape == (3, 2, 2, 4)
    assert isinstance(batch.stacked(), list)
    advantages = compute_advantages(batch, AdvantageConfig.parse("vpo", m=2, num_weights=5))
    assert advantages.shape == (3, 2)
    assert np.abs(advantages).max() > 0


def test_score_groups_raises_or_counts_a_completion_that_cannot_be_scored():
    env = _Ragged()
    tasks = env.tasks("train")[:2]
    texts = ["a", "boom", None, "abc"]
    with pytest.raises(RuntimeError, match="fell over"):
        score_groups(env, tasks, ["a", "boom", "b", "abc"], mode="single", m=1)
    with pytest.raises(ValueError, match="completion 0 of task 't1' is missing"):
        score_groups(env, tasks, ["a", "b", None, "abc"], mode="single", m=1)
    seen = []
    batch = score_groups(env, tasks, texts, mode="single", m=1, on_error=lambda b, g, exc: seen.append((b, g)))
    assert seen == [(0, 1)]
    assert batch.unscorable == 2
    assert not batch.rewards[0][1].any()
    assert not batch.rewards[1][0].any()
    assert batch.rewards[1][1].any()
    with pytest.raises(ValueError, match="the same number of completions per task"):
        score_groups(env, tasks, texts[:3], mode="single", m=1)


def test_score_groups_refuses_rewards_that_disagree_with_the_spec():
    class Liar(_Ragged):
        def spec_for(self, task):
            return RewardSpec.uniform(["r_0"])

    env = Liar()
    with pytest.raises(ValueError, match="the env's rewards and its spec_for disagree"):
        score_groups(env, env.tasks("train")[:1], ["a", "b"], mode="single", m=1)


# ------------------------------------------------------------------------------ a saved run's config
SAVED_CONFIG = {  # config.json of a local run written before AdvantageConfig existed (session 24, method=vpo)
    "env": "maze-v1", "env_options": {}, "method": "vpo", "m": 3, "model": None, "out": "runs/x", "seed": 0,
    "device": "cpu", "threads": 1, "sample_threads": 1, "logger": "console", "warmup_steps": 300,
    "warmup_batch": 16, "warmup_lr": 0.002, "warmup_save_every": 100, "steps": 3, "prompts_per_step": 4,
    "group_size": 8, "lr": 0.0001, "weight_decay": 0.01, "grad_clip": 1.0, "clip_ratio": 0.2, "clip_ratio_c": 3.0,
    "kl_coef": 0.001, "mini_batches": 2, "temperature": None, "top_p": None, "num_weights": 100, "alpha": 1.0,
    "weight_sampler": "dirichlet", "std": "population", "max_new_tokens": None, "stop_at_answer": True,
    "save_every": 10, "keep_steps": "", "eval_tasks": 0, "eval_samples": 12, "eval_temperature": None,
    "eval_top_p": None, "eval_seeds": 1, "hidden_size": 128, "layers": 3, "heads": 4, "vocab_size": 1000,
    "data_source": {},
}  # fmt: skip


def test_a_saved_config_json_replays_and_resumes_with_the_same_flat_keys(tmp_path):
    from vpo_engines.local.config import parse_overrides

    path = tmp_path / "config.json"
    path.write_text(json.dumps(SAVED_CONFIG))
    config = parse_overrides([f"config={path}", "out=runs/x"])
    assert config.conflicts(SAVED_CONFIG) == {}  # the run directory would be resumed
    # the saved model and recipe win over today's defaults (the default run became 2 layers, 12 prompts, lr 2e-4)
    assert (config.layers, config.lr, config.steps, config.warmup_steps) == (3, 1e-4, 3, 300)
    assert parse_overrides([]).conflicts(SAVED_CONFIG)["layers"] == (3, 2)  # not resumed under the new default
    saved = config.to_json()
    assert set(SAVED_CONFIG) - {"data_source"} <= set(saved)  # config.json keeps its flat keys (later options added)
    assert not any(isinstance(value, dict) and key != "env_options" for key, value in saved.items())  # nothing nested
    advantage = config.advantage
    assert (advantage.method.name, advantage.m, advantage.seed, advantage.num_weights) == ("vpo", 3, 0, 100)
    assert (advantage.alpha, advantage.weight_sampler, advantage.std) == (1.0, "dirichlet", "population")
    changed = parse_overrides([f"config={path}", "out=runs/x", "num_weights=7"])
    assert changed.advantage.num_weights == 7
    assert changed.conflicts(SAVED_CONFIG) == {"num_weights": (100, 7)}
