"""The mechanism study without a language model: every method on tabular policies over a task's outcomes.

    uv run apps/mechanism.py                  # maze-v1, 16 test mazes, both starts, 10 seeds, 8 methods + 3 controls
    uv run apps/mechanism.py starts=warm_hard seeds=4 steps=1000 checkpoints=0,50,200,1000
    uv run apps/mechanism.py variants=1 methods=vpo,multi_rlvr starts=warm_uniform

The env must enumerate its outcomes (`TextEnv.outcome_table`; maze-v1 does, with its exact solver).
Every answer text is re-scored with `env.score` before training (a table that disagrees stops the
run). Each (start, arm, seed) trains a tabular policy (`vpo_lab.tabular`) with the method's own
`compute_advantages`, and is evaluated at the checkpoints with the paper's metrics. The mechanism's
controls are registered methods too (`vpo_w_star_max`: VPO's weightings replaced by w*; `vpo_k1`: one
group-shared weighting, K = 1; `vpo_unshared`: one weighting per rollout, not shared by the group).
For each start it writes ``<out>/<start>_V<variants>.md`` (one table per checkpoint, mean over seeds
and tasks with a 95 % seed-level interval, `vpo_core.stats.seed_interval`; then VPO minus each arm,
paired by seed and task, with the number of seeds where VPO is ahead), ``<start>_V<variants>.json``
(every interval, best@k for k = 1..30, the per-seed means of every paired difference, and the config)
and ``<start>_V<variants>_values.npz`` (every per-(seed, task) value, key ``<arm>/<step>/<metric>``,
so that any other interval can be recomputed without re-running).

Starts (the prior before RL; invalid answers share ``invalid`` of the mass, valid outcomes the rest in
proportion to exp(-scale · effort), effort = the env's measure, maze: treasure tiles collected):
``warm_uniform`` (0.75, 0: a warm start that reaches the goal 25 % of the time, valid outcomes
uniform), ``warm_hard`` (0.75, 0.7: the same with demanding outcomes rare, like a model heading
straight for the goal), ``uniform_valid`` (0, 0: always valid, a control).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from vpo_core.cli_config import option, run_cli
from vpo_core.methods import METHODS
from vpo_core.registry import DEFAULT_ENV

if TYPE_CHECKING:
    from vpo_lab.tabular.study import Arm, StudyResult

STARTS = {
    "warm_uniform": (0.75, 0.0),
    "warm_hard": (0.75, 0.7),
    "uniform_valid": (0.0, 0.0),
}
DEFAULT_ARMS = "grpo,random_w,goal_cond,gdpo,max_at_k,maxrl,multi_rlvr,vpo,vpo_w_star_max,vpo_k1,vpo_unshared"
"""Every method of the paper and the mechanism's three controls (all registered in `vpo_core.METHODS`)."""
POOL = 30
"""Answers per evaluation pool (`vpo_lab.tabular.evaluate.POOL`, the paper's 30)."""
MAX_GROUP_SIZE = 4096
"""The largest G: a step samples (tasks, G, N) logits per answer slot."""
MAX_CANDIDATES = 30_000
"""The largest evaluation pool per task (100 pools of 30; the paper's is 300)."""
MAX_TABLE_BYTES = 2**30
"""The most memory (1 GiB) one sampling pass may take: (tasks, rollouts, N table candidates) float64 logits."""
COLUMNS = (
    ("best@1", "best_at_k", 1),
    ("best@3", "best_at_k", 3),
    ("best@5", "best_at_k", 5),
    ("best@10", "best_at_k", 10),
    ("best@30", "best_at_k", 30),
    ("E_w[best@5]", "e_w_best_at_5", None),
    ("diversity", "diversity", None),
    ("div. valid", "diversity_valid", None),
    ("completion", "completion", None),
    ("Pareto in 30", "pareto_covered", None),
    ("distinct valid / 30", "distinct_valid", None),
    ("distinct valid / chain", "distinct_valid_per_chain", None),
)
PAIRED = (("best@1", "best_at_k", 1), ("best@3", "best_at_k", 3), ("best@10", "best_at_k", 10),
          ("E_w[best@5]", "e_w_best_at_5", None), ("Pareto in 30", "pareto_covered", None),
          ("div. valid", "diversity_valid", None), ("completion", "completion", None))  # fmt: skip


@dataclass
class MechanismConfig:
    """Options of apps/mechanism.py."""

    env: str = option(DEFAULT_ENV, "env id (must implement outcome_table)")
    split: str = option("test", "split whose first `tasks` tasks are studied")
    tasks: int = option(16, "number of tasks")
    invalid: int = option(4, "invalid answers per task (maze: routes that stop short of E)")
    variants: int = option(3, "text variants per outcome (distinct de-dup keys, same reward)")
    methods: str = option(
        DEFAULT_ARMS, "comma-separated registered methods and controls (vpo_w_star_max, vpo_k1, vpo_unshared)"
    )
    starts: str = option("warm_uniform,warm_hard", f"comma-separated starts: {', '.join(STARTS)}")
    seeds: int = option(10, "seeds per (start, method): 0..seeds-1 (>= 2 for seed-level intervals)")
    steps: int = option(1000, "RL steps")
    checkpoints: str = option("0,50,200,1000", "comma-separated evaluation steps (<= steps)")
    group_size: int = option(8, f"G, rollouts per task and step (2..{MAX_GROUP_SIZE})")
    lr: float = option(0.03, "Adam step size (finite, > 0)")
    candidates: int = option(
        300, f"answers per task in an evaluation: a multiple of 30 and of every method's m, at most {MAX_CANDIDATES}"
    )
    out: str = option("results/maze-v1-mechanism", "output directory")

    def __post_init__(self) -> None:
        unknown = [s for s in self.start_names() if s not in STARTS]
        if unknown:
            raise ValueError(f"unknown start(s) {unknown}; choose from {sorted(STARTS)}.")
        if self.tasks < 1 or self.seeds < 1 or self.steps < 0 or self.variants < 1 or self.invalid < 0:
            raise ValueError("tasks, seeds and variants must be >= 1, steps and invalid >= 0.")
        if not 2 <= self.group_size <= MAX_GROUP_SIZE:
            raise ValueError(
                f"group_size must lie in [2, {MAX_GROUP_SIZE}] (advantages compare the G rollouts of a task), "
                f"got group_size={self.group_size}."
            )
        if not (math.isfinite(self.lr) and self.lr > 0):
            raise ValueError(f"lr (Adam step size) must be a finite number > 0, got lr={self.lr}.")
        arms = self.arm_names()
        bad = [a for a in arms if a not in METHODS]
        if bad or not arms:
            raise ValueError(f"unknown method {bad[0] if bad else ''!r}; choose from {sorted(METHODS)}.")
        slots = sorted({POOL, *(METHODS[a].m for a in arms)})
        step = math.lcm(*slots)
        if not POOL <= self.candidates <= MAX_CANDIDATES or self.candidates % step:
            raise ValueError(
                f"candidates must be a multiple of {step} (pools of {POOL}, and whole chains of m = "
                f"{', '.join(str(m) for m in slots if m != POOL) or 1} answers) in [{POOL}, {MAX_CANDIDATES}], "
                f"got candidates={self.candidates}."
            )
        if any(c < 0 or c > self.steps for c in self.checkpoint_steps()):
            raise ValueError(f"checkpoints must lie in [0, steps={self.steps}], got {self.checkpoints!r}.")
        if self.invalid == 0 and any(STARTS[s][0] > 0 for s in self.start_names()):
            raise ValueError("the chosen starts put mass on invalid answers; set invalid >= 1 or starts=uniform_valid.")

    def start_names(self) -> list[str]:
        return [s.strip() for s in self.starts.split(",") if s.strip()]

    def arm_names(self) -> list[str]:
        return [s.strip() for s in self.methods.split(",") if s.strip()]

    def checkpoint_steps(self) -> list[int]:
        try:
            return sorted({int(c) for c in self.checkpoints.split(",") if c.strip()})
        except ValueError:
            raise ValueError(f"checkpoints must be comma-separated ints, got {self.checkpoints!r}.") from None


def _cell(interval: dict[str, Any]) -> str:
    text = f"{interval['estimate']:.3f} [{interval['low']:.3f}, {interval['high']:.3f}]"
    if "per_seed" in interval:  # a paired difference: in how many seeds the reference is ahead
        text += f" {sum(x > 0 for x in interval['per_seed'])}/{len(interval['per_seed'])}"
    return text


def _pick(cell: dict[str, Any], name: str, k: int | None) -> dict[str, float]:
    return cell[name][k - 1] if k is not None else cell[name]


def render_markdown(start: str, summary: dict[str, Any], paired: dict[str, Any], config: dict[str, Any]) -> str:
    """One table per checkpoint (rows: arms), then VPO − each arm, paired by seed and task."""
    cells = (
        "Cells: mean over seeds and tasks [95 % seed-level interval: a t-interval over the per-seed means "
        "with a shared-task term, `vpo_core.stats.seed_interval`]. "
        if len(config["seeds"]) > 1
        else "Cells: mean over tasks [95 % bootstrap over tasks only: one seed gives no seed-level interval]. "
    )
    lines = [
        f"# Tabular mechanism study: start `{start}`, V = {config['variants']}",
        "",
        f"{config['tasks']} {config['env']} {config['split']} tasks, {len(config['seeds'])} seeds, G = {config['group_size']}, "
        f"Adam lr {config['lr']}, {config['steps']} steps; evaluation pools of {config['n_candidates']} answers at T = 1. "
        f"{cells}Regenerate: `{config['command']}`.",
    ]
    arms = list(summary)
    for step in config["checkpoints"]:
        lines += ["", f"## Step {step}", ""]
        lines.append("| method | " + " | ".join(c[0] for c in COLUMNS) + " |")
        lines.append("|---" * (len(COLUMNS) + 1) + "|")
        for a in arms:
            cell = summary[a][str(step)]
            lines.append(f"| {a} | " + " | ".join(_cell(_pick(cell, n, k)) for _, n, k in COLUMNS) + " |")
    if paired:
        lines += [
            "",
            "## VPO minus each method (paired by seed and task)",
            "",
            "Cells: mean difference [95 % seed-level interval] and the number of seeds in which VPO's mean is "
            "higher (n/S).",
            "",
        ]
        lines.append("| step | method | " + " | ".join(c[0] for c in PAIRED) + " |")
        lines.append("|---" * (len(PAIRED) + 2) + "|")
        for step in config["checkpoints"]:
            for a in arms:
                if a == "vpo":
                    continue
                lines.append(
                    f"| {step} | {a} | " + " | ".join(_cell(paired[str(step)][c[0]][a]) for c in PAIRED) + " |"
                )
    return "\n".join(lines) + "\n"


class _Refused(Exception):
    """The study cannot run as asked; `main` prints ``error: <message>`` and exits 2."""


def _outcome_tables(env: Any, env_id: str, tasks: list[Any], invalid: int) -> list[Any]:
    """Each task's outcome table, checked against `env.score` of its texts.

    Args:
        env: The env.
        env_id: Its id (for the message).
        tasks: The tasks studied.
        invalid: Invalid answers per task.

    Returns:
        One `OutcomeTable` per task.

    Raises:
        _Refused: The env enumerates no outcomes, or a table's rewards differ from its texts' scores.
    """
    tables = []
    for task in tasks:
        table = env.outcome_table(task, invalid=invalid)
        if table is None:
            raise _Refused(f"env {env_id} does not enumerate its outcomes (TextEnv.outcome_table).")
        rescored = np.concatenate([env.score(task, text) for text in table.texts])
        if not np.allclose(rescored, table.rewards, rtol=0, atol=1e-12):
            raise _Refused(f"task {task.id}: env.score of the table's texts differs from its rewards.")
        tables.append(table)
    return tables


def _check_memory(candidates: Any, config: MechanismConfig) -> None:
    """Refuse a study whose sampling pass would take more than `MAX_TABLE_BYTES`.

    Args:
        candidates: The stacked tables, shape (tasks, width, d).
        config: The options (group size and evaluation candidates set how many are sampled at a time).

    Raises:
        _Refused: Naming the memory it would take and what to lower.
    """
    n_tasks, width, _ = candidates.shape
    at_a_time = max(config.group_size, config.candidates)
    peak = 8 * n_tasks * at_a_time * width
    if peak > MAX_TABLE_BYTES:
        raise _Refused(
            f"{n_tasks} tasks of {width:,} table candidates sampled {at_a_time} "
            f"at a time would take {peak / 2**30:,.1f} GiB, over the {MAX_TABLE_BYTES / 2**30:g} GiB bound; "
            "lower tasks, variants, candidates or group_size."
        )


def _arms(names: list[str], w_star: np.ndarray, task_ids: Sequence[str]) -> list[Arm]:
    """The study's arms: each named method (or control) with its answers per rollout and advantage rule.

    Args:
        names: Registered methods and controls.
        w_star: The env's w*, shape (d,).
        task_ids: The studied tasks' ids.

    Raises:
        _Refused: A method the tabular study cannot run (its message says why).
    """
    from vpo_lab.tabular.study import arm

    try:
        return [arm(name, w_star=w_star, task_ids=task_ids) for name in names]
    except ValueError as error:
        raise _Refused(f"methods: {error}") from None


def _vpo_minus(result: StudyResult, start_name: str) -> dict[str, Any]:
    """VPO minus each other arm at every checkpoint, paired by seed and task, with the per-seed differences.

    Args:
        result: The study's result for `start_name` (VPO among its arms).
        start_name: The start.

    Returns:
        step -> `PAIRED` label -> other arm -> its interval plus ``per_seed`` (VPO's per-seed mean minus the
        arm's, rounded to 6 digits).
    """
    paired: dict[str, Any] = {}
    for step in result.config["checkpoints"]:
        paired[str(step)] = {}
        for label, name, k in PAIRED:
            reference = result.seed_means(start_name, "vpo", step, name, k)
            paired[str(step)][label] = {
                other: {
                    **cell,
                    "per_seed": [
                        round(float(x), 6) for x in reference - result.seed_means(start_name, other, step, name, k)
                    ],
                }
                for other, cell in result.paired("vpo", start_name, step, name, k).items()
            }
    return paired


def _write_start(stem: Path, start_name: str, result: StudyResult, meta: dict[str, Any]) -> None:
    """Write one start's ``<stem>.json``, ``<stem>.md`` and ``<stem>_values.npz``.

    Args:
        stem: ``<out>/<start>_V<variants>``.
        start_name: The start.
        result: The study's result for it.
        meta: The config written into the JSON and the tables' header.
    """
    summary = result.summary()[start_name]
    paired = _vpo_minus(result, start_name) if "vpo" in summary else {}
    stem.with_suffix(".json").write_text(
        json.dumps({"config": meta, "summary": summary, "vpo_minus": paired}, indent=1) + "\n"
    )
    stem.with_suffix(".md").write_text(render_markdown(start_name, summary, paired, meta))
    values: dict[str, Any] = {
        f"{a}/{step}/{name}": data
        for a, steps in result.values[start_name].items()
        for step, metrics in steps.items()
        for name, data in metrics.items()
    }
    np.savez_compressed(stem.parent / f"{stem.name}_values.npz", seeds=np.asarray(result.seeds), **values)


def main(argv: list[str] | None = None) -> int:
    config = run_cli(MechanismConfig, argv, prog="apps/mechanism.py", description=__doc__ or "")
    if isinstance(config, int):
        return config
    import vpo_core
    from vpo_lab.tabular import Start, run_study, stack_tables

    env = vpo_core.make(config.env)
    tasks = list(env.tasks(config.split))[: config.tasks]
    try:
        tables = _outcome_tables(env, config.env, tasks, config.invalid)
        candidates = stack_tables(tables, variants=config.variants)
        _check_memory(candidates, config)
        w_star = np.asarray(env.reward_spec.w_star, dtype=np.float64)
        arms = _arms(config.arm_names(), w_star, candidates.task_ids)
    except _Refused as refused:
        print(f"error: {refused}", file=sys.stderr)
        return 2
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    command = "uv run apps/mechanism.py " + " ".join(sys.argv[1:] if argv is None else argv)
    started = time.time()
    for start_name in config.start_names():
        invalid_mass, scale = STARTS[start_name]
        result = run_study(
            candidates,
            w_star=w_star,
            starts=[Start(start_name, invalid_mass, scale)],
            arms=arms,
            seeds=list(range(config.seeds)),
            steps=config.steps,
            checkpoints=config.checkpoint_steps(),
            group_size=config.group_size,
            lr=config.lr,
            n_candidates=config.candidates,
            progress=lambda line: print(f"[{time.time() - started:7.0f}s] {line}", flush=True),
        )
        meta = {**result.config, "env": config.env, "split": config.split, "command": command.strip(),
                "task_ids": result.task_ids, "outcomes_per_task": [int(t.valid.sum()) for t in tables],
                "pareto_per_task": [int(t.pareto.sum()) for t in tables]}  # fmt: skip
        stem = out / f"{start_name}_V{config.variants}"
        _write_start(stem, start_name, result, meta)
        print(f"wrote {stem}.md, {stem}.json and {stem}_values.npz")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
