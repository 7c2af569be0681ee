"""``env-ultrafeedback`` / ``python -m env_ultrafeedback``: render, export and score tasks (see vpo_core.envcli)."""

from __future__ import annotations

from collections.abc import Sequence

from env_ultrafeedback._env import UltrafeedbackEnv
from vpo_core import envcli

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``env-ultrafeedback`` command."""
    return envcli.main(UltrafeedbackEnv, argv, prog="env-ultrafeedback")
