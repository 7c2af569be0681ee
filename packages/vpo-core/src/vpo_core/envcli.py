"""A command line every env package exposes: render a task, export a split, score completions.

    env-maze render split=test index=0 mode=multi m=3
    env-maze export split=train out=train.jsonl
    env-maze score split=test completions=completions.jsonl mode=multi m=3 env.test_size=20

A completions file is JSON lines ``{"index": <task index>, "completion": "<text>"}``; several
lines per index form that task's pool (iid samples in single mode, chains in multi mode). ``score``
reports the paper's pool metrics with the same code as ``vpo eval`` (`vpo_core.evaluation.metrics`):
best@k, pass@k, E_w[best@k], best@k of the env's ``profile.report_dims``, diversity and ρ̄.

Options are ``key=value`` and the env's own options ``env.KEY=VALUE`` (checked against the env's config
record), parsed by the one option layer of every command (`vpo_core.cli_config`), which needs nothing
beyond the standard library, so an env package's numpy-only install runs it.
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core.cli_config import ConfigError, HelpRequested, exit_status, option, parse_config, split_command
from vpo_core.env import TextEnv
from vpo_core.env_options import check_options
from vpo_core.evaluation.metrics import pool_summary
from vpo_core.types import Mode

__all__ = ["ExportOptions", "RenderOptions", "ScoreOptions", "main", "score_pools"]

Extra = Callable[[TextEnv[Any, Any], Any, np.ndarray], dict[str, float]]


@dataclasses.dataclass
class _Common:
    """The options every subcommand takes."""

    split: str = option("test", "split to use")
    mode: str = option("single", "prompt mode: single or multi")
    m: int | None = option(None, "answers per completion (default 1 in single mode, 3 in multi mode)")
    env_options: dict[str, Any] = option(  # noqa: RUF009 - option() is dataclasses.field with a help text
        default_factory=dict, help="an option of the env's config record (e.g. env.data_dir=/data, env.test_size=20)"
    )

    def __post_init__(self) -> None:
        if self.mode not in ("single", "multi"):
            raise ValueError(f"mode must be single or multi, got mode={self.mode}.")
        if self.m is not None and self.m < 1:
            raise ValueError(f"m must be >= 1, got m={self.m}.")

    @property
    def answers(self) -> int:
        """m, or the mode's default."""
        return self.m if self.m is not None else (3 if self.mode == "multi" else 1)


@dataclasses.dataclass(kw_only=True)
class RenderOptions(_Common):
    """``render``: print the prompt of one task."""

    index: int = option(0, "the task's index in the split")


@dataclasses.dataclass(kw_only=True)
class ExportOptions(_Common):
    """``export``: write a split's prompts and reference completions as JSON lines."""

    out: str = option(help="the JSONL file to write")


@dataclasses.dataclass(kw_only=True)
class ScoreOptions(_Common):
    """``score``: score a JSONL file of completions with the paper's pool metrics."""

    completions: str = option(help='the JSONL file of completions, {"index": i, "completion": "..."} per line')
    json: bool = option(False, "print the summary as JSON")


USAGE = """Render, export and score an env's tasks.

  render split=test index=0 mode=multi m=3
  export split=train out=train.jsonl
  score completions=c.jsonl mode=multi m=3      # {"index": i, "completion": "..."} per line

Every command takes env.KEY=VALUE: an option of the env's config record (e.g. env.data_dir=/data)."""

COMMANDS: dict[str, tuple[type[_Common], str]] = {
    "render": (RenderOptions, "print the prompt of one task"),
    "export": (ExportOptions, "write a split's prompts and references as JSONL"),
    "score": (ScoreOptions, "score a JSONL of completions"),
}


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
        head, close = (stat[:-1], "]") if stat.endswith("]") else (stat, "")  # E_w[best] -> E_w[best@k]
        at_k = re.compile(re.escape(head) + "@([0-9]+)" + re.escape(close + ("" if dim is None else f"[{dim}]")))
        found = {key: at_k.fullmatch(key) for key in metrics}
        return {f"{head}@{k[1]}{close}": round(metrics[key], 6) for key, k in found.items() if k}

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


def _parse(argv: Sequence[str], prog: str) -> tuple[str, _Common]:
    """The subcommand and its options (raises HelpRequested / ConfigError)."""
    summaries = {name: text for name, (_, text) in COMMANDS.items()}
    command, rest = split_command(argv, summaries, prog=prog, description=USAGE)
    cls = COMMANDS[command][0]
    options = parse_config(
        cls,
        rest,
        prog=f"{prog} {command}",
        description=cls.__doc__ or "",
        passthrough={"env": "env_options"},
        flags={"--json": "json"} if cls is ScoreOptions else None,
        renamed={"config": "env"},
    )
    return command, options


def main(
    env_factory: Callable[..., TextEnv[Any, Any]],
    argv: Sequence[str] | None = None,
    *,
    prog: str = "env",
    extra: Extra | None = None,
) -> int:
    """Run the command line.

    Args:
        env_factory: The env class (its config record checks the ``env.KEY=VALUE`` options).
        argv: Arguments (default ``sys.argv[1:]``).
        prog: Program name for help texts.
        extra: Optional per-task metrics for ``score`` (see `score_pools`).

    Returns:
        The exit status: 0, or 2 after a one-line error for a bad option.
    """
    try:
        command, options = _parse(sys.argv[1:] if argv is None else argv, prog)
        env_id = str(getattr(env_factory, "env_id", prog))
        env = env_factory(**check_options(env_factory, options.env_options, env_id=env_id))
        tasks = env.tasks(options.split)
        if isinstance(options, RenderOptions) and not 0 <= options.index < len(tasks):
            raise ConfigError(f"index must be in [0, {len(tasks)}) for split {options.split!r}, got {options.index}.")
    except (HelpRequested, ConfigError) as exc:
        return exit_status(exc)
    mode: Mode = "multi" if options.mode == "multi" else "single"
    m = options.answers
    if isinstance(options, RenderOptions):
        for message in env.render_prompt(tasks[options.index], mode=mode, m=m):
            print(f"[{message['role']}]\n{message['content']}\n")
        return 0
    if isinstance(options, ExportOptions):
        with Path(options.out).open("w", encoding="utf-8") as handle:
            for task in tasks:
                row = {
                    "id": task.id,
                    "index": task.index,
                    "prompt": env.render_prompt(task, mode=mode, m=m),
                    "reference": env.reference_completion(task, mode=mode, m=m),
                }
                handle.write(json.dumps(row) + "\n")
        print(f"wrote {len(tasks)} tasks to {options.out}", file=sys.stderr)
        return 0
    assert isinstance(options, ScoreOptions), command
    return _score(env, tasks, options, mode=mode, m=m, extra=extra)


def _score(
    env: TextEnv[Any, Any], tasks: Sequence[Any], options: ScoreOptions, *, mode: Mode, m: int, extra: Extra | None
) -> int:
    """``score``: read the completions, print the summary."""
    pools: dict[int, list[str]] = defaultdict(list)
    with Path(options.completions).open(encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                pools[int(row["index"])].append(str(row["completion"]))
            except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
                raise SystemExit(
                    f'{options.completions}:{line_number}: expected {{"index": int, "completion": str}} ({exc}).'
                ) from None
    try:
        summary = score_pools(env, tasks, dict(pools), mode=mode, m=m, extra=extra)
    except ValueError as exc:
        raise SystemExit(str(exc)) from None
    if options.json:
        print(json.dumps(summary, indent=2))
    else:
        for key, value in summary.items():
            print(f"{key}: {value}")
    return 0
