"""env-lcb: LiveCodeBench-style code generation with per-test vector rewards and a hardened sandbox (``lcb-v1``)."""

from env_lcb._config import LcbConfig
from env_lcb._data import Problem
from env_lcb._env import LCB_SPEC, LcbEnv, extract_code
from env_lcb.sandbox import GradeResult, Sandbox, SandboxError, grade
from vpo_core.versions import installed_version

__all__ = [
    "LCB_SPEC",
    "GradeResult",
    "LcbConfig",
    "LcbEnv",
    "Problem",
    "Sandbox",
    "SandboxError",
    "extract_code",
    "grade",
]
__version__ = installed_version("env-lcb")  # single source: [project] version in pyproject.toml
