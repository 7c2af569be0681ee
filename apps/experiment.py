"""Run the methods × seeds grid of an env on the local engine and summarise it with intervals.

    uv run apps/experiment.py env=maze-v1               # everything in RESULTS.md's miniature, resumable
    uv run apps/experiment.py env=maze-v1 dry_run=true  # list the jobs and which are done
    uv run apps/experiment.py --help                    # every option

Shared warm starts per (prompt mode, seed), RL runs per (method, seed), evaluation of every model,
then `results/<env>-miniature/` (pools, per-step metrics, configs, table.md, summary.json, plots).
"""

from __future__ import annotations

import sys

from vpo_lab.experiment import main

if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
