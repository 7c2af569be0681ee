"""``env-musique`` / ``python -m env_musique``: render, export and score MuSiQue tasks (see vpo_core.envcli).

Pass a local copy with ``env.data_dir=DIR``; without it the data come from the Hub.
"""

from __future__ import annotations

from collections.abc import Sequence

from env_musique._env import MusiqueEnv
from vpo_core import envcli

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``env-musique`` command."""
    return envcli.main(MusiqueEnv, argv, prog="env-musique")
