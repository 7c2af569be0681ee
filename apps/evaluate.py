"""``uv run apps/evaluate.py [key=value ...]``: the same command as ``vpo eval`` (and ``vpo-eval``)."""

import sys

from vpo_engines.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["eval", *sys.argv[1:]]))
