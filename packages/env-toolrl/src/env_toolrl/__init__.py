"""env-toolrl: ToolRL (rlla_4k) tool calling with the VPO paper's 4-dim vector reward (``toolrl-v1``)."""

from env_toolrl._env import TOOLRL_SPEC, ToolRLEnv, ToolTask
from env_toolrl._reward import score_reply, value_match
from vpo_core.versions import installed_version

__all__ = ["TOOLRL_SPEC", "ToolRLEnv", "ToolTask", "score_reply", "value_match"]
__version__ = installed_version("env-toolrl")  # single source: [project] version in pyproject.toml
