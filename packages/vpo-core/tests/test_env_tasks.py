"""`TextEnv.tasks`: the one task cache and split check over an env's `_load_tasks` hook."""

from __future__ import annotations

import pickle
import threading
from dataclasses import dataclass

import numpy as np
import pytest

from vpo_core import Candidate, RewardSpec, Task, TextEnv
from vpo_core.testing import check_env

SPEC = RewardSpec.uniform(["hit"], ["Naming the number"])


@dataclass(frozen=True)
class CountConfig:
    """Options of the test env: split sizes."""

    train_size: int = 4
    test_size: int = 2


class CountEnv(TextEnv[int, int]):
    """Name the task's number; counts its loads per split (the cache's effect)."""

    env_id = "count-v0"
    reward_spec = SPEC
    config_cls = CountConfig
    config: CountConfig
    loads: list[str]  # every split the hook loaded, across instances (reset per test)

    def _load_tasks(self, split: str) -> list[Task[int]]:
        type(self).loads.append(split)
        return _count_tasks(self.config, split)

    def _render_prompt(self, task, mode, m):
        return [{"role": "user", "content": f"Say {task.payload} in <answer> tags ({m} answers)."}]

    def _parse(self, task, completion, mode, m):
        text = completion.strip()
        answer = int(text) if text.isdigit() and len(text) < 10 else None
        return [Candidate(index=0, text=text, answer=answer, error=None if answer is not None else "not a number")]

    def reward(self, task, candidate):
        return np.array([float(candidate.answer == task.payload)])

    def reference_completion(self, task, *, mode="single", m=1):
        return str(task.payload) if mode == "single" else None


class BothSplitsEnv(CountEnv):
    """Builds both splits in one load (a shared shuffle), returned as a mapping."""

    env_id = "both-v0"

    def _load_tasks(self, split: str) -> dict[str, list[Task[int]]]:
        type(self).loads.append(split)
        return {name: _count_tasks(self.config, name) for name in self.splits}


class NoConfigEnv(CountEnv):
    """An env without `config_cls`: it pickles its instance dict, as Python's default does."""

    env_id = "noconfig-v0"
    config_cls = None

    def _load_tasks(self, split: str) -> list[Task[int]]:
        return _count_tasks(CountConfig(), split)


def _count_tasks(config: CountConfig, split: str) -> list[Task[int]]:
    size = config.train_size if split == "train" else config.test_size
    offset = 0 if split == "train" else 100
    return [Task(id=f"count/{split}/{i}", split=split, index=i, payload=offset + i) for i in range(size)]


@pytest.fixture(autouse=True)
def _fresh_counts():
    CountEnv.loads = []
    BothSplitsEnv.loads = []


def test_each_split_is_loaded_once_lazily_and_returned_as_the_same_object():
    env = CountEnv()
    assert CountEnv.loads == []  # nothing loaded before tasks() is called
    train = env.tasks("train")
    assert [t.payload for t in train] == [0, 1, 2, 3]
    assert [t.index for t in train] == [0, 1, 2, 3]
    assert env.tasks("train") is train
    assert CountEnv.loads == ["train"]
    assert [t.id for t in env.tasks("test")] == ["count/test/0", "count/test/1"]
    assert CountEnv.loads == ["train", "test"]
    assert CountEnv(train_size=2).tasks("train") is not train  # the cache is per env
    check_env(env, max_tasks=2)


def test_a_mapping_fills_every_split_from_one_load():
    env = BothSplitsEnv()
    assert [t.payload for t in env.tasks("test")] == [100, 101]
    assert [t.payload for t in env.tasks("train")] == [0, 1, 2, 3]
    assert BothSplitsEnv.loads == ["test"]  # the hook's own record: one call for both splits


@pytest.mark.parametrize("split", ["validation", "Train", ""])
def test_an_unknown_split_is_refused_before_any_load(split):
    env = CountEnv()
    with pytest.raises(ValueError, match=rf"unknown count-v0 split {split!r}; choose one of \['train', 'test'\]"):
        env.tasks(split)
    assert CountEnv.loads == []


def test_a_mapping_without_the_asked_split_is_an_error_naming_the_hook():
    class Forgetful(CountEnv):
        env_id = "forgetful-v0"

        def _load_tasks(self, split):
            return {"train": []}

    with pytest.raises(ValueError, match=r"Forgetful\._load_tasks\('test'\) returned the splits \['train'\]"):
        Forgetful().tasks("test")


def test_an_env_with_neither_hook_says_what_to_implement():
    class Bare(CountEnv):
        env_id = "bare-v0"
        _load_tasks = TextEnv._load_tasks

    with pytest.raises(NotImplementedError, match="Bare implements neither _load_tasks"):
        Bare().tasks("train")


def test_the_cache_is_never_pickled():
    env = CountEnv(train_size=3)
    env.tasks("train")
    clone = pickle.loads(pickle.dumps(env))
    assert "_task_cache" not in clone.__dict__
    assert [t.id for t in clone.tasks("train")] == [t.id for t in env.tasks("train")]
    assert CountEnv.loads == ["train", "train"]
    plain = NoConfigEnv()
    plain.extra = "kept"
    plain.tasks("train")
    clone = pickle.loads(pickle.dumps(plain))
    assert "_task_cache" not in clone.__dict__
    assert clone.extra == "kept"


def test_threads_loading_one_split_all_get_the_first_stored_tasks():
    started = threading.Barrier(4)

    class Slow(CountEnv):
        env_id = "slow-v0"

        def _load_tasks(self, split):
            started.wait(timeout=30)  # every thread is inside the hook before any stores
            return super()._load_tasks(split)

    env = Slow()
    results: list[object] = [None] * 4

    def load(i: int) -> None:
        results[i] = env.tasks("train")

    threads = [threading.Thread(target=load, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert all(r is results[0] for r in results)
    assert results[0] is env.tasks("train")
