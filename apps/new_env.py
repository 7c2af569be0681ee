"""Create a new env package: ``uv run apps/new_env.py NAME`` (same as ``python -m vpo_core.scaffold NAME``).

uv run apps/new_env.py count        # packages/env-count/, env id count-v1, class CountEnv
"""

from __future__ import annotations

import sys

from vpo_core.scaffold import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
