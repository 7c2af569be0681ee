"""``uv run apps/diagnose.py [key=value ...]``: the same command as ``vpo diagnose``."""

import sys

from vpo_core.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["diagnose", *sys.argv[1:]]))
