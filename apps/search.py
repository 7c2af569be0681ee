"""``uv run apps/search.py [run|select|report] [key=value ...]``: the same command as ``vpo search``."""

import sys

from vpo_engines.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["search", *sys.argv[1:]]))
