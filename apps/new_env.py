"""``uv run apps/new_env.py name=NAME``: the same command as ``vpo new-env name=NAME``."""

import sys

from vpo_engines.cli import main

if __name__ == "__main__":
    raise SystemExit(main(["new-env", *sys.argv[1:]]))
