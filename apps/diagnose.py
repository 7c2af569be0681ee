"""``uv run apps/diagnose.py [key=value ...]``: the same command as ``vpo diagnose``."""

import sys

from vpo_engines.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["diagnose", *sys.argv[1:]]))
