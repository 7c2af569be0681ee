"""``uv run apps/train.py [engine=local|verl|trl] [key=value ...]``: the same command as ``vpo train``."""

import sys

from vpo_engines.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["train", *sys.argv[1:]]))
