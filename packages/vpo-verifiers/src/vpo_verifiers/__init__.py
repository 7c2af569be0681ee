"""vpo-verifiers: any registered VPO env as a verifiers 0.4 environment module.

``vf-eval vpo-verifiers --env.taskset.env maze-v1 --env.taskset.m 3`` (with verifiers installed) evaluates a
served model on the env's prompts: the env's reward dimensions are verifiers' named rewards, weighted by w*.
Importing this package needs no verifiers; the verifiers classes (`VPOTaskset`, `VPOChatHarness`, ...) load on
first access from `vpo_verifiers.taskset`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from vpo_core.versions import installed_version
from vpo_verifiers._core import SET_REWARDS, SetReward, named_rewards

if TYPE_CHECKING:
    from vpo_verifiers.taskset import VPOChatHarness, VPOEnv, VPOTaskset

# verifiers' loader takes the one Taskset subclass that `__all__` exports, and with it the one Harness subclass
# (the taskset's default harness) and the one Env subclass (the env that runs it); the rest are plain helpers.
__all__ = ["SET_REWARDS", "SetReward", "VPOChatHarness", "VPOEnv", "VPOTaskset", "named_rewards"]

__version__ = installed_version("vpo-verifiers")  # single source: [project] version in pyproject.toml

_FROM_TASKSET = frozenset(
    {
        "VPOChatHarness",
        "VPOChatHarnessConfig",
        "VPOEnv",
        "VPOEnvConfig",
        "VPOTask",
        "VPOTaskData",
        "VPOTaskset",
        "VPOTasksetConfig",
    }
)


def __getattr__(name: str) -> Any:
    """The verifiers classes, imported from `vpo_verifiers.taskset` on first access (it needs verifiers)."""
    if name in _FROM_TASKSET:
        from vpo_verifiers import taskset

        return getattr(taskset, name)
    raise AttributeError(f"module 'vpo_verifiers' has no attribute {name!r}")
