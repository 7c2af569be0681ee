"""Comparable evaluation output (vpo_core.evaluation.reporting): bootstrap standard errors and the settings digest."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

import vpo_core
from vpo_core.evaluation import pool_summary, task_pool_metrics
from vpo_core.evaluation.reporting import bootstrap_counts, settings_digest, standard_errors


def test_standard_errors_are_the_spread_of_the_summary_over_task_resamples():
    env = vpo_core.make("maze-v1", test_size=6)
    tasks = list(env.tasks("test"))
    rng = np.random.default_rng(0)
    pools = [rng.integers(0, 3, size=(2, 3, 4)) / 2.0 for _ in tasks]
    pools[1] = np.zeros((2, 3, 4))  # a task no candidate reaches: best@k|unreached is defined
    per_task = [task_pool_metrics(env, t, p, mode="multi", ks=(1, 3)) for t, p in zip(tasks, pools, strict=True)]
    metrics = pool_summary(env, tasks, pools, per_task, mode="multi", ks=(1, 3))
    assert {"collinearity", "best@3|reached", "best@3|unreached"} <= set(metrics)
    got = standard_errors(env, tasks, pools, per_task, metrics, resamples=40, seed=5)
    assert set(got) == set(metrics)
    # the definition, by brute force: the summary of each resample of the tasks, its standard deviation
    samples: dict[str, list[float]] = {key: [] for key in metrics}
    for row in bootstrap_counts(len(tasks), 40, 5):
        chosen = [i for i, c in enumerate(row) for _ in range(c)]
        again = pool_summary(env, [tasks[i] for i in chosen], [pools[i] for i in chosen], mode="multi", ks=(1, 3))
        for key in metrics:
            if key in again and np.isfinite(again[key]):
                samples[key].append(again[key])
    for key, values in samples.items():
        assert got[key] == pytest.approx(np.std(values, ddof=1), rel=1e-9, abs=1e-12), key


def test_the_standard_error_of_a_mean_is_about_its_textbook_value():
    values = np.random.default_rng(1).normal(size=200)
    per_task = [{"x": float(v)} for v in values]
    got = standard_errors(None, list(range(200)), [None] * 200, per_task, {"x": float(values.mean())}, resamples=4000)
    assert got["x"] == pytest.approx(values.std(ddof=1) / np.sqrt(200), rel=0.05)
    again = standard_errors(None, list(range(200)), [None] * 200, per_task, {"x": 0.0}, resamples=4000)
    assert again == got  # seeded: the same tasks give the same standard errors
    with pytest.raises(ValueError, match="one pool and one row per task"):
        standard_errors(None, [1, 2], [None], per_task[:2], {"x": 0.0})


def test_bootstrap_counts_draw_t_tasks_with_replacement():
    counts = bootstrap_counts(7, 500, 2)
    assert counts.shape == (500, 7)
    assert (counts.sum(axis=1) == 7).all()
    assert 0.9 < counts.mean() < 1.1
    assert (counts == 0).any()  # some tasks left out of some resamples, as with replacement
    np.testing.assert_array_equal(counts, bootstrap_counts(7, 500, 2))


def test_the_settings_digest_is_the_sha256_of_the_canonical_settings():
    settings = {"env": "maze-v1", "temperature": 0.7, "m": 3, "base_url": "http://a/v1", "opts": {"b": 1, "a": "é"}}
    canonical = '{"env":"maze-v1","m":3,"opts":{"a":"\\u00e9","b":1},"temperature":0.7}'
    assert settings_digest(settings) == hashlib.sha256(canonical.encode()).hexdigest()
    assert settings_digest(dict(reversed(list(settings.items())))) == settings_digest(settings)
    assert settings_digest({**settings, "base_url": "http://b/v1"}) == settings_digest(settings)
    assert settings_digest({**settings, "m": np.int64(3)}) == settings_digest(settings)
    assert settings_digest({**settings, "temperature": 0.8}) != settings_digest(settings)
    assert settings_digest({**settings, "x": float("nan")}) == settings_digest({**settings, "x": None})
    assert json.loads(canonical)["opts"]["a"] == "é"
