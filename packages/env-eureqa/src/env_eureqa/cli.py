"""``env-eureqa`` / ``python -m env_eureqa``: render, export and score EUREQA tasks (see vpo_core.envcli).

Pass a local copy with ``env.data_dir=DIR``; without it the data come from the Hub.
"""

from __future__ import annotations

from collections.abc import Sequence

from env_eureqa._env import EureqaEnv
from vpo_core import envcli

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``env-eureqa`` command."""
    return envcli.main(EureqaEnv, argv, prog="env-eureqa")
