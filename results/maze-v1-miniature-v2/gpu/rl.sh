#!/usr/bin/env bash
# Part of miniature v2's grid on one GPU (issue 21): the runner's jobs for the random start's GRPO and
# VPO seed 0 (300 RL steps, evaluated at 50 / 150 / 300), run with device=cuda from the warm starts made
# by run.sh (carried in runs/experiment-maze-v1-v2/). The runner's markers ignore device=, so the CPU grid
# counts these jobs as done. Returns one archive of the markers, evaluations, run configs and metrics.
set -u
OUT=${OUT:-/tmp/out}
DEADLINE=${DEADLINE:-330}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
W=runs/experiment-maze-v1-v2
t0=$(date +%s)
timeout "$DEADLINE" python3 apps/experiment.py env=maze-v1 recipe=v2 starts="random:env.demonstrations=random" \
  methods=grpo,vpo main_seeds=1 jobs=2 train="hidden_size=192 layers=4 heads=4 device=cuda" > "$OUT/experiment.log" 2>&1
echo "runner rc $? in $(( $(date +%s) - t0 ))s"
tail -12 "$OUT/experiment.log"
for r in $W/random/*-seed0; do tail -c 300 $W/logs/random__$(basename $r).log; echo; done
tar -czf "$OUT/rl.tar.gz" $W/done $W/eval/random $W/logs $W/random/*-seed0/config.json $W/random/*-seed0/metrics.jsonl \
  $W/random/*-seed0/report.json 2>/dev/null
ls -la "$OUT"
