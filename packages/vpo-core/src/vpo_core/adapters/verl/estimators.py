"""Group estimators in veRL's registry signature, reusing vpo-core's implementations.

veRL hands an estimator the token-level rewards (the rollout scalar at the last response token),
the response mask and the group ids (``uid``); options come from ``config`` (= ``config.algorithm``)
under ``algorithm.vpo.*``. `grpo_pop` z-scores the flat batch directly (`vpo_core.layout.zscore_by_index`);
`normalizer_estimator` turns any registered normaliser into an estimator (``maxrl``, ``max_at_k``,
and the normalisers added by docs/adding-a-method.md), which `vpo_core.adapters.verl.plugin` registers.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import torch

from vpo_core.layout import group_layout, zscore_by_index
from vpo_core.methods import NORMALIZERS, Normalizer
from vpo_core.normalizers import apply_normalizer

__all__ = ["Estimator", "grpo_pop", "max_at_k", "maxrl", "normalizer_estimator", "vpo_options"]

Estimator = Callable[..., tuple[torch.Tensor, torch.Tensor]]
"""veRL's estimator signature: ``fn(token_level_rewards, response_mask, index=, config=, **kw) -> (adv, returns)``."""


def vpo_options(config: Any) -> dict[str, Any]:
    """The ``algorithm.vpo`` options as a plain dict (empty when absent)."""
    if config is None:
        return {}
    options = config.get("vpo", None) if hasattr(config, "get") else None
    return dict(options) if options else {}


def _std_eps(options: dict[str, Any]) -> tuple[Any, float]:
    """``std`` and ``eps`` of an ``algorithm.vpo`` block, with vpo-core's defaults (YAML may give eps as text)."""
    return options.get("std", "population"), float(options.get("eps", 1e-6))


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
    std, eps = _std_eps(vpo_options(config))
    return _broadcast(zscore_by_index(scores, ids, std=std, eps=eps), response_mask)


def _per_group(
    normalizer: Normalizer, token_level_rewards: torch.Tensor, response_mask: torch.Tensor, index: Any, config: Any
) -> tuple[torch.Tensor, torch.Tensor]:
    """Lay the flat batch out as (B, G) groups and apply a registered normaliser from vpo-core.

    Only the options that normaliser reads are passed on (``k`` for max_at_k, ``divide_by_n`` for
    maxrl), so one ``algorithm.vpo`` block can serve every estimator.
    """
    scores, ids = _scores(token_level_rewards, index)
    layout = group_layout(ids)
    options = vpo_options(config)
    std, eps = _std_eps(options)
    specific = {name: options[name] for name in normalizer.options if options.get(name) is not None}
    owner = f"veRL estimator for normaliser {normalizer.name!r}"
    grid = apply_normalizer(normalizer, layout.to_grid(scores), std=std, eps=eps, options=specific, owner=owner)
    return _broadcast(layout.to_flat(grid), response_mask)


def normalizer_estimator(normalizer: str, doc: str | None = None) -> Estimator:
    """A veRL advantage estimator that applies vpo-core's registered normaliser `normalizer` group by group.

    The normaliser is looked up once, here; its options are read from ``algorithm.vpo``.

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
