"""The paper's actor loss for the local engine: PPO-clip with dual clip plus a low-variance KL loss.

The same formulas as veRL's actor (``compute_policy_loss_vanilla``, ``kl_penalty("low_var_kl")`` and
``agg_loss("token-mean")`` in ``verl.trainer.ppo.core_algos``), written here so the local engine does
not need veRL and its stack installed; a test compares the two numerically when veRL is installed
(``uv sync --group verl``).

For response tokens t with ratio ρ_t = exp(log π(t) − log π_old(t)) and sequence advantage A:

- PPO clip: ℓ₁ = max(−A·ρ_t, −A·clip(ρ_t, 1−ε, 1+ε)).
- Dual clip (A < 0 only): ℓ = min(ℓ₁, −A·c), so a very large ratio cannot blow the loss up.
- KL loss (Schulman's k3 estimator of KL(π‖π_ref)): δ = log π_ref − log π, kl = exp(δ) − δ − 1.
- Both are token-means over every response token of the batch.
"""

from __future__ import annotations

import torch

__all__ = ["actor_loss"]

# veRL's numerical guards: log-ratios are clamped to ±20 before exp, the k3 KL to ±10.
_LOG_RATIO_CLAMP = 20.0
_KL_CLAMP = 10.0


def _token_mean(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of `values` over tokens where `mask` is 1 (values outside the mask, even NaN, are ignored)."""
    return torch.where(mask.bool(), values, 0.0).sum() / mask.sum().clamp(min=1.0)


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
        clip_ratio_c: Dual-clip constant c (> 1).
        kl_coef: Coefficient of the KL loss.

    Returns:
        The loss and metrics: ``pg_loss``, ``kl``, ``pg_clipfrac`` (tokens where the ε-clip is
        active), ``ppo_kl`` (token-mean of log π_old − log π) and ``pg_clipfrac_lower`` (tokens where
        the dual clip is active).

    Raises:
        ValueError: If ``clip_ratio_c`` is not above 1.
    """
    if not clip_ratio_c > 1.0:
        raise ValueError(f"clip_ratio_c (the dual-clip constant) must be > 1, got {clip_ratio_c}.")
    token_advantages = advantages[:, None] * response_mask
    log_ratio = torch.clamp(log_prob - old_log_prob, min=-_LOG_RATIO_CLAMP, max=_LOG_RATIO_CLAMP)
    ratio = torch.exp(log_ratio)

    unclipped = -token_advantages * ratio
    clipped = -token_advantages * torch.clamp(ratio, 1.0 - clip_ratio, 1.0 + clip_ratio)
    ppo_clip = torch.maximum(unclipped, clipped)
    dual_bound = -token_advantages * clip_ratio_c
    negative = token_advantages < 0
    pg_losses = torch.where(negative, torch.minimum(ppo_clip, dual_bound), ppo_clip)
    pg_loss = _token_mean(pg_losses, response_mask)

    ref_log_ratio = torch.clamp(ref_log_prob - log_prob, min=-_LOG_RATIO_CLAMP, max=_LOG_RATIO_CLAMP)
    kl = torch.clamp(torch.exp(ref_log_ratio) - ref_log_ratio - 1.0, min=-_KL_CLAMP, max=_KL_CLAMP)
    kl_loss = _token_mean(kl, response_mask)

    with torch.no_grad():
        metrics = {
            "pg_loss": float(pg_loss),
            "kl": float(kl_loss),
            "pg_clipfrac": float(_token_mean((clipped > unclipped).float(), response_mask)),
            "ppo_kl": float(_token_mean(-log_ratio, response_mask)),
            "pg_clipfrac_lower": float(_token_mean(((ppo_clip > dual_bound) & negative).float(), response_mask)),
        }
    return pg_loss + kl_coef * kl_loss, metrics
