"""``env-toolrl`` / ``python -m env_toolrl``: render, export and score ToolRL tasks (see vpo_core.envcli).

Pass the data folder with ``env.data_dir=DIR`` (or set ``VPO_TOOLRL_DIR``).
"""

from __future__ import annotations

from collections.abc import Sequence

from env_toolrl._env import ToolRLEnv
from vpo_core import envcli

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``env-toolrl`` command."""
    return envcli.main(ToolRLEnv, argv, prog="env-toolrl")
