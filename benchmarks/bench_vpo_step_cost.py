"""VPO's cost in a real training step: VPO against Multi-RLVR on SmolLM2-135M-Instruct (issue 40, item 5).

Both methods use the same format (maze-v1, multi, m = 3): the prompts, the sampling, the scoring and the
loss are the same code; only the set reward and its advantage differ. So the benchmark runs the README's
command (``vpo train model=<SmolLM2> ...``) on each engine with ``method=vpo`` and ``method=multi_rlvr``
(same seed, same settings) and times, inside those runs,

- each RL step (the local engine's ``timing_s/*`` per step; TRL's ``training_step`` wall time), and
- the method-dependent part of that step: the local engine's ``rollout_scalars`` + ``normalize_scalars``,
  TRL's ``compute_advantages`` call (the functions are wrapped by a timer; they run unchanged).

Whole-step times of two separate runs differ by far more than 2 % on a shared 2-core machine (sampling
noise, other load), so the claim is computed from the part that differs: VPO's extra cost is
``(advantage time per step under VPO - under Multi-RLVR) / VPO's step time``. As a second, same-batch
check, the reward batch of VPO's last step is kept and both methods' advantages are recomputed on it
(``repeats`` times each, median), against the same step time.

Run with ``uv run --group trl --group real-model python benchmarks/bench_vpo_step_cost.py``; prints a
markdown table.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _train(argv: list[str]) -> int:
    """``vpo train`` with `argv` (apps/train.py is its alias): what the README's command runs."""
    from vpo_engines.cli import main

    return main(["train", *argv])


class Timer:
    """Wraps functions, sums their wall time per call and keeps the last call's arguments."""

    def __init__(self) -> None:
        self.seconds: list[float] = []
        self.last_call: tuple[tuple[Any, ...], dict[str, Any]] | None = None

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds.append(time.perf_counter() - start)
                self.last_call = (args, kwargs)

        return timed


def _run(engine: str, method: str, model: Path, settings: list[str], out: Path) -> dict[str, Any]:
    """One training run; returns per-step wall times, per-step advantage times and the last batch."""
    from vpo_core.advantages import normalize_scalars, rollout_scalars
    from vpo_engines.local import rl

    advantage = Timer()
    normalize = Timer()
    steps = Timer()
    patches: list[tuple[Any, str, Any]] = []

    def patch(owner: Any, name: str, value: Any) -> None:
        patches.append((owner, name, getattr(owner, name)))
        setattr(owner, name, value)

    if engine == "local":
        patch(rl, "rollout_scalars", advantage.wrap(rollout_scalars))
        patch(rl, "normalize_scalars", normalize.wrap(normalize_scalars))
    else:
        from vpo_engines.trl import trainer

        patch(trainer, "compute_advantages", advantage.wrap(trainer.compute_advantages))
        patch(trainer.VPOGRPOTrainer, "training_step", steps.wrap(trainer.VPOGRPOTrainer.training_step))
    try:
        code = _train([f"engine={engine}", f"method={method}", f"model={model}", *settings, f"out={out}"])
    finally:
        for owner, name, value in reversed(patches):
            setattr(owner, name, value)
    if code != 0:
        raise SystemExit(f"vpo train engine={engine} method={method} exited {code}")
    if engine == "local":
        records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines() if line.strip()]
        step_seconds = [sum(v for k, v in r.items() if k.startswith("timing_s/")) for r in records]
        advantage_seconds = [a + b for a, b in zip(advantage.seconds, normalize.seconds, strict=True)]
    else:
        step_seconds = steps.seconds
        advantage_seconds = advantage.seconds
    return {"step_s": step_seconds, "advantage_s": advantage_seconds, "last_call": advantage.last_call}


def _same_batch(engine: str, last_call: Any, repeats: int) -> dict[str, float]:
    """Both methods' advantage time on VPO's last reward batch (median of ``repeats``)."""
    from vpo_core.advantages import compute_advantages, normalize_scalars, rollout_scalars
    from vpo_core.methods import get_method

    (batch, vpo_config), _ = last_call
    timings: dict[str, float] = {}
    for method in ("vpo", "multi_rlvr"):
        config = dataclasses.replace(vpo_config, method=get_method(method))
        times = []
        for _ in range(repeats):
            start = time.perf_counter()
            if engine == "local":
                scalars = rollout_scalars(batch, config)
                normalize_scalars(scalars, config, lengths=batch.lengths)
            else:
                compute_advantages(batch, config)
            times.append(time.perf_counter() - start)
        timings[method] = statistics.median(times)
    return timings


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", default="local,trl")
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=2, help="prompts per step")
    parser.add_argument("--group-size", type=int, default=4)
    parser.add_argument("--max-new-tokens", type=int, default=96)
    parser.add_argument("--num-weights", type=int, default=100, help="K, VPO's weight draws per group")
    parser.add_argument("--repeats", type=int, default=200, help="same-batch recomputations per method")
    args = parser.parse_args(argv)

    from vpo_engines.checkpoints import smollm2_folder

    model = smollm2_folder()
    settings = [
        "env=maze-v1",
        "env.train_size=16",
        "env.test_size=1",
        "seed=0",
        f"steps={args.steps}",
        f"prompts_per_step={args.prompts}",
        f"group_size={args.group_size}",
        "mini_batches=1",
        f"max_new_tokens={args.max_new_tokens}",
        f"num_weights={args.num_weights}",
        "eval_tasks=0",
    ]
    lines = [
        f"VPO vs Multi-RLVR on SmolLM2-135M-Instruct, maze-v1 multi m=3, {args.prompts} prompts x "
        f"{args.group_size} rollouts, {args.max_new_tokens} new tokens, K={args.num_weights}, {args.steps} steps "
        "(the first step of each run is left out as warm-up)",
        "",
        "| engine | method | step (s, median) | advantage (ms/step, median) | VPO extra / step |",
        "|---|---|---:|---:|---:|",
    ]
    same_batch_lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for engine in args.engines.split(","):
            runs = {m: _run(engine, m, model, settings, Path(tmp) / f"{engine}-{m}") for m in ("vpo", "multi_rlvr")}
            step = {m: statistics.median(r["step_s"][1:] or r["step_s"]) for m, r in runs.items()}
            adv = {m: statistics.median(r["advantage_s"][1:] or r["advantage_s"]) for m, r in runs.items()}
            extra = (adv["vpo"] - adv["multi_rlvr"]) / step["vpo"]
            for m in ("vpo", "multi_rlvr"):
                cell = f"{100 * extra:.3f} %" if m == "vpo" else ""
                lines.append(f"| {engine} | {m} | {step[m]:.2f} | {1000 * adv[m]:.2f} | {cell} |")
            same = _same_batch(engine, runs["vpo"]["last_call"], args.repeats)
            same_extra = (same["vpo"] - same["multi_rlvr"]) / step["vpo"]
            same_batch_lines.append(
                f"| {engine} | {1000 * same['vpo']:.2f} | {1000 * same['multi_rlvr']:.2f} | {100 * same_extra:.3f} % |"
            )
            if not np.isfinite(extra):
                raise SystemExit("non-finite timing")
    lines += [
        "",
        "Same batch (VPO's last reward batch, both methods recomputed, median of "
        f"{args.repeats}), against VPO's median step:",
        "",
        "| engine | VPO advantage (ms) | Multi-RLVR advantage (ms) | VPO extra / step |",
        "|---|---:|---:|---:|",
        *same_batch_lines,
    ]
    table = "\n".join(lines)
    print(table)
    return table


if __name__ == "__main__":
    main()
