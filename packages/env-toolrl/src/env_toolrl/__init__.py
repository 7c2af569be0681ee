"""env-toolrl: ToolRL (rlla_4k) tool calling with the VPO paper's 4-dim vector reward (``toolrl-v1``)."""

import importlib.metadata as _metadata

from env_toolrl._env import TOOLRL_SPEC, ToolRLEnv, ToolTask
from env_toolrl._reward import score_reply, value_match

__all__ = ["TOOLRL_SPEC", "ToolRLEnv", "ToolTask", "score_reply", "value_match"]
try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("env-toolrl")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
