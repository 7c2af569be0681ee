"""Why warm-started candidates miss E: sample a checkpoint on test mazes and classify every route.

    uv run python failure_modes.py CHECKPOINT_DIR [tasks=50] [chains=10] [max_new_tokens=384] [temperature=0.7]

Classes per route (multi mode, m = 3): reached E within the budget; missing (no route text); over budget
(the walk reaches E only after the maze's step budget); short (the walk never reaches E: the route
stops early or wanders), with the final Manhattan distance to E; and whether the completion ran out of
tokens. Prints one JSON line of shares.
"""

from __future__ import annotations

import json
import sys
from collections import Counter

import numpy as np

import vpo_core
from vpo_core.sampling_settings import SamplingSettings
from vpo_engines.models.policy import load_policy


def walk(maze, moves):
    """Follow every move (no step budget): (the cell reached, the moves taken to reach E or None)."""
    position = maze.start
    for steps, move in enumerate(moves, start=1):
        position = int(maze.step_table[position, move])
        if position == maze.end:
            return position, steps
    return position, None


def main(argv):
    """Sample the checkpoint, classify each route and print the shares as one JSON line."""
    path = argv[0]
    opts = dict(a.split("=", 1) for a in argv[1:])
    n_tasks, chains = int(opts.get("tasks", 50)), int(opts.get("chains", 10))
    max_new, temperature = int(opts.get("max_new_tokens", 384)), float(opts.get("temperature", 0.7))
    env = vpo_core.make("maze-v1", **({"demonstrations": opts["demos"]} if "demos" in opts else {}))
    policy = load_policy(path)
    tasks = env.tasks("test")[:n_tasks]
    prompts = [policy.prompt_text(env.render_prompt(t, mode="multi", m=3)) for t in tasks]
    settings = SamplingSettings(temperature=temperature, top_p=1.0, max_new_tokens=max_new)
    texts = policy.sample(prompts, num_samples=chains, settings=settings, seed=0)
    counts, distance, lengths = Counter(), [], []
    eos = policy.tokenizer.eos_token
    for i, text in enumerate(texts):
        task = tasks[i // chains]
        maze = task.payload
        truncated = not text.rstrip().endswith(eos) and "</route_3>" not in text
        counts["completions"] += 1
        counts["truncated"] += truncated
        for route in env.parse(task, text, mode="multi", m=3):
            counts["routes"] += 1
            moves = route.answer or ()
            if not moves:
                counts["missing"] += 1
                continue
            lengths.append(len(moves))
            end, steps = walk(maze, moves)
            if steps is not None and steps <= maze.budget:
                counts["reached"] += 1
            elif steps is not None:
                counts["over_budget"] += 1
            else:
                counts["short"] += 1
                width = round(len(maze.step_table) ** 0.5)
                distance.append(abs(end // width - maze.end // width) + abs(end % width - maze.end % width))
    routes = counts["routes"]
    out = {k: round(counts[k] / routes, 3) for k in ("reached", "missing", "over_budget", "short")}
    out["truncated_completions"] = round(counts["truncated"] / counts["completions"], 3)
    out["short_distance_hist"] = dict(sorted(Counter(distance).items()))
    out["mean_route_moves"] = round(float(np.mean(lengths)), 1) if lengths else None
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1:])
