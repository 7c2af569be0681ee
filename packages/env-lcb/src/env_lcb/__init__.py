"""env-lcb: LiveCodeBench-style code generation with per-test vector rewards and a hardened sandbox (``lcb-v1``)."""

import importlib.metadata as _metadata

from env_lcb._config import LcbConfig
from env_lcb._data import Problem
from env_lcb._env import LCB_SPEC, LcbEnv, extract_code
from env_lcb.sandbox import GradeResult, Sandbox, SandboxError, grade

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
try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("env-lcb")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
