"""env-ultrafeedback: UltraFeedback prompts scored by ArmoRM on 5 dimensions (``ultrafeedback-v1``)."""

from env_ultrafeedback._env import SPEC, UltrafeedbackEnv
from env_ultrafeedback._profile import PROFILE
from env_ultrafeedback._scorer import ARMORM_ID, DIMENSIONS, OBJECTIVE_INDICES, RewardScorer, WeightsNotFoundError
from env_ultrafeedback._server import ScorerClient, ScoringServer, ScoringServerError
from vpo_core.versions import installed_version

__all__ = [
    "ARMORM_ID",
    "DIMENSIONS",
    "OBJECTIVE_INDICES",
    "PROFILE",
    "SPEC",
    "RewardScorer",
    "ScorerClient",
    "ScoringServer",
    "ScoringServerError",
    "UltrafeedbackEnv",
    "WeightsNotFoundError",
]
__version__ = installed_version("env-ultrafeedback")  # single source: [project] version in pyproject.toml
