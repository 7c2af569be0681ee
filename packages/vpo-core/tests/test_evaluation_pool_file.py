"""The saved pool (vpo_core.evaluation): one writer, one reader, old pool files refused, metric names."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from vpo_core.evaluation import (
    SavedPool,
    best_at_k_of_pool,
    load_pool,
    new_pool,
    pool_summary,
    save_pool,
    task_pool_metrics,
)
from vpo_core.metrics import best_at_k, best_at_k_chains

ROOT = Path(__file__).resolve().parents[3]


def _maze_pool(m: int = 3, n: int = 4, t: int = 3, seed: int = 0) -> tuple[object, list[object], np.ndarray]:
    env = vpo_core.make("maze-v1", test_size=t)
    tasks = list(env.tasks("test"))
    rewards = np.random.default_rng(seed).uniform(size=(t, n, m, 4))
    return env, tasks, rewards


@pytest.mark.parametrize("suffix", [".npy", ".npz"])
def test_a_saved_pool_reads_back_with_its_metadata(tmp_path, suffix):
    env, tasks, rewards = _maze_pool()
    pool = new_pool(env, "maze-v1", tasks, rewards, mode="multi", label="vpo", settings={"temperature": 1.0})
    path = save_pool(tmp_path / f"pool_vpo{suffix}", pool)
    back = load_pool(path)
    np.testing.assert_array_equal(back.rewards, rewards)
    assert (back.mode, back.m, back.env, back.label) == ("multi", 3, "maze-v1", "vpo")
    assert back.task_ids == [t.id for t in tasks]
    assert back.reward_names == [list(env.spec_for(t).names) for t in tasks]
    assert back.w_star == [[0.25] * 4] * 3
    assert back.settings == {"temperature": 1.0}
    assert {"vpo-core", "python"} <= set(back.versions)
    if suffix == ".npy":  # the array file is what np.load always read; the metadata sits beside it
        np.testing.assert_array_equal(np.load(path), rewards)
        assert json.loads(path.with_suffix(".json").read_text())["mode"] == "multi"
    else:
        np.testing.assert_array_equal(np.load(path)["rewards"], rewards)


def test_the_mode_comes_from_the_metadata_not_from_m(tmp_path):
    rewards = np.random.default_rng(1).uniform(size=(2, 5, 1, 4))
    save_pool(tmp_path / "pool_a.npy", SavedPool(rewards, mode="multi"))  # multi mode with m = 1
    assert load_pool(tmp_path / "pool_a.npy").mode == "multi"
    with pytest.raises(ValueError, match="tasks, completions, m, d"):
        SavedPool(rewards[0], mode="single")
    with pytest.raises(ValueError, match="single or multi"):
        SavedPool(rewards, mode="chains")
    with pytest.raises(ValueError, match=r"\.npy or \.npz"):
        save_pool(tmp_path / "pool.pkl", SavedPool(rewards, mode="single"))
    with pytest.raises(FileNotFoundError):
        load_pool(tmp_path / "nope.npy")


def test_the_committed_pools_carry_the_records_of_their_summaries():
    """The pools migrated once from index.json / results.json hold what those records say."""
    index = json.loads((ROOT / "results" / "maze-v1-miniature" / "index.json").read_text())
    for record in index["pools"]:
        pool = load_pool(ROOT / "results" / "maze-v1-miniature" / record["pool"])
        assert (pool.mode, pool.label, pool.env) == (record["mode"], record["label"], "maze-v1")
        assert pool.rewards.dtype == np.float32
    for folder in sorted((ROOT / "results" / "maze-v1-miniature-v2" / "calibration").glob("*/")):
        if (folder / "pool.npz").exists():
            [(label, row)] = json.loads((folder / "results.json").read_text())["rows"].items()
            pool = load_pool(folder / "pool.npz")
            assert (pool.mode, pool.label, pool.m) == (row["mode"], label, row["m"])


def test_a_pool_without_metadata_is_refused_naming_the_file_and_the_fix(tmp_path):
    """The format before pools carried their metadata: the mode cannot be read from the shape."""
    from vpo_core.errors import DataFileError

    rewards = np.random.default_rng(5).uniform(size=(2, 4, 1, 4))
    np.save(tmp_path / "pool_old.npy", rewards)
    np.savez_compressed(tmp_path / "old.npz", rewards=rewards)
    for file, missing in ((tmp_path / "pool_old.npy", "pool_old.json beside it"), (tmp_path / "old.npz", "'metadata'")):
        with pytest.raises(DataFileError) as caught:
            load_pool(file)
        message = str(caught.value)
        assert str(file) in message
        assert missing in message
        assert "save_pool(path, SavedPool(rewards, mode=" in message
        assert "\n" not in message
    save_pool(tmp_path / "pool_old.npy", SavedPool(np.load(tmp_path / "pool_old.npy"), mode="multi"))  # the fix
    assert load_pool(tmp_path / "pool_old.npy").mode == "multi"


def test_metric_names_print_as_the_tables_and_json_show_them():
    env, tasks, rewards = _maze_pool()
    row = task_pool_metrics(env, tasks[0], rewards[0], mode="multi", ks=(1, 5))
    assert {"best@5", "pass@5", "E_w[best@5]", "chain_pass@1", "mean_w_star", "diversity", "no_valid"} <= set(row)
    summary = pool_summary(env, tasks, list(rewards), mode="multi", ks=(1, 5))
    assert {"best@5|reached", "collinearity"} <= set(summary) or {"best@5|unreached", "collinearity"} <= set(summary)
    assert json.loads(json.dumps(summary)) == summary


def test_one_best_at_k_of_a_pool_batched_or_not():
    scores = np.random.default_rng(3).uniform(size=(4, 5, 3))
    for k in (1, 4, 15):
        batched = best_at_k_of_pool(scores, k, mode="multi")
        np.testing.assert_allclose(batched, [best_at_k_chains(s, k) for s in scores])
        assert best_at_k_of_pool(scores[0], k, mode="multi") == pytest.approx(float(best_at_k_chains(scores[0], k)))
    for k in (1, 5):
        np.testing.assert_allclose(best_at_k_of_pool(scores, k, mode="single"), best_at_k(scores[..., 0], k))


@pytest.mark.parametrize(
    ("sidecar", "needle"),
    [
        ("[1, 2, 3]", "not a JSON object"),
        ("{not json", "not JSON"),
        ('{"format": 1}', "'mode'"),
        ('{"mode": 3}', "'mode'"),
        ('{"mode": "multi", "settings": [1]}', "'settings'"),
        ('{"mode": "multi", "task_ids": ["a"]}', "'task_ids'"),
        ('{"mode": "multi", "task_ids": [1, 2]}', "'task_ids'"),
        ('{"mode": "multi", "reward_names": [["a"], "b"]}', "'reward_names'"),
        ('{"mode": "multi", "w_star": [[0.5], ["x"]]}', "'w_star'"),
        ('{"mode": "multi", "versions": {"numpy": 2}}', "'versions'"),
        ('{"mode": "multi", "env": ["maze-v1"]}', "'env'"),
        ('{"mode": "multi", "format": 99}', "format 99"),
        ('{"mode": "multi", "shape": [2, 5, 3, 4]}', "shape"),
    ],
)
def test_a_sidecar_of_the_wrong_shape_is_one_clear_error(tmp_path, sidecar, needle):
    from vpo_core.errors import DataFileError

    np.save(tmp_path / "pool_x.npy", np.zeros((2, 4, 3, 4)))
    (tmp_path / "pool_x.json").write_text(sidecar)
    with pytest.raises(DataFileError, match=r"pool_x\.json") as caught:
        load_pool(tmp_path / "pool_x.npy")
    assert needle in str(caught.value)
    assert "\n" not in str(caught.value)


def test_damaged_npz_metadata_is_one_clear_error(tmp_path):
    from vpo_core.errors import DataFileError

    np.savez_compressed(tmp_path / "pool.npz", rewards=np.zeros((1, 2, 1, 4)), metadata=np.array('"just text"'))
    with pytest.raises(DataFileError, match=r"pool\.npz.*not a JSON object"):
        load_pool(tmp_path / "pool.npz")


def test_a_missing_pool_is_a_missing_data_error(tmp_path):
    from vpo_core.errors import MissingDataError

    with pytest.raises(MissingDataError, match=r"nope\.npy"):
        load_pool(tmp_path / "nope.npy")


def test_every_committed_pool_still_loads():
    results = ROOT / "results"
    files = [*results.glob("*/pools/*.npz"), *results.rglob("pool.npz"), *results.rglob("pool_*.npy")]
    assert len(files) > 50
    for file in files:
        pool = load_pool(file)
        assert pool.rewards.ndim == 4
