"""The paper's actor loss, taken from veRL's own ``core_algos`` (importable on CPU).

PPO-clip with dual clip, token-mean aggregation, and the low-variance (k3) KL to the frozen initial
policy.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch

__all__ = ["actor_loss"]


@lru_cache(maxsize=1)
def _core_algos() -> Any:
    from verl.trainer.ppo import core_algos

    return core_algos


def actor_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    ref_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    response_mask: torch.Tensor,
    *,
    clip_ratio: float = 0.2,
    clip_ratio_c: float = 3.0,
    kl_coef: float = 1e-3,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Policy-gradient loss plus KL loss.

    Args:
        log_prob: Current log-probs of the response tokens, shape (N, L).
        old_log_prob: Log-probs at sampling time, shape (N, L).
        ref_log_prob: Log-probs under the frozen initial policy, shape (N, L).
        advantages: One advantage per sequence, shape (N,), broadcast to its tokens.
        response_mask: 1 for response tokens, shape (N, L).
        clip_ratio: PPO clip ε.
        clip_ratio_c: Dual-clip constant c.
        kl_coef: Coefficient of the KL loss.

    Returns:
        The loss and metrics (pg loss, clip fractions, KL).
    """
    from omegaconf import OmegaConf

    core = _core_algos()
    config = OmegaConf.create(
        {
            "clip_ratio": clip_ratio,
            "clip_ratio_low": None,
            "clip_ratio_high": None,
            "clip_ratio_c": clip_ratio_c,
            "global_batch_info": {},
        }
    )
    token_advantages = advantages[:, None] * response_mask
    pg_loss, pg_metrics = core.compute_policy_loss_vanilla(
        old_log_prob, log_prob, token_advantages, response_mask, loss_agg_mode="token-mean", config=config
    )
    kl = core.kl_penalty(log_prob, ref_log_prob, "low_var_kl")
    kl_loss = core.agg_loss(loss_mat=kl, loss_mask=response_mask, loss_agg_mode="token-mean")
    metrics = {
        "pg_loss": float(pg_loss.detach()),
        "kl": float(kl_loss.detach()),
        **{k.split("/")[-1]: v for k, v in pg_metrics.items()},
    }
    return pg_loss + kl_coef * kl_loss, metrics
