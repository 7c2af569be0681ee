"""Benchmark of one PPO update (and the sampling) of the miniature v2 model when one rollout runs to the budget.

Run with ``uv run python benchmarks/bench_long_tail_update.py``; prints a markdown table whose ratio is
against the padded update (one pass per mini-batch, every row padded to the longest) measured in the
same run. The rollouts are real samples of the committed multi-answer warm start (8 mazes × 8, T = 0.7,
384 tokens, one intra-op thread as in the grid) and, in the second row, the same with one rollout
extended to the 384-token budget, as a drifting slot does.
"""

from __future__ import annotations

import copy
import time
from pathlib import Path

import numpy as np
import torch

import vpo_core
from vpo_engines.local.config import TrainConfig
from vpo_engines.local.rl import Rollouts, update_policy
from vpo_engines.models.policy import answer_stops, load_policy

ROOT = Path(__file__).resolve().parents[1]
WARM = ROOT / "results" / "maze-v1-miniature-v2" / "warm" / "direct__warm-multi-seed0"


def _time_update(policy, rollouts, advantages, split: bool, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        trained, reference = copy.deepcopy(policy), copy.deepcopy(policy)
        optimizer = torch.optim.AdamW(trained.model.parameters(), lr=1e-6)
        started = time.perf_counter()
        update_policy(
            trained, reference, optimizer, rollouts, advantages, TrainConfig(mini_batches=2), step=0,
            rng=np.random.default_rng(0), split_by_length=split,
        )  # fmt: skip
        best = min(best, time.perf_counter() - started)
    return best


def main(prompts: int = 8, group_size: int = 8, budget: int = 384, repeats: int = 2) -> str:
    """Time the padded and the length-split update on real rollouts, without and with one long rollout.

    Returns:
        The markdown table (also printed).
    """
    torch.set_num_threads(1)
    env = vpo_core.make("maze-v1", demonstrations="direct")
    tasks = env.tasks("train")[:prompts]
    policy = load_policy(WARM)
    policy.stop_strings = answer_stops(env, "multi", 3, True)
    rendered = [policy.prompt_text(env.render_prompt(t, mode="multi", m=3)) for t in tasks]
    _, prompt_ids, response = policy.generate(
        rendered, num_samples=group_size, max_new_tokens=budget, temperature=0.7, seed=0
    )
    pad = policy.tokenizer.pad_token_id
    advantages = np.random.default_rng(0).normal(size=(prompts, group_size))
    lines = [
        "| rollouts | longest / mean tokens | padded update s | split update s | split / padded |",
        "|---|---:|---:|---:|---:|",
    ]
    long = torch.full((response.shape[0], budget), pad, dtype=response.dtype)
    long[:, : response.shape[1]] = response
    long[5] = torch.randint(6, len(policy.tokenizer), (budget,), generator=torch.Generator().manual_seed(0))
    for label, rows in (("as sampled", response), ("one at the budget", long)):
        mask = (rows != pad).float()
        rollouts = Rollouts(tasks, None, [""] * len(rows), prompt_ids, rows, mask)
        padded = _time_update(policy, rollouts, advantages, False, repeats)
        split = _time_update(policy, rollouts, advantages, True, repeats)
        lengths = mask.sum(dim=1)
        lines.append(
            f"| {label} | {int(lengths.max())} / {float(lengths.mean()):.0f} | {padded:.2f} | {split:.2f} | "
            f"{split / padded:.2f} |"
        )
    lines += ["", "| sampling 8 × 8 at 384 tokens | longest / mean tokens | one pass s | tail continued alone s | ratio |",
              "|---|---:|---:|---:|---:|"]  # fmt: skip
    timings, sizes = {}, {}
    for tail_after in (None, 128):
        policy.tail_after = tail_after
        best = float("inf")
        for _ in range(repeats):
            started = time.perf_counter()
            _, _, sampled = policy.generate(
                rendered, num_samples=group_size, max_new_tokens=budget, temperature=0.7, seed=0
            )
            best = min(best, time.perf_counter() - started)
        timings[tail_after], lengths = best, (sampled != pad).sum(dim=1).float()
        sizes[tail_after] = f"{int(lengths.max())} / {float(lengths.mean()):.0f}"
    lines.append(
        f"| as sampled | {sizes[128]} | {timings[None]:.2f} | {timings[128]:.2f} | {timings[128] / timings[None]:.2f} |"
    )
    table = "\n".join(lines)
    print(table)
    return table


if __name__ == "__main__":
    main()
