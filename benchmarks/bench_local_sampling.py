"""Benchmark of the local engine's rollout sampling: one batched ``generate`` vs one call per prompt.

Run with ``uv run python benchmarks/bench_local_sampling.py``; prints a markdown table whose ratios are
against the per-prompt anchor measured in the same run.
"""

from __future__ import annotations

import time

import numpy as np
import torch

import vpo_core
from vpo_engines.models.policy import ModelSpec, new_policy


def main(prompts: int = 8, group_size: int = 8, max_new_tokens: int = 48, repeats: int = 2) -> str:
    """Time sampling one RL step's rollouts (``prompts`` × ``group_size``) two ways.

    Returns:
        The markdown table (also printed).
    """
    torch.set_num_threads(2)
    env = vpo_core.make("maze-v1", train_size=prompts, test_size=2)
    tasks = env.tasks("train")
    rng = np.random.default_rng(0)
    texts = [env.render_prompt(t, mode="multi", m=3)[0]["content"] for t in tasks]
    texts += [env.demonstration(t, mode="multi", m=3, rng=rng) or "" for t in tasks]
    policy = new_policy(
        texts * 5, ModelSpec(vocab_size=800, hidden_size=64, layers=2, heads=4, max_positions=1024), seed=0
    )
    rendered = [policy.prompt_text(env.render_prompt(t, mode="multi", m=3)) for t in tasks]

    def batched() -> None:
        policy.generate(rendered, num_samples=group_size, max_new_tokens=max_new_tokens, temperature=1.0, seed=0)

    def per_prompt() -> None:
        for prompt in rendered:
            policy.generate([prompt], num_samples=group_size, max_new_tokens=max_new_tokens, temperature=1.0, seed=0)

    timings = {}
    for name, fn in (("per-prompt generate (anchor)", per_prompt), ("one batched generate", batched)):
        fn()  # warm
        start = time.perf_counter()
        for _ in range(repeats):
            fn()
        timings[name] = (time.perf_counter() - start) / repeats
    anchor = timings["per-prompt generate (anchor)"]
    lines = [
        f"Rollouts of one RL step: {prompts} prompts × {group_size}, ≤{max_new_tokens} new tokens, CPU, 2 threads.",
        "",
        "| variant | seconds | speed-up vs anchor |",
        "|---|---|---|",
    ]
    lines += [f"| {name} | {sec:.3f} | {anchor / sec:.2f}× |" for name, sec in timings.items()]
    table = "\n".join(lines)
    print(table)
    return table


if __name__ == "__main__":
    main()
