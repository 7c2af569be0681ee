#!/usr/bin/env bash
# Part of miniature v2's grid on one GPU machine (issue 21): the runner's pending jobs of one start, run with
# device=cuda, until DEADLINE seconds have passed; then the runner collects what is finished into the committed
# results folder and returns it as one archive (its out/done markers, pools, run configs and metrics, index).
# The warm starts come from results/maze-v1-miniature-v2/warm/ (tracked; the runner restores them) and the jobs
# finished earlier are skipped by their out/done markers, so nothing under runs/ needs carrying. Unpacked in the
# checkout (tar -xzf grid.tar.gz), the CPU grid counts these jobs as done (markers ignore device=).
#
#   device run: bash results/maze-v1-miniature-v2/gpu/grid.sh   (carry .whl: the vpo-core and env-maze wheels built
#               from this checkout, `uv build --package vpo-core --wheel -o .whl` and the same for env-maze, and the
#               local extra's packages the machine lacks: transformers 5.9.0, tokenizers 0.22.2, omegaconf 2.3.1,
#               antlr4-python3-runtime 4.9.3, as `pip download` gets them for Python 3.12; the same for run.sh)
#   START=random METHODS=grpo,multi_rlvr,vpo JOBS=3 DEADLINE=480 (the defaults)
#
# Choose a start the CPU is not running at the same time. The first use (2026-11-26) ran START=random
# METHODS=grpo,vpo JOBS=2 DEADLINE=330 and lost its VPO run to a warm-start marker that named another method
# (since fixed: a warm start's method= is not part of its identity) and GRPO's final evaluation to the deadline.
set -u
OUT=${OUT:-/tmp/out}
START=${START:-random}
METHODS=${METHODS:-grpo,multi_rlvr,vpo}
JOBS=${JOBS:-3}
DEADLINE=${DEADLINE:-480}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
W=runs/experiment-maze-v1-v2
t0=$(date +%s)
timeout "$DEADLINE" python3 apps/experiment.py env=maze-v1 recipe=v2 starts="$START:env.demonstrations=$START" \
  methods="$METHODS" jobs="$JOBS" train="hidden_size=192 layers=4 heads=4 device=cuda" > "$OUT/experiment.log" 2>&1
echo "runner rc $? in $(( $(date +%s) - t0 ))s"
tail -20 "$OUT/experiment.log"
python3 apps/experiment.py env=maze-v1 recipe=v2 starts="$START:env.demonstrations=$START" methods="$METHODS" \
  collect_only=true >> "$OUT/experiment.log" 2>&1
tar -czf "$OUT/grid.tar.gz" results/maze-v1-miniature-v2/done results/maze-v1-miniature-v2/pools \
  results/maze-v1-miniature-v2/runs results/maze-v1-miniature-v2/index.json $W/logs 2>/dev/null
ls -la "$OUT"
