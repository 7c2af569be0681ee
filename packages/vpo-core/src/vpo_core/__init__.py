"""vpo-core: the vector-reward environment protocol, VPO and every baseline estimator, and metrics.

The base install needs numpy only; the gymnasium view imports gymnasium lazily. What runs models over this
library (the model floor, the local, TRL and veRL engines, ``vpo eval`` and the ``vpo`` command) is the
vpo-engines package.
"""

from vpo_core.advantages import AdvantageConfig, compute_advantages
from vpo_core.batch import RolloutBatch, score_groups
from vpo_core.env import ScoredCompletion, TextEnv, goal_suffix
from vpo_core.methods import METHODS, Method, get_method
from vpo_core.profile import EnvProfile, Generation, VerlRecipe
from vpo_core.registry import list_envs, make
from vpo_core.spec import RewardSpec
from vpo_core.types import Candidate, Message, Mode, Task
from vpo_core.versions import installed_version

__all__ = [
    "METHODS",
    "AdvantageConfig",
    "Candidate",
    "EnvProfile",
    "Generation",
    "Message",
    "Method",
    "Mode",
    "RewardSpec",
    "RolloutBatch",
    "ScoredCompletion",
    "Task",
    "TextEnv",
    "VerlRecipe",
    "compute_advantages",
    "get_method",
    "goal_suffix",
    "list_envs",
    "make",
    "score_groups",
]
__version__ = installed_version("vpo-core")  # single source: [project] version in pyproject.toml
