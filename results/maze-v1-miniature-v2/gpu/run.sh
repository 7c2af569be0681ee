#!/usr/bin/env bash
# Miniature v2's warm starts on one GPU (issue 21), run from the repository root on the device machine:
#   1. probe: steady-state seconds per warm-up step of each model size, all probes at once (probe.py);
#   2. the grid's four warm starts (random / direct x single / multi, 2.5M parameters) through the
#      experiment runner (`only=warm`, `warm_train="device=cuda warmup_steps=N warmup_batch=64"`, N sized
#      from the probe to fill WARM_SECONDS), and beside them three calibration warm-ups (multi, random):
#      batch 256, a 5M and a 15M model; then every warm start evaluated (T = 0.7, 384 / 128 tokens);
#   3. the seconds per RL step on the GPU (VPO multi, GRPO single; 6 steps each from the new warm start).
# Results go to $OUT (the device tool's folder; /tmp/out elsewhere). Needs the wheels in .whl/ (vpo-core,
# env-maze, and the local extra's packages that the machine lacks).
set -u
OUT=${OUT:-/tmp/out}
WARM_SECONDS=${WARM_SECONDS:-210}
mkdir -p "$OUT"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false
G=results/maze-v1-miniature-v2/gpu
W=runs/experiment-maze-v1-v2
C=runs/gpu-calib
L=$OUT/logs
mkdir -p "$L" "$C"
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader; nproc
  python3 -c "import torch, transformers; print(torch.__version__, transformers.__version__, torch.cuda.is_available())"; } > "$L/machine.txt" 2>&1
cat "$L/machine.txt"

# 1. probes (seven at once, as the warm-ups will run)
t0=$(date +%s)
probe() { python3 $G/probe.py "$@" >> "$L/probe.jsonl" 2>> "$L/probe.err"; }
probe grid-multi-a mode_method=multi_rlvr & probe grid-multi-b mode_method=multi_rlvr &
probe grid-single-a mode_method=grpo & probe grid-single-b mode_method=grpo &
probe b256 mode_method=multi_rlvr warmup_batch=256 &
probe h256L6 mode_method=multi_rlvr hidden_size=256 layers=6 heads=4 &
probe h384L8 mode_method=multi_rlvr hidden_size=384 layers=8 heads=6 &
wait
cat "$L/probe.jsonl"; tail -3 "$L/probe.err"
steps_for() {  # steps of 500 that fill WARM_SECONDS at the slowest probe whose name starts with $1
  python3 - "$1" "$WARM_SECONDS" "$L/probe.jsonl" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[3]) if l.startswith("{")]
t = max(r["seconds_per_step"] for r in rows if r["name"].startswith(sys.argv[1]))
print(max(500, min(20000, int(float(sys.argv[2]) / t) // 500 * 500)))
PY
}
N=$(steps_for grid); NB=$(steps_for b256); N6=$(steps_for h256L6); N8=$(steps_for h384L8)
NB=$((NB < N ? NB : N)); N6=$((N6 < N ? N6 : N)); N8=$((N8 < N ? N8 : N))
echo "probe $(( $(date +%s) - t0 ))s; steps: grid $N, b256 $NB, h256L6 $N6, h384L8 $N8" | tee "$L/steps.txt"

# 2. warm-ups: the grid's four through the runner, three calibration warm-ups beside them
t0=$(date +%s)
python3 apps/experiment.py env=maze-v1 recipe=v2 only=warm jobs=4 \
  warm_train="device=cuda warmup_steps=$N warmup_batch=64" > "$L/experiment.log" 2>&1 &
calib() {  # name steps batch size-options...
  local name=$1 steps=$2 batch=$3; shift 3
  python3 -m vpo_engines.local train method=multi_rlvr seed=0 steps=0 eval_tasks=0 threads=1 device=cuda \
    warmup_steps=$steps warmup_batch=$batch "$@" out=$C/$name > "$L/calib-$name.log" 2>&1 \
  && python3 -m vpo_engines.local evaluate env=maze-v1 checkpoints=$C/$name@init tasks=50 samples=30 \
    max_new_tokens=384 out=$C/eval-$name > "$L/calib-eval-$name.log" 2>&1
}
calib b256-w$NB $NB 256 hidden_size=192 layers=4 heads=4 &
calib h256L6-w$N6 $N6 64 hidden_size=256 layers=6 heads=4 &
calib h384L8-w$N8 $N8 64 hidden_size=384 layers=8 heads=6 &
# same size and steps as the grid's multi warm start, evaluated on the calibration's 50 mazes
calib h192L4-w$N $N 64 hidden_size=192 layers=4 heads=4 &
wait
echo "warm-ups and evaluations $(( $(date +%s) - t0 ))s" | tee -a "$L/steps.txt"
tail -3 "$L/experiment.log"

# 3. RL seconds per step on the GPU from the new warm starts
t0=$(date +%s)
python3 -m vpo_engines.local train method=vpo model=$W/random/warm-multi-seed0/init_model steps=6 \
  max_new_tokens=384 device=cuda eval_tasks=0 out=/tmp/rl-vpo > "$L/rl-vpo.log" 2>&1 &
python3 -m vpo_engines.local train method=grpo model=$W/random/warm-single-seed0/init_model steps=6 \
  max_new_tokens=128 device=cuda eval_tasks=0 out=/tmp/rl-grpo > "$L/rl-grpo.log" 2>&1 &
wait
cp /tmp/rl-vpo/metrics.jsonl "$L/rl-vpo-metrics.jsonl" 2>/dev/null; cp /tmp/rl-grpo/metrics.jsonl "$L/rl-grpo-metrics.jsonl" 2>/dev/null
echo "rl timing $(( $(date +%s) - t0 ))s" | tee -a "$L/steps.txt"

# what comes back: each grid warm start (model, config, loss) and one archive of the rest
for d in $W/*/warm-*-seed0; do
  tar -cf "$OUT/$(basename "$(dirname "$d")")-$(basename "$d").tar" "$d"
done
tar -czf "$OUT/rest.tar.gz" "$L" $W/done $W/logs $W/eval $C/*/warmup_loss.json $C/*/config.json $C/eval-* 2>/dev/null
ls -la "$OUT"
