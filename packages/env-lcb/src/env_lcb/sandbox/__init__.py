"""A sandbox for untrusted Python programs: bubblewrap + rlimits + seccomp, fork per test."""

from env_lcb.sandbox.host import GradeResult, Sandbox, SandboxError, compare_stdout, default_sandbox, grade

__all__ = ["GradeResult", "Sandbox", "SandboxError", "compare_stdout", "default_sandbox", "grade"]
