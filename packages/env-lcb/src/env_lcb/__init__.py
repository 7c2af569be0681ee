"""env-lcb: LiveCodeBench-style code generation with per-test vector rewards and a hardened sandbox (``lcb-v1``)."""

from env_lcb._data import Problem
from env_lcb._env import LCB_SPEC, LcbEnv, extract_code
from env_lcb.sandbox import GradeResult, Sandbox, SandboxError, grade

__all__ = ["LCB_SPEC", "GradeResult", "LcbEnv", "Problem", "Sandbox", "SandboxError", "extract_code", "grade"]
__version__ = "0.1.0"
