"""Group estimators in veRL's registry signature, reusing vpo-core's implementations.

veRL hands an estimator the token-level rewards (the rollout scalar at the last response token),
the response mask and the group ids (``uid``); options come from ``config`` (= ``config.algorithm``)
under ``algorithm.vpo.*``, read into one `AdvantageConfig` (`vpo_engines.verl.options`). `grpo_pop`
z-scores the flat batch directly (`vpo_core.layout.zscore_by_index`); `normalizer_estimator` turns any registered normaliser into an estimator (``maxrl``, ``max_at_k``,
and the normalisers added by docs/adding-a-method.md), which `vpo_engines.verl.plugin` registers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from vpo_core.advantages import normalize_scalars
from vpo_core.layout import group_layout, zscore_by_index
from vpo_core.methods import NORMALIZERS, Normalizer
from vpo_engines.verl.options import normalizer_config, vpo_block

__all__ = ["Estimator", "grpo_pop", "max_at_k", "maxrl", "normalizer_estimator"]

Estimator = Callable[..., tuple[torch.Tensor, torch.Tensor]]
"""veRL's estimator signature: ``fn(token_level_rewards, response_mask, index=, config=, **kw) -> (adv, returns)``."""


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
    options = normalizer_config(vpo_block(config), "zscore")
    return _broadcast(zscore_by_index(scores, ids, std=options.std, eps=options.eps), response_mask)


def _per_group(
    normalizer: Normalizer, token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any, config: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lay the flat batch out as (B, G) groups and apply a registered normaliser from vpo-core.

    The ``algorithm.vpo`` block becomes one `AdvantageConfig` (`normalizer_config`), which keeps only the
    options that normaliser reads (``k`` for max_at_k, ``divide_by_n`` for maxrl), so one block can serve
    every estimator.
    """
    scores, ids = _scores(token_level_rewards, index)
    layout = group_layout(ids)
    options = normalizer_config(vpo_block(config), normalizer.name)
    return _broadcast(layout.to_flat(normalize_scalars(layout.to_grid(scores), options)), response_mask)


def normalizer_estimator(normalizer: str, doc: str | None = None) -> Estimator:
    """A veRL advantage estimator that applies vpo-core's registered normaliser `normalizer` group by group.

    The normaliser is looked up once, here; its options are read from ``algorithm.vpo`` (`normalizer_config`).

    Args:
        normalizer: A name registered with `vpo_core.methods.register_normalizer`.
        doc: The estimator's docstring (default: one naming the normaliser).

    Returns:
        ``fn(token_level_rewards (N, T), response_mask (N, T), index (N,), config) -> (advantages, returns)``,
        both (N, T): each rollout's advantage on its valid tokens.

    Raises:
        ValueError: If the normaliser is not registered.
    """
    if normalizer not in NORMALIZERS:
        raise ValueError(f"normaliser {normalizer!r} is not registered; registered: {sorted(NORMALIZERS)}.")
    record = NORMALIZERS[normalizer]

    def estimator(
        token_level_rewards: torch.Tensor,
        response_mask: torch.Tensor,
        index: Any = None,
        config: Any = None,
        **kwargs: Any,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        return _per_group(record, token_level_rewards, response_mask, index, config)

    estimator.__name__ = estimator.__qualname__ = normalizer
    estimator.__doc__ = doc or f"vpo-core's {normalizer!r} group normaliser, as a veRL advantage estimator."
    return estimator


maxrl = normalizer_estimator("maxrl", "MaxRL: (x − mean)/(mean + eps) within each group, zero when the mean is 0.")
max_at_k = normalizer_estimator(
    "max_at_k", "Max@k: the z-score of the unbiased per-sample max@k weights (k = ``algorithm.vpo.k``, default G//2)."
)
