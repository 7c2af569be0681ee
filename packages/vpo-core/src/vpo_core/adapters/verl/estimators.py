"""Group estimators in veRL's registry signature, reusing vpo-core's implementations.

veRL hands an estimator the token-level rewards (the rollout scalar at the last response token),
the response mask and the group ids (``uid``); options come from ``config`` (= ``config.algorithm``)
under ``algorithm.vpo.*``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from vpo_core.advantages import group_layout, normalize_scalars, zscore_by_index
from vpo_core.methods import NORMALIZERS, get_method

__all__ = ["grpo_pop", "max_at_k", "maxrl", "vpo_options"]


def vpo_options(config: Any) -> dict[str, Any]:
    """The ``algorithm.vpo`` options as a plain dict (empty when absent)."""
    if config is None:
        return {}
    options = config.get("vpo", None) if hasattr(config, "get") else None
    return dict(options) if options else {}


def _scores(token_level_rewards: torch.Tensor, index: Any) -> tuple[np.ndarray, np.ndarray]:
    if index is None:
        raise ValueError("this estimator needs the group ids (index = non_tensor_batch['uid']).")
    return token_level_rewards.sum(dim=-1).detach().cpu().double().numpy(), np.asarray(index, dtype=object)


def _broadcast(advantages: np.ndarray, response_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    adv = torch.as_tensor(advantages, dtype=torch.float32, device=response_mask.device)[:, None] * response_mask
    return adv, adv


def grpo_pop(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None, config: Any = None, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Group z-score with the population std (the paper's appendix; VPO's and Multi-RLVR's normaliser)."""
    scores, ids = _scores(token_level_rewards, index)
    options = vpo_options(config)
    advantages = zscore_by_index(scores, ids, std=options.get("std", "population"), eps=float(options.get("eps", 1e-6)))
    return _broadcast(advantages, response_mask)


def _per_group(method: str, token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any, config: Any):
    """Lay the flat batch out as (B, G) groups and apply the method's registered normaliser from vpo-core.

    Only the options that method's normaliser reads are passed on (``k`` for max_at_k, ``divide_by_n``
    for maxrl), so one ``algorithm.vpo`` block can serve every estimator.
    """
    scores, ids = _scores(token_level_rewards, index)
    layout = group_layout(ids)
    options = vpo_options(config)
    reads = NORMALIZERS[get_method(method).normalizer].options
    specific = {name: options[name] for name in reads if options.get(name) is not None}
    grid = normalize_scalars(
        method,
        layout.to_grid(scores),
        std=options.get("std", "population"),
        eps=float(options.get("eps", 1e-6)),  # YAML may give "1e-6" as text
        **specific,
    )
    return _broadcast(layout.to_flat(grid), response_mask)


def maxrl(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None, config: Any = None, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """MaxRL: (x − mean)/(mean + eps) within each group, zero when the mean is 0."""
    return _per_group("maxrl", token_level_rewards, response_mask, index, config)


def max_at_k(
    token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any = None, config: Any = None, **kwargs: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Max@k: the z-score of the unbiased per-sample max@k weights (k = ``algorithm.vpo.k``, default G//2)."""
    return _per_group("max_at_k", token_level_rewards, response_mask, index, config)
