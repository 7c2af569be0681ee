"""`plugin.register_estimator`: a normaliser registered outside vpo-core gets a veRL estimator and routes its methods."""

from __future__ import annotations

import numpy as np
import pytest
import torch

pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
pytestmark = pytest.mark.verl

from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_adv_estimator_fn  # noqa: E402

from vpo_core import methods  # noqa: E402
from vpo_engines.verl import estimators, plugin, recipes  # noqa: E402


@pytest.fixture
def centre(monkeypatch):
    """A throwaway normaliser ``centre`` (x - group mean) and method ``centre_grpo``; registries restored after."""

    def fn(scores, *, std="population", eps=1e-6, shift=None):
        x = np.asarray(scores, dtype=np.float64)
        return x - x.mean(axis=1, keepdims=True) + (0.0 if shift is None else float(shift))

    monkeypatch.setitem(methods.NORMALIZERS, "centre", methods.Normalizer("centre", fn, ("shift",)))
    record = methods.Method("centre_grpo", "single", 1, "w_star", "centre", False, "")
    monkeypatch.setitem(methods.METHODS, "centre_grpo", record)
    monkeypatch.setattr(recipes, "ESTIMATORS", dict(recipes.ESTIMATORS))
    monkeypatch.setattr(plugin, "ESTIMATORS", dict(plugin.ESTIMATORS))
    yield
    ADV_ESTIMATOR_REGISTRY.pop("centre", None)


def test_a_new_normaliser_reaches_veRLs_lookup_and_reads_its_own_options(centre):
    with pytest.raises(ValueError, match="normalises with 'centre'"):
        recipes.estimator_for("centre_grpo")
    fn = plugin.register_estimator("centre")
    assert get_adv_estimator_fn("centre") is fn
    assert recipes.estimator_for("centre_grpo") == "centre"
    assert plugin.register_estimator("centre") is fn  # idempotent
    plugin.check()
    rewards = torch.zeros(4, 3)
    rewards[:, -1] = torch.tensor([1.0, 3.0, 0.0, 4.0])
    mask = torch.ones(4, 3)
    uid = np.array(["b", "a", "b", "a"], dtype=object)
    config = {"vpo": {"shift": 0.5, "k": 3}}  # k belongs to max_at_k: not passed to this normaliser
    adv, _ = fn(token_level_rewards=rewards, response_mask=mask, index=uid, config=config)
    torch.testing.assert_close(adv[:, 0], torch.tensor([1.0, 0.0, 0.0, 1.0]))  # x - group mean + shift


def test_a_normaliser_already_routed_elsewhere_is_refused(centre):
    with pytest.raises(ValueError, match="'zscore' already runs as veRL estimator 'grpo_pop'"):
        plugin.register_estimator("zscore", "my_zscore")
    assert plugin.register_estimator("zscore", "grpo_pop") is estimators.grpo_pop
    with pytest.raises(ValueError, match="not registered"):
        estimators.normalizer_estimator("no_such_normaliser")
