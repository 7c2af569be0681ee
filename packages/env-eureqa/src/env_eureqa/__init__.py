"""env-eureqa: EUREQA 5-hop entity chains with a per-entity exact-match vector reward (``eureqa-v1``)."""

import importlib.metadata as _metadata

from env_eureqa._env import EUREQA_SPEC, EureqaEnv, EureqaTask
from env_eureqa._reward import parse_entities, score_entities

__all__ = ["EUREQA_SPEC", "EureqaEnv", "EureqaTask", "parse_entities", "score_entities"]
try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("env-eureqa")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
