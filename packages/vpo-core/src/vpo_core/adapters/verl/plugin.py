"""Registrations for stock veRL, loaded in every process through the ``verl.plugins`` entry point.

veRL swallows plugin import errors (a DEBUG log line), so this module keeps its imports minimal and a
test imports it in a fresh process; ``check()`` raises if any registration is missing.
"""

from __future__ import annotations

from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls, register
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_adv_estimator_fn, register_adv_est

from vpo_core.adapters.verl import estimators
from vpo_core.adapters.verl.reward import _make_manager_class

__all__ = ["ESTIMATORS", "REWARD_MANAGER", "check"]

REWARD_MANAGER = "vpo"
ESTIMATORS = {"grpo_pop": estimators.grpo_pop, "maxrl": estimators.maxrl, "max_at_k": estimators.max_at_k}

for _name, _fn in ESTIMATORS.items():
    if ADV_ESTIMATOR_REGISTRY.get(_name) is not _fn:
        register_adv_est(_name)(_fn)

try:
    get_reward_manager_cls(REWARD_MANAGER)
except ValueError:
    register(REWARD_MANAGER)(_make_manager_class())


def check() -> None:
    """Raise unless every registration resolves through veRL's own lookups."""
    for name, fn in ESTIMATORS.items():
        if get_adv_estimator_fn(name) is not fn:
            raise RuntimeError(f"veRL's estimator {name!r} is not vpo-core's.")
    get_reward_manager_cls(REWARD_MANAGER)
