"""The local engine's actor loss equals veRL's own (PPO dual-clip, low_var_kl, token-mean) on random batches."""

from __future__ import annotations

import pytest
import torch

pytest.importorskip("verl", reason="veRL is opt-in: `uv sync --group verl` (CI installs it)")
pytestmark = pytest.mark.verl

from omegaconf import OmegaConf  # noqa: E402
from verl.trainer.ppo import core_algos  # noqa: E402

from vpo_engines.local.loss import actor_loss  # noqa: E402


def _verl_actor_loss(log_prob, old_log_prob, ref_log_prob, advantages, mask, clip_ratio, clip_ratio_c, kl_coef):
    config = OmegaConf.create(
        {
            "clip_ratio": clip_ratio,
            "clip_ratio_low": None,
            "clip_ratio_high": None,
            "clip_ratio_c": clip_ratio_c,
            "global_batch_info": {},
        }
    )
    token_advantages = advantages[:, None] * mask
    pg_loss, pg_metrics = core_algos.compute_policy_loss_vanilla(
        old_log_prob, log_prob, token_advantages, mask, loss_agg_mode="token-mean", config=config
    )
    kl = core_algos.kl_penalty(log_prob, ref_log_prob, "low_var_kl")
    kl_loss = core_algos.agg_loss(loss_mat=kl, loss_mask=mask, loss_agg_mode="token-mean")
    metrics = {
        "pg_loss": float(pg_loss.detach()),
        "kl": float(kl_loss.detach()),
        **{k.split("/")[-1]: v for k, v in pg_metrics.items()},
    }
    return pg_loss + kl_coef * kl_loss, metrics


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize(("clip_ratio", "clip_ratio_c", "kl_coef"), [(0.2, 3.0, 1e-3), (0.1, 1.5, 0.5)])
def test_loss_value_gradient_and_metrics_equal_verl(seed, clip_ratio, clip_ratio_c, kl_coef):
    gen = torch.Generator().manual_seed(seed)
    n, length = 6, 9
    old = -torch.rand(n, length, generator=gen, dtype=torch.float64) * 3
    ref = old + 0.3 * torch.randn(n, length, generator=gen, dtype=torch.float64)
    # large log-ratio moves so both clips and the dual clip are active on some tokens
    new = (old + 1.5 * torch.randn(n, length, generator=gen, dtype=torch.float64)).requires_grad_(True)
    advantages = torch.randn(n, generator=gen, dtype=torch.float64) * 2
    mask = (torch.rand(n, length, generator=gen) < 0.8).double()
    mask[:, 0] = 1.0

    ours, our_metrics = actor_loss(
        new, old, ref, advantages, mask, clip_ratio=clip_ratio, clip_ratio_c=clip_ratio_c, kl_coef=kl_coef
    )
    (our_grad,) = torch.autograd.grad(ours, new)
    theirs, their_metrics = _verl_actor_loss(new, old, ref, advantages, mask, clip_ratio, clip_ratio_c, kl_coef)
    (their_grad,) = torch.autograd.grad(theirs, new)

    torch.testing.assert_close(ours, theirs, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(our_grad, their_grad, rtol=1e-12, atol=1e-12)
    assert our_metrics.keys() == their_metrics.keys()
    for key, value in their_metrics.items():
        assert our_metrics[key] == pytest.approx(value, rel=1e-6, abs=1e-9), key
    assert 0 < our_metrics["pg_clipfrac"] < 1
