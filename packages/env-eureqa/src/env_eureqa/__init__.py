"""env-eureqa: EUREQA 5-hop entity chains with a per-entity exact-match vector reward (``eureqa-v1``)."""

from env_eureqa._env import EUREQA_SPEC, EureqaEnv, EureqaTask
from env_eureqa._reward import parse_entities, score_entities
from vpo_core.versions import installed_version

__all__ = ["EUREQA_SPEC", "EureqaEnv", "EureqaTask", "parse_entities", "score_entities"]
__version__ = installed_version("env-eureqa")  # single source: [project] version in pyproject.toml
