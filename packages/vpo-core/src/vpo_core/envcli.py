"""A command line every env package exposes: render a task, export a split, score completions.

    env-maze render --split test --index 0 --mode multi --m 3
    env-maze export --split train --out train.jsonl
    env-maze score --split test --completions completions.jsonl --mode multi --m 3

A completions file is JSON lines ``{"index": <task index>, "completion": "<text>"}``; several
lines per index form that task's pool (iid samples in single mode, chains in multi mode). ``score``
reports the paper's pool metrics with the same code as ``apps/evaluate.py`` (`vpo_core.evaluation.metrics`):
best@k, pass@k, E_w[best@k], best@k of the env's ``profile.report_dims``, diversity and ρ̄.

This command line keeps argparse rather than the apps' config layer (`vpo_core.cli_config`): an env
package depends on vpo-core's numpy-only base install, and the config layer needs OmegaConf, which
only the ``local`` extra installs; the subcommands and ``--flag`` syntax are also the env packages'
published interface.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core.env import TextEnv
from vpo_core.evaluation.metrics import MetricName, metric_name, pool_summary
from vpo_core.types import Mode

__all__ = ["main", "score_pools"]

Extra = Callable[[TextEnv[Any, Any], Any, np.ndarray], dict[str, float]]


def _parser(prog: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--split", default="test", help="split to use (default: test)")
    common.add_argument("--mode", choices=["single", "multi"], default="single")
    common.add_argument("--m", type=int, default=None, help="answers per completion (default 1 single, 3 multi)")
    common.add_argument("--config", action="append", default=[], metavar="KEY=VALUE", help="env config option")
    render = sub.add_parser("render", parents=[common], help="print the prompt of one task")
    render.add_argument("--index", type=int, default=0)
    export = sub.add_parser("export", parents=[common], help="write a split's prompts and references as JSONL")
    export.add_argument("--out", type=Path, required=True)
    score = sub.add_parser("score", parents=[common], help="score a JSONL of completions")
    score.add_argument("--completions", type=Path, required=True)
    score.add_argument("--json", action="store_true", help="print the summary as JSON")
    return parser


def _config(items: Sequence[str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"--config takes KEY=VALUE, got {item!r}.")
        try:
            config[key] = json.loads(value)
        except json.JSONDecodeError:
            config[key] = value
    return config


def score_pools(
    env: TextEnv[Any, Any],
    tasks: Sequence[Any],
    pools: dict[int, list[str]],
    *,
    mode: Mode,
    m: int,
    extra: Extra | None = None,
) -> dict[str, Any]:
    """Score pools of completions and summarise them with the paper's pool metrics (`vpo_core.evaluation.metrics`).

    Args:
        env: The environment.
        tasks: The split's tasks.
        pools: Task index → completions.
        mode: Prompt mode of the completions.
        m: Answers per completion.
        extra: Optional per-task metrics ``(env, task, rewards (n, m, d)) -> {name: value}``.

    Returns:
        ``tasks``, ``completions``, ``mean_reward`` (per dimension, when every task has the same
        dimensions), ``best_at_k``, ``pass_at_k`` and ``expected_best_at_k`` (for the k every pool
        allows), ``best_at_k[<dim>]`` for each of ``env.profile.report_dims``, ``reward_diversity``,
        ``collinearity``, ``mean_w_star`` and any extra metrics (averaged over tasks).
    """
    if not pools:
        raise ValueError("no completions to score.")
    chosen: list[Any] = []
    rewards: list[np.ndarray] = []
    extras: dict[str, list[float]] = defaultdict(list)
    for index, completions in sorted(pools.items()):
        if not 0 <= index < len(tasks):
            raise ValueError(f"completion for task index {index}, but the split has {len(tasks)} tasks.")
        task = tasks[index]
        pool = np.stack([env.score_completion(task, c, mode=mode, m=m).rewards for c in completions])  # (n, m, d)
        chosen.append(task)
        rewards.append(pool)
        if extra is not None:
            for key, value in extra(env, task, pool).items():
                extras[key].append(value)
    metrics = pool_summary(env, chosen, rewards, mode=mode)
    summary: dict[str, Any] = {"tasks": len(pools), "completions": sum(len(v) for v in pools.values())}
    names = env.spec_for(chosen[0]).names
    if all(f"mean_{name}" in metrics for name in names):
        summary["mean_reward"] = {name: round(metrics[f"mean_{name}"], 6) for name in names}

    def group(stat: str, dim: str | None = None) -> dict[str, float]:
        """The @k metrics of one statistic (and dimension), by name (``best@5``; ``best@5`` of `dim`)."""
        names = [metric_name(key) for key in metrics]
        return {
            (MetricName(name.stat, name.k) if dim is not None else name): round(metrics[name], 6)
            for name in names
            if name.stat == stat and name.k is not None and name.dim == dim
        }

    summary["best_at_k"] = group("best")
    summary["pass_at_k"] = group("pass")
    summary["chain_pass_at_k"] = group("chain_pass")
    summary["solution_pass_at_k"] = group("solution_pass")
    summary["expected_best_at_k"] = group("E_w[best]")
    for dim in env.profile.report_dims:
        summary[f"best_at_k[{dim}]"] = group("best", dim)
    summary["reward_diversity"] = round(metrics["diversity"], 6)
    summary["pareto_fraction"] = round(metrics["pareto_fraction"], 6)
    summary["collinearity"] = round(metrics["collinearity"], 6) if np.isfinite(metrics["collinearity"]) else None
    summary["mean_w_star"] = round(metrics["mean_w_star"], 6)
    for key, values in extras.items():
        summary[key] = round(float(np.mean(values)), 6)
    return summary


def main(
    env_factory: Callable[..., TextEnv[Any, Any]],
    argv: Sequence[str] | None = None,
    *,
    prog: str = "env",
    extra: Extra | None = None,
) -> int:
    """Run the command line.

    Args:
        env_factory: Builds the env from ``--config`` keyword options.
        argv: Arguments (default ``sys.argv[1:]``).
        prog: Program name for help texts.
        extra: Optional per-task metrics for ``score`` (see `score_pools`).

    Returns:
        The exit status.
    """
    args = _parser(prog).parse_args(argv)
    m = args.m if args.m is not None else (3 if args.mode == "multi" else 1)
    env = env_factory(**_config(args.config))
    tasks = env.tasks(args.split)
    if args.command == "render":
        if not 0 <= args.index < len(tasks):
            raise SystemExit(f"--index must be in [0, {len(tasks)}) for split {args.split!r}.")
        for message in env.render_prompt(tasks[args.index], mode=args.mode, m=m):
            print(f"[{message['role']}]\n{message['content']}\n")
        return 0
    if args.command == "export":
        with args.out.open("w", encoding="utf-8") as handle:
            for task in tasks:
                row = {
                    "id": task.id,
                    "index": task.index,
                    "prompt": env.render_prompt(task, mode=args.mode, m=m),
                    "reference": env.reference_completion(task, mode=args.mode, m=m),
                }
                handle.write(json.dumps(row) + "\n")
        print(f"wrote {len(tasks)} tasks to {args.out}", file=sys.stderr)
        return 0
    pools: dict[int, list[str]] = defaultdict(list)
    with args.completions.open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                pools[int(row["index"])].append(str(row["completion"]))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise SystemExit(
                    f'{args.completions}:{line_number}: expected {{"index": int, "completion": str}} ({exc}).'
                ) from None
    try:
        summary = score_pools(env, tasks, dict(pools), mode=args.mode, m=m, extra=extra)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0
