"""`installed_version`: a package's version, single-sourced in its ``pyproject.toml``.

Every workspace package sets ``__version__ = installed_version("<distribution>")`` in its ``__init__``, so the
version is written once ([project] version) and read from the installed metadata.
"""

from __future__ import annotations

import importlib.metadata

__all__ = ["UNKNOWN_VERSION", "installed_version"]

UNKNOWN_VERSION = "0+unknown"
"""The version of a source tree put on ``sys.path`` without being installed (no metadata to read)."""


def installed_version(distribution: str) -> str:
    """The installed version of `distribution` (e.g. ``"env-maze"``), or `UNKNOWN_VERSION` when it is not installed."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
        return UNKNOWN_VERSION
