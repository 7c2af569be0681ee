"""Steady-state seconds per warm-up step of one model size on this machine (sizes a GPU warm-up).

    python probe.py NAME hidden_size=192 layers=4 heads=4 warmup_batch=64 mode_method=multi_rlvr [device=cuda]

Builds the default model as `apps/train.py` does, solves every train maze first (the solver's cache
fills during a real warm-up's first steps), then times 40 warm-up steps after 5 untimed ones and
prints one JSON line {"name", "params", "seconds_per_step"}.
"""

from __future__ import annotations

import json
import sys
import time

import numpy as np

from vpo_engines.local.config import TrainConfig
from vpo_engines.local.train import build_policy, open_run
from vpo_engines.local.warmup import warm_up


def main(argv: list[str]) -> None:
    """Time the warm-up of one configuration and print the result."""
    name, opts = argv[0], dict(a.split("=", 1) for a in argv[1:])
    config = TrainConfig(
        method=opts.get("mode_method", "multi_rlvr"),
        hidden_size=int(opts.get("hidden_size", 192)),
        layers=int(opts.get("layers", 4)),
        heads=int(opts.get("heads", 4)),
        warmup_steps=0,
        steps=0,
        eval_tasks=0,
        device=opts.get("device", "cuda"),
        out=f"/tmp/probe-{name}",
    )
    state = open_run(config)
    policy, _, _ = build_policy(state)
    rng = np.random.default_rng(0)
    for task in state.train_tasks:
        state.env.demonstration(task, mode=state.mode, m=state.m, rng=rng)
    batch = int(opts.get("warmup_batch", 64))
    common = {"mode": state.mode, "m": state.m, "batch_size": batch, "lr": 1e-3, "seed": 0}
    warm_up(policy, state.env, state.train_tasks, steps=5, **common)
    started = time.perf_counter()
    warm_up(policy, state.env, state.train_tasks, steps=40, **common)
    seconds = (time.perf_counter() - started) / 40
    params = sum(p.numel() for p in policy.model.parameters())
    print(json.dumps({"name": name, "params": params, "seconds_per_step": round(seconds, 4)}))


if __name__ == "__main__":
    main(sys.argv[1:])
