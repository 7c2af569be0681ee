"""Evaluate checkpoints on an env's test split and write the paper's table and a best@k plot.

    uv run apps/evaluate.py env=maze-v1 checkpoints=runs/maze-v1-grpo-seed0,runs/maze-v1-vpo-seed0
    uv run apps/evaluate.py env=maze-v1 checkpoints=path/to/hf_model mode=multi m=3 samples=30

A checkpoint is a local run directory (its config gives the method's mode and m; the final
checkpoint is used, or `init_model` with `@init` appended to the path) or a Hugging Face model
directory (pass mode= and m=). Sampling follows the paper's evaluation: temperature 0.7, top-p 1.0
(maze, MuSiQue) or 0.95 (EUREQA, ToolRL), several seeds (seeds=). backend=auto (default) samples with
vLLM when it is installed (`uv sync --group vllm`) and a CUDA GPU is present, else with transformers
on device= (cpu, or cuda); backend=transformers or backend=vllm forces one.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

TOP_P = {"eureqa-v1": 0.95, "toolrl-v1": 0.95}


def parse(argv: list[str]) -> dict[str, str]:
    options = {}
    for arg in argv:
        key, sep, value = arg.partition("=")
        if not sep:
            raise SystemExit(f"arguments are key=value pairs, got {arg!r}; see --help.")
        options[key.lstrip("-")] = value
    known = {
        "env",
        "checkpoints",
        "mode",
        "m",
        "tasks",
        "samples",
        "temperature",
        "top_p",
        "seeds",
        "out",
        "device",
        "backend",
    }
    unknown = set(options) - known
    if unknown:
        raise SystemExit(f"unknown option(s) {sorted(unknown)}; valid: {sorted(known)}.")
    if "checkpoints" not in options:
        raise SystemExit("pass checkpoints=<run dir or HF model dir>[,<another>...].")
    return options


def resolve(path_text: str, options: dict[str, str]) -> tuple[str, Path, str, int]:
    use_init = path_text.endswith("@init")
    path = Path(path_text.removesuffix("@init"))
    config_file = path / "config.json"
    run_config = json.loads(config_file.read_text()) if config_file.exists() else {}
    if "method" in run_config:  # a local run directory
        from vpo_core.methods import get_method

        method = get_method(run_config["method"])
        model_dir = path / ("init_model" if use_init else "checkpoint/model")
        if not model_dir.exists():
            raise SystemExit(f"{model_dir} does not exist: has the run at {path} saved a checkpoint yet?")
        label = f"{path.name}{'@init' if use_init else ''}"
        return label, model_dir, method.mode, method.resolve_m(run_config.get("m"))
    if not path.exists():
        raise SystemExit(f"checkpoint {path} does not exist.")
    if "mode" not in options:
        raise SystemExit(f"{path} is a plain model directory: pass mode=single|multi (and m=) to evaluate it.")
    return path.name, path, options["mode"], int(options.get("m", "3" if options["mode"] == "multi" else "1"))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if any(a in ("-h", "--help") for a in args):
        print(__doc__)
        return 0
    options = parse(args)
    import numpy as np

    import vpo_core
    from vpo_core.adapters.local.evaluation import evaluate_policy, markdown_table
    from vpo_core.adapters.local.plots import plot_best_at_k
    from vpo_core.adapters.local.policy import load_policy
    from vpo_core.adapters.local.vllm_sampler import choose_backend

    env_id = options.get("env", "maze-v1")
    env = vpo_core.make(env_id)
    tasks = list(env.tasks("test"))[: int(options.get("tasks", "100"))]
    out = Path(options.get("out", "results/eval"))
    out.mkdir(parents=True, exist_ok=True)
    device = options.get("device", "cpu")
    try:
        backend = choose_backend(options.get("backend", "auto"), device)
    except ValueError as error:
        raise SystemExit(str(error)) from None
    results = []
    for text in options["checkpoints"].split(","):
        label, model_dir, mode, m = resolve(text, options)
        if backend == "vllm":
            from vpo_core.adapters.local.vllm_sampler import VllmSampler

            policy = VllmSampler(model_dir)
        else:
            policy = load_policy(model_dir, device)
        print(f"evaluating {label} ({mode}, m={m}) on {len(tasks)} tasks with {backend}", file=sys.stderr)
        results.append(
            evaluate_policy(
                policy,
                env,
                tasks,
                name=label,
                mode=mode,
                m=m,
                samples=int(options.get("samples", "30")),
                temperature=float(options.get("temperature", "0.7")),
                top_p=float(options.get("top_p", TOP_P.get(env_id, 1.0))),
                seeds=int(options.get("seeds", "1")),
                max_new_tokens=int(48 + 40 * m),
            )
        )
    table = markdown_table(results)
    (out / "table.md").write_text(table + "\n")
    (out / "results.json").write_text(
        json.dumps(
            {r.name: {"mode": r.mode, "m": r.m, "metrics": r.metrics, "curve": r.curve} for r in results}, indent=2
        )
    )
    for r in results:
        np.save(out / f"pool_{r.name}.npy", r.rewards)
    plot_best_at_k(results, out / "best_at_k.png", title=f"{env_id} test")
    print(table)
    print(f"wrote {out}/table.md, results.json and best_at_k.png", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
