"""vpo-search: test-time search (OpenEvolve) with a served checkpoint over any env that can evaluate programs."""

import importlib.metadata as _metadata

try:  # single source: [project] version in pyproject.toml, read from the installed metadata
    __version__ = _metadata.version("vpo-search")
except _metadata.PackageNotFoundError:  # pragma: no cover - a source tree on sys.path, not installed
    __version__ = "0+unknown"
