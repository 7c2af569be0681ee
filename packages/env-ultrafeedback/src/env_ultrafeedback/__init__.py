"""env-ultrafeedback: UltraFeedback prompts scored by ArmoRM on 5 dimensions (``ultrafeedback-v1``)."""

import importlib.metadata as _metadata

from env_ultrafeedback._env import SPEC, UltrafeedbackEnv
from env_ultrafeedback._profile import PROFILE
from env_ultrafeedback._scorer import ARMORM_ID, DIMENSIONS, OBJECTIVE_INDICES, RewardScorer, WeightsNotFoundError
from env_ultrafeedback._server import ScorerClient, ScoringServer, ScoringServerError

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
try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("env-ultrafeedback")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
