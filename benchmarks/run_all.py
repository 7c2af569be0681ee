"""Re-measure every figure of BENCHMARKS.md (one core each, sequentially).

uv run python benchmarks/run_all.py
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [
    "benchmarks/bench_core.py",
    "benchmarks/bench_parsers.py",
    "packages/env-maze/benchmarks/bench_maze.py",
    "packages/env-musique/benchmarks/bench_musique.py",
    "packages/env-eureqa/benchmarks/bench_eureqa.py",
    "packages/env-toolrl/benchmarks/bench_toolrl.py",
    "packages/env-lcb/benchmarks/bench_sandbox.py",
]


def main() -> int:
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", HF_DATASETS_OFFLINE="1")
    for script in SCRIPTS:
        print(f"\n## {script}\n", flush=True)
        result = subprocess.run([sys.executable, str(ROOT / script)], env=env, capture_output=True, text=True)
        print(result.stdout.strip())
        if result.returncode != 0:
            print(result.stderr[-2000:], file=sys.stderr)
            return result.returncode
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
