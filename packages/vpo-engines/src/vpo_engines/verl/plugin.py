"""Registrations for stock veRL, loaded in every process through the ``verl.plugins`` entry point.

veRL swallows plugin import errors (a DEBUG log line), so this module keeps its imports minimal and a
test imports it in a fresh process; ``check()`` raises if any registration is missing.
`register_estimator` is how a normaliser added outside vpo-core reaches veRL (docs/adding-a-method.md).
"""

from __future__ import annotations

from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls, register
from verl.trainer.ppo.core_algos import ADV_ESTIMATOR_REGISTRY, get_adv_estimator_fn, register_adv_est

from vpo_engines.verl import estimators, recipes
from vpo_engines.verl.reward import _make_manager_class

__all__ = ["ESTIMATORS", "REWARD_MANAGER", "check", "register_estimator"]

REWARD_MANAGER = "vpo"
ESTIMATORS: dict[str, estimators.Estimator] = {
    "grpo_pop": estimators.grpo_pop,
    "maxrl": estimators.maxrl,
    "max_at_k": estimators.max_at_k,
}
"""veRL estimator name -> vpo-core's function registered under it."""


def _register(name: str, fn: estimators.Estimator) -> None:
    if ADV_ESTIMATOR_REGISTRY.get(name) is not fn:
        register_adv_est(name)(fn)  # raises if veRL already has another estimator of that name
    ESTIMATORS[name] = fn


for _name, _fn in list(ESTIMATORS.items()):
    _register(_name, _fn)

try:
    get_reward_manager_cls(REWARD_MANAGER)
except ValueError:
    register(REWARD_MANAGER)(_make_manager_class())


def register_estimator(normalizer: str, name: str | None = None) -> estimators.Estimator:
    """Give a registered vpo-core normaliser a veRL advantage estimator, and route its methods to it.

    Registers `estimators.normalizer_estimator` under `name` in veRL's estimator registry and maps
    the normaliser to it in `recipes.ESTIMATORS`, so ``estimator_for(method)`` and therefore
    ``vpo train engine=verl`` pick it for every method that normalises with it. Registering the
    same normaliser under the same name again returns the estimator already registered.

    veRL computes advantages in its driver process, which imports only the ``verl.plugins`` entry
    points: call this from a module that such an entry point names (with the method's own
    registrations), as this module is for vpo-core's estimators.

    Args:
        normalizer: A name registered with `vpo_core.methods.register_normalizer`.
        name: veRL's ``algorithm.adv_estimator`` name; default: the normaliser's name.

    Returns:
        The estimator.

    Raises:
        ValueError: If the normaliser is unknown, or veRL or `recipes.ESTIMATORS` already maps the
            name or the normaliser to something else.
    """
    name = normalizer if name is None else name
    mapped = recipes.ESTIMATORS.get(normalizer)
    if mapped is not None:
        if mapped != name:
            raise ValueError(f"normaliser {normalizer!r} already runs as veRL estimator {mapped!r}, not {name!r}.")
        if name in ESTIMATORS:
            return ESTIMATORS[name]
    fn = estimators.normalizer_estimator(normalizer)
    _register(name, fn)
    recipes.ESTIMATORS[normalizer] = name
    return fn


def check() -> None:
    """Raise unless every registration resolves through veRL's own lookups."""
    for name, fn in ESTIMATORS.items():
        if get_adv_estimator_fn(name) is not fn:
            raise RuntimeError(f"veRL's estimator {name!r} is not vpo-core's.")
    get_reward_manager_cls(REWARD_MANAGER)
