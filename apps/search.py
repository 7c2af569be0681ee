"""Test-time search with OpenEvolve on an env's hardest problems (the paper's LiveCodeBench case study).

    uv sync --inexact --group search
    uv run apps/search.py arm=vpo base_url=http://127.0.0.1:8000/v1 env.data_dir=DATA pools=results/eval
    uv run apps/search.py report

See `uv run apps/search.py --help` and packages/vpo-search/README.md.
"""

from __future__ import annotations

import sys

from vpo_search.cli import main

if __name__ == "__main__":
    sys.exit(main())
