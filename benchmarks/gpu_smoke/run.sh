#!/usr/bin/env bash
# The GPU smoke check (run.py's docstring says what it measures), on a machine with torch and transformers but
# no uv and no package index:
#     bash benchmarks/gpu_smoke/run.sh [run.py options]          # JSON: $OUT/gpu_smoke.json where OUT is set
# The wheels fetch_wheels.py downloads (TRL, datasets, dill, multiprocess: benchmarks/gpu_smoke/wheels/, carried
# by the device tool) are installed into a private folder first; without them the TRL part is skipped and said so.
# PYTHON picks the interpreter (default python3), GPU_SMOKE_WHEELS another folder of wheels.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
shopt -s nullglob
wheels=("${GPU_SMOKE_WHEELS:-$here/wheels}"/*.whl)
if ((${#wheels[@]})); then
    site="$(mktemp -d "${TMPDIR:-/tmp}/vpo-gpu-smoke-site.XXXXXX")"
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "${wheels[@]}"
    export PYTHONPATH="$site${PYTHONPATH:+:$PYTHONPATH}"
    echo "installed ${#wheels[@]} carried wheels into $site" >&2
fi
export PYTHONUNBUFFERED=1
status=0
"$python" "$here/run.py" "$@" || status=$?
if [[ -n "${site:-}" ]]; then rm -rf "$site"; fi
exit "$status"
