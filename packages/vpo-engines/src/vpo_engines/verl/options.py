"""The run's ``algorithm.vpo`` block as one `AdvantageConfig`, for the reward manager and the estimators.

The launcher writes the block (``seed``, ``num_weights``, ``alpha``, ``weight_sampler``, and ``k`` when
given; a user may add ``std``, ``eps``, ``divide_by_n``, ...). Its option names are read in one place,
`vpo_core.advantages.AdvantageConfig.from_mapping`; this module finds the block in veRL's config and
keeps one record per (method, m, block), so a reward worker parses the block once, not per trajectory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vpo_core.advantages import AdvantageConfig
from vpo_core.methods import METHODS

__all__ = ["advantage_config", "normalizer_config", "vpo_block"]

_CACHE: dict[tuple[str, int | None, tuple[tuple[str, str], ...]], AdvantageConfig] = {}
_CACHE_SIZE = 64


def vpo_block(config: Any) -> dict[str, Any]:
    """The ``vpo`` block of veRL's algorithm config (``config.algorithm``) as a plain dict; empty when absent."""
    if config is None:
        return {}
    block = config.get("vpo", None) if hasattr(config, "get") else None
    return dict(block) if block else {}


def advantage_config(block: Mapping[str, Any], *, method: str, m: int | None = None) -> AdvantageConfig:
    """The `AdvantageConfig` of an ``algorithm.vpo`` block for one method (and m), made once and kept.

    Args:
        block: The block (`vpo_block`).
        method: A name of `vpo_core.METHODS` (the reward manager: the row's ``extra_info["method"]``).
        m: Candidates per completion; default the method's.

    Raises:
        ValueError: For an unknown method or a value out of range (`AdvantageConfig.from_mapping`).
    """
    key = (method, m, tuple(sorted((str(name), repr(value)) for name, value in block.items())))
    config = _CACHE.get(key)
    if config is None:
        config = AdvantageConfig.from_mapping(block, method=method, m=m)
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.clear()
        _CACHE[key] = config
    return config


def normalizer_config(block: Mapping[str, Any], normalizer: str) -> AdvantageConfig:
    """The `AdvantageConfig` an estimator reads: the block's options for the first method that uses `normalizer`.

    A veRL estimator is chosen by the normaliser (`vpo_engines.verl.recipes.estimator_for`), not by the
    method, and what it reads (std, eps, the normaliser's own options) depends on the normaliser only, so
    the record of any method that normalises with it carries the same values.

    Raises:
        ValueError: If no registered method normalises with `normalizer`, or as `advantage_config`.
    """
    for name, record in METHODS.items():
        if record.normalizer == normalizer:
            return advantage_config(block, method=name)
    raise ValueError(
        f"no registered method normalises with {normalizer!r}; register one (vpo_core.methods.register_method"
        f"(..., normalizer={normalizer!r})) before training with its estimator."
    )
