#!/usr/bin/env bash
# Time the default local run (`uv run apps/train.py`, no arguments) of one checkout.
#
#   benchmarks/bench_default_run.sh [REF] [OUT_JSON]
#
# REF is a git ref of this repository (default HEAD) or a directory holding a checkout. A ref is
# exported with `git archive` into a temporary directory (the repository is not touched); its sources
# run in this checkout's virtual environment, put first on PYTHONPATH so they shadow the editable
# installs (the dependencies must be the same, as they are between nearby commits). Prints and
# optionally writes one JSON line: ref, wall seconds, the run's own phase timings (where its report
# has them: report.json "phase_seconds") and whether the trained model beat the warm start.
#
# BENCH_ARGS="key=value ..." adds arguments (for a quick check of the script itself, e.g.
# BENCH_ARGS="warmup_steps=2 steps=1 eval_tasks=2"); the benchmark proper uses none.
#
# Old against new, interleaved on a quiet machine, e.g.:
#   for i in 1 2; do for ref in 0cf79ee HEAD; do benchmarks/bench_default_run.sh $ref; done; done
set -euo pipefail
ref="${1:-HEAD}"
out_json="${2:-}"
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d /tmp/bench_default_run.XXXXXX)"
trap 'rm -rf "$work"' EXIT
if [ -d "$ref" ]; then
  src="$(cd "$ref" && pwd)"
else
  git -C "$repo" archive "$ref" | tar -x -C "$work"
  src="$work"
fi
paths="$(ls -d "$src"/packages/*/src | tr '\n' ':')"
start=$(date +%s.%N)
(cd "$work" && PYTHONPATH="$paths" "$repo/.venv/bin/python" "$src/apps/train.py" ${BENCH_ARGS:-} out="$work/run" >"$work/stdout.txt" 2>"$work/stderr.txt") || {
  tail -20 "$work/stderr.txt" >&2
  exit 1
}
end=$(date +%s.%N)
line="$("$repo/.venv/bin/python" - "$ref" "$start" "$end" "$work/run/report.json" <<'PY'
import json, sys
ref, start, end, report = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
data = json.load(open(report))
print(json.dumps({
    "ref": ref,
    "wall_s": round(end - start, 1),
    "phase_seconds": data.get("phase_seconds"),
    "learned": data.get("learned"),
    "mean_w_star": [data.get("warm_started", {}).get("mean_w_star"), data.get("after_rl", {}).get("mean_w_star")],
}))
PY
)"
echo "$line"
if [ -n "$out_json" ]; then echo "$line" >>"$out_json"; fi
