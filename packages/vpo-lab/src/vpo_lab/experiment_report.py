"""Tables and plots with intervals from an experiment's summary folder (written by `experiment.collect`).

Every number is recomputed from the committed pools, so any metric can be re-analysed without
re-training. Per model, each test task gives one value per metric (best@k of the task's pool, its
E_w[best@5], its mean w*-score, the diversity of its pool); `vpo_core.stats` turns the (seed, task)
table of an arm into a mean with a seed-level interval (a t-interval over seeds with a shared-task
term; with one seed a task bootstrap, marked "task-level only"), and the paired (seed, task)
differences of two arms into an interval of the difference. ρ̄ is a property of a whole pool, so its
interval is over seeds only.

Where each arm fails: per arm, the share of tasks without a valid candidate (``no_valid``) and
best@k over the tasks it reaches and the ones it does not; per paired difference A − B, the part of
the difference that comes from the tasks B does not reach and the part from the others
(`vpo_core.evaluation.metrics.split_by_reach`; the two parts add up to the difference).
"""

from __future__ import annotations

import gzip
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vpo_core.evaluation.metrics import KS, REACH_SPLIT, best_at_k_curve_of_pool, split_by_reach, task_pool_metrics
from vpo_core.evaluation.pool_file import load_pool
from vpo_core.metrics import collinearity
from vpo_core.stats import Interval, paired_seed_interval, seed_interval, subset_seed_interval

__all__ = ["arm_name", "per_task_metrics", "split_differences", "summarise", "write_report"]

METRICS = (*(f"best@{k}" for k in KS), "E_w[best@5]", "pass@10", "diversity", "mean_w_star")
KEPT_METRICS = "metrics.jsonl.gz"  # a run's per-step records as kept in the results folder (runs/<run>/)
REGIME_METRICS = ("valid", "diversity_valid", "distinct_valid", "pareto_covered")
"""What says which regime a pool is in (`vpo_core.evaluation.metrics`): validity, valid-only spread, distinct outcomes, Pareto coverage."""
GOAL_METRICS = ("best@3", "best@6", "E_w[best@3]", "E_w[best@6]")
POOL_METRICS = ("pareto_fraction", "chain_pass@10", "solution_pass@10")
"""The authors' pool metrics: the Pareto fraction of each task's pool, chain- and solution-level pass@10."""
"""The columns of the paper's goal-conditioned table (goal-conditioned GRPO under w* and w ~ Dir(1) vs VPO)."""
REPORT_KS = tuple(sorted({*KS, 6}))
SPLIT_METRICS = ("best@3", "best@30", "E_w[best@5]")
"""The metrics split over the tasks an arm reaches and the ones it does not (`FAILURE_METRICS`, `split_differences`)."""
FAILURE_METRICS = ("no_valid", *(f"{m}|{part}" for m in SPLIT_METRICS[:2] for part in REACH_SPLIT))
"""Where an arm fails: the share of tasks with no valid candidate, and best@k over the tasks it reaches / does not."""


def per_task_metrics(env: Any, rewards: np.ndarray, *, mode: str) -> dict[str, Any]:
    """Per-task metrics of one model's pools on the first T test tasks (through `vpo_core.evaluation.metrics`'s k-loop).

    Args:
        env: The environment the pools were scored in.
        rewards: Pools, shape (T, n, m, d): n completions of m candidates on each of the first T test tasks.
        mode: ``"multi"`` (chain estimator) or ``"single"`` (iid).

    Returns:
        Each metric of `vpo_core.evaluation.metrics.task_pool_metrics` as an array of shape (T,), ``"curve"`` (T, K)
        best@k for k = 1..K, and ``"collinearity"`` (a float: ρ̄ of the whole pool).
    """
    tasks = list(env.tasks("test"))[: rewards.shape[0]]
    rows = [
        task_pool_metrics(env, task, pool, mode=mode, ks=REPORT_KS) for task, pool in zip(tasks, rewards, strict=True)
    ]
    out: dict[str, Any] = {key: np.array([row[key] for row in rows]) for key in rows[0]}
    scores = np.stack([env.spec_for(task).scalarize(pool) for task, pool in zip(tasks, rewards, strict=True)])
    out["curve"] = best_at_k_curve_of_pool(scores, mode=mode)
    out["collinearity"] = collinearity(rewards.reshape(-1, rewards.shape[-1]))
    return out


def arm_name(record: dict[str, Any]) -> str:
    """The arm of a pool: its method plus any conditioning suffix the evaluation added to the label."""
    method = str(record["method"])
    run = Path(str(record.get("run", ""))).name
    suffix = str(record["label"]).removeprefix(run) if run else ""
    suffix = suffix.removeprefix("-init").removeprefix("@init")
    suffix = re.sub(r"^@step[0-9]+", "", suffix)
    prefix = "" if record.get("variant", "main") == "main" else f"{record['variant']}:"
    step = f"@{record['step']}" if record.get("step") is not None else ""
    return f"{prefix}{method}{suffix}{step}"


def _split_arm(arm: str) -> tuple[str, str, str]:
    """(start prefix, method with any conditioning suffix, step suffix) of an arm name."""
    prefix, _, rest = arm.rpartition(":")
    method, at, step = rest.partition("@")
    if at and not step.isdigit():  # a conditioning suffix such as @w_star, not a step
        method, step = rest, ""
    elif at:
        step = f"@{step}"
    return (f"{prefix}:" if prefix else ""), method, step


def _arm_order(arm: str) -> tuple[str, str, int]:
    """Sort key of an arm: start, method, then RL step in number order (a warm start or final-only arm first)."""
    prefix, method, step = _split_arm(arm)
    return prefix, method, int(step[1:]) if step else -1


def _stack_by_seed(per_seed: dict[int, dict[str, Any]], key: str, seeds: Sequence[int]) -> np.ndarray:
    return np.stack([per_seed[s][key] for s in seeds])


def summarise(index_file: Path, env: Any) -> dict[str, Any]:
    """Intervals of every arm and metric, and paired differences against each baseline.

    Returns:
        ``{"arms": {arm: {"seeds": [...], "mode": str, metric: Interval-as-dict, ...}},
        "differences": {"vpo - grpo": {metric: Interval-as-dict}}, "curves": {arm: [[mean, low, high] per k]}}``.
    """
    index = json.loads(Path(index_file).read_text())
    root = Path(index_file).parent
    arms: dict[str, dict[int, dict[str, Any]]] = defaultdict(dict)
    modes: dict[str, str] = {}
    for record in index["pools"]:
        pool = load_pool(root / record["pool"])
        arm = arm_name(record)
        arms[arm][int(record["seed"])] = per_task_metrics(env, pool.rewards.astype(np.float64), mode=pool.mode)
        modes[arm] = pool.mode
    summary: dict[str, Any] = {"arms": {}, "differences": {}, "curves": {}}
    for arm, per_seed in sorted(arms.items(), key=lambda item: _arm_order(item[0])):
        seeds = sorted(per_seed)
        entry: dict[str, Any] = {"seeds": seeds, "mode": modes[arm]}
        for metric in dict.fromkeys((*METRICS, *GOAL_METRICS, *REGIME_METRICS, *POOL_METRICS)):
            if all(metric in per_seed[s] for s in seeds):
                entry[metric] = _interval(seed_interval(_stack_by_seed(per_seed, metric, seeds)))
        entry.update(_failure_entries(per_seed, seeds))
        rho = np.array([[per_seed[s]["collinearity"]] for s in seeds])
        if np.all(np.isfinite(rho)):
            entry["collinearity"] = _interval(seed_interval(rho))
        summary["arms"][arm] = entry
        curves = _stack_by_seed(per_seed, "curve", seeds) if _same_width(per_seed, seeds) else None
        if curves is not None:
            summary["curves"][arm] = [
                list(_triple(seed_interval(curves[:, :, k], replicates=1000))) for k in range(curves.shape[2])
            ]
    for vpo_arm in sorted((a for a in arms if _split_arm(a)[1] == "vpo"), key=_arm_order):
        prefix, _, step = _split_arm(vpo_arm)
        if prefix == "ablation:":
            continue
        others = [a for a in arms if _split_arm(a)[0] == prefix and _split_arm(a)[2] == step and a != vpo_arm]
        for other in [a for a in others if not a.startswith(f"{prefix}warm-")]:
            common = sorted(set(arms[vpo_arm]) & set(arms[other]))
            if not common:
                continue
            diffs = {}
            for metric in (*METRICS, *REGIME_METRICS):
                if all(metric in arms[vpo_arm][s] and metric in arms[other][s] for s in common):
                    a = _stack_by_seed(arms[vpo_arm], metric, common)
                    b = _stack_by_seed(arms[other], metric, common)
                    diffs[metric] = _interval(paired_seed_interval(a, b))
            diffs.update(split_differences(arms[vpo_arm], arms[other], common))
            summary["differences"][f"{vpo_arm} - {other}"] = diffs
    return summary


def _failure_entries(per_seed: dict[int, dict[str, Any]], seeds: Sequence[int]) -> dict[str, dict[str, Any]]:
    """`FAILURE_METRICS` of one arm as intervals (a best@k part left out where no task of any seed is in it)."""
    if not all("no_valid" in per_seed[s] for s in seeds):
        return {}
    unreached = _stack_by_seed(per_seed, "no_valid", seeds) > 0.5
    out = {"no_valid": _interval(seed_interval(unreached.astype(np.float64)))}
    for metric in SPLIT_METRICS[:2]:
        if not all(metric in per_seed[s] for s in seeds):
            continue
        values = _stack_by_seed(per_seed, metric, seeds)
        for part, mask in zip(REACH_SPLIT, (~unreached, unreached), strict=True):
            if mask.any():
                out[f"{metric}|{part}"] = _interval(subset_seed_interval(values, mask))
    return out


def split_differences(
    a: dict[int, dict[str, Any]], b: dict[int, dict[str, Any]], seeds: Sequence[int]
) -> dict[str, dict[str, Any]]:
    """A − B split over the tasks B reaches and the ones it does not, paired by seed and task.

    Args:
        a: Per-seed per-task metrics of arm A (`per_task_metrics` per seed).
        b: The same of arm B.
        seeds: The seeds both ran.

    Returns:
        ``"B no_valid"``: the share of tasks B does not reach; and per metric of `SPLIT_METRICS`,
        ``"<metric>|B unreached"`` and ``"<metric>|B reached"``: the parts of the mean difference
        that come from those tasks (each a mean over all tasks, so the two add up to the difference),
        as intervals. Empty when B's pools carry no ``no_valid``.
    """
    if not all("no_valid" in b[s] for s in seeds):
        return {}
    reached = _stack_by_seed(b, "no_valid", seeds) < 0.5
    out = {"B no_valid": _interval(seed_interval((~reached).astype(np.float64)))}
    for metric in SPLIT_METRICS:
        if not all(metric in a[s] and metric in b[s] for s in seeds):
            continue
        parts = split_by_reach(_stack_by_seed(a, metric, seeds) - _stack_by_seed(b, metric, seeds), reached)
        for part in reversed(REACH_SPLIT):
            out[f"{metric}|B {part}"] = _interval(seed_interval(parts[part]))
    return out


def _same_width(per_seed: dict[int, dict[str, Any]], seeds: Sequence[int]) -> bool:
    return len({per_seed[s]["curve"].shape for s in seeds}) == 1


def _interval(ci: Interval) -> dict[str, Any]:
    return ci.as_dict()


def _triple(ci: Interval) -> tuple[float, float, float]:
    return ci.estimate, ci.low, ci.high


def _cell(entry: dict[str, Any] | None) -> str:
    """The cell "mean [low, high]", with † where the interval is task-level only (one seed)."""
    if entry is None:
        return "—"
    mark = "" if entry.get("seed_level", True) else " †"
    return f"{entry['mean']:.3f} [{entry['low']:.3f}, {entry['high']:.3f}]{mark}"


def _header(metric: str) -> str:
    """A metric's name as a markdown column header (no bare "|")."""
    base, _, part = metric.partition("|")
    return f"{base}, {part} tasks" if part else metric


def markdown(summary: dict[str, Any]) -> str:
    """The arms table and the paired-difference table, each cell "mean [95% interval]"."""
    columns = [*METRICS, "collinearity"]
    regime = [c for c in REGIME_METRICS if any(c in entry for entry in summary["arms"].values())]
    lines = [
        "| arm | mode | seeds | " + " | ".join(columns) + " |",
        "|" + "---|" * (3 + len(columns)),
    ]
    for arm, entry in summary["arms"].items():
        cells = [_cell(entry.get(c)) for c in columns]
        lines.append(f"| {arm} | {entry['mode']} | {len(entry['seeds'])} | " + " | ".join(cells) + " |")
    if regime:
        lines += _arm_table(summary, "arm", list(summary["arms"]), regime)
    if summary["differences"]:
        lines += ["", "| paired difference | " + " | ".join(METRICS) + " |", "|" + "---|" * (1 + len(METRICS))]
        for name, diffs in summary["differences"].items():
            cells = []
            for metric in METRICS:
                entry = diffs.get(metric)
                mark = "" if entry is None or entry["low"] <= 0 <= entry["high"] else " *"
                cells.append(_cell(entry) + mark)
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
        lines.append(
            "`*`: the 95% interval excludes 0 (seed-level t-interval with a shared-task term, paired by seed and "
            "task; `vpo_core.stats`). †: one seed, so the interval is over tasks only (task-level only)."
        )
    failing = [a for a, e in summary["arms"].items() if "no_valid" in e]
    if failing:
        lines += _arm_table(summary, "where each arm fails", failing, list(FAILURE_METRICS))
        lines.append("")
        lines.append(
            "no_valid: share of tasks where no candidate of the pool is valid (the task is not reached); "
            "best@k, reached / unreached tasks: mean best@k over the tasks the arm reaches / does not reach."
        )
    split = {n: d for n, d in summary["differences"].items() if "B no_valid" in d}
    if split:
        columns = ["B no_valid"] + [f"{m}{part}" for m in SPLIT_METRICS for part in ("", "|B unreached", "|B reached")]
        lines += ["", "| A - B, split by B's reach | " + " | ".join(_split_header(c) for c in columns) + " |"]
        lines.append("|" + "---|" * (1 + len(columns)))
        for name, diffs in split.items():
            lines.append(f"| {name} | " + " | ".join(_cell(diffs.get(c)) for c in columns) + " |")
        lines.append("")
        lines.append(
            "Each metric's lead of A over B, and the parts of it from the tasks B does not reach (no valid "
            "candidate in B's pool) and from the others; each part is a mean over all tasks, so the two add up."
        )
    pool_arms = [a for a, e in summary["arms"].items() if any(c in e for c in POOL_METRICS)]
    if pool_arms:
        lines += _arm_table(summary, "pool metrics", pool_arms, POOL_METRICS)
        lines.append("")
        lines.append(
            "pareto_fraction: share of a task's pool that no other candidate of the pool dominates; "
            "chain_pass@10: one of 10 completions (chains of m candidates) solves the task; "
            "solution_pass@10: one of 10 candidates drawn from the whole pool solves it."
        )
    goal_arms = [a for a in summary["arms"] if a.startswith("goal_cond") or a == "vpo"]
    if any(a.startswith("goal_cond") for a in goal_arms):
        lines += _arm_table(summary, "goal-conditioned table", goal_arms, GOAL_METRICS)
    return "\n".join(lines)


def _split_header(column: str) -> str:
    base, _, part = column.partition("|")
    if not part:
        return f"{base} lead" if base != "B no_valid" else "B: tasks not reached"
    return f"{base}: from tasks B {'misses' if part == 'B unreached' else 'reaches'}"


def _arm_table(summary: dict[str, Any], title: str, arms: Sequence[str], columns: Sequence[str]) -> list[str]:
    """A blank line, then a markdown table of `columns` per arm (with its seed count)."""
    lines = ["", f"| {title} | seeds | " + " | ".join(map(_header, columns)) + " |", "|" + "---|" * (2 + len(columns))]
    for arm in arms:
        entry = summary["arms"][arm]
        cells = [_cell(entry.get(c)) for c in columns]
        lines.append(f"| {arm} | {len(entry['seeds'])} | " + " | ".join(cells) + " |")
    return lines


def plot(summary: dict[str, Any], root: Path, index: dict[str, Any]) -> list[Path]:
    """best@k vs k per arm, and diversity over training per method, readable with 8+ curves.

    The method of interest (`plots.HIGHLIGHT`, VPO) is drawn bold in red on top with its seed band;
    the baselines are thin muted lines without bands. k ticks are integers on a log axis. Diversity
    curves are the mean over seeds smoothed by a trailing moving average (about a tenth of the steps).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from vpo_core.evaluation.plots import HIGHLIGHT, line_style, smooth

    written = []
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)  # (start, step) -> arms
    for arm in summary["curves"]:
        prefix, _, step = _split_arm(arm)
        if prefix != "ablation:":
            groups[(prefix, step)].append(arm)
    for (prefix, step), arms in groups.items():
        if not step and any(s for p, s in groups if p == prefix):
            continue  # the warm starts of a start with steps are drawn in each of its step plots
        warm = [a for a in groups.get((prefix, ""), []) if step and _split_arm(a)[1].startswith("warm-")]
        name = "best_at_k" + (f"_{prefix.rstrip(':')}" if prefix else "") + (f"_step{step[1:]}" if step else "")
        written.append(_plot_curves(summary, [*warm, *arms], root / f"{name}.png", title=f"{prefix}{step}"))

    by_method: dict[str, list[list[float]]] = defaultdict(list)
    for run_dir in sorted((root / "runs").glob("*__*")):
        metrics_file = run_dir / KEPT_METRICS
        if not metrics_file.exists() or run_dir.name.startswith("ablation__"):
            continue
        rows = [
            json.loads(line)
            for line in gzip.decompress(metrics_file.read_bytes()).decode().splitlines()
            if line.strip()
        ]
        method = run_dir.name.removeprefix("main__").rsplit("-seed", 1)[0].replace("__", ":")
        by_method[method].append([float(r["diversity"]) for r in rows if "diversity" in r])
    if by_method:
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        window = 1
        for position, (method, series) in enumerate(sorted(by_method.items())):
            length = min(len(s) for s in series)
            if length == 0:
                continue
            window = max(1, length // 10)
            values = np.array([s[:length] for s in series])
            steps = np.arange(length)
            style = line_style(method.rpartition(":")[2], position)
            ax.plot(steps, smooth(list(values.mean(axis=0)), window), label=f"{method} ({len(series)} seeds)", **style)
            if method.rpartition(":")[2] == HIGHLIGHT:
                low = smooth(list(values.min(axis=0)), window)
                high = smooth(list(values.max(axis=0)), window)
                ax.fill_between(steps, low, high, color=style["color"], alpha=0.15, linewidth=0)
        ax.set_xlabel("RL step")
        ax.set_ylabel(f"reward-space diversity (moving average of {window})")
        ax.grid(alpha=0.3)
        ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
        fig.tight_layout()
        path = root / "diversity.png"
        fig.savefig(path, dpi=120, bbox_inches="tight")
        plt.close(fig)
        written.append(path)
    return written


def _plot_curves(summary: dict[str, Any], arms: list[str], path: Path, *, title: str) -> Path:
    """best@k vs k of `arms` in one figure (the method of interest bold with its band)."""
    import matplotlib.pyplot as plt

    from vpo_core.evaluation.plots import HIGHLIGHT, integer_k_axis, line_style

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    max_k = 1
    for position, arm in enumerate(arms):
        values = np.asarray(summary["curves"][arm])
        ks = np.arange(1, len(values) + 1)
        max_k = max(max_k, len(values))
        method = _split_arm(arm)[1]
        style = line_style(method, position)
        ax.plot(ks, values[:, 0], "--" if method.startswith("warm-") else "-", label=arm, **style)
        if method.split(" ", 1)[0] == HIGHLIGHT:
            ax.fill_between(ks, values[:, 1], values[:, 2], color=style["color"], alpha=0.15, linewidth=0)
    integer_k_axis(ax, max_k)
    ax.set_xlabel("k (candidates)")
    ax.set_ylabel("best@k (w*-score)")
    if title:
        ax.set_title(title, fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)
    return path


def write_report(index_file: Path) -> Path:
    """Write ``summary.json``, ``table.md`` and the plots beside the index; returns ``table.md``."""
    import vpo_core

    index_file = Path(index_file)
    index = json.loads(index_file.read_text())
    env = vpo_core.make(index["config"]["env"])
    summary = summarise(index_file, env)
    root = index_file.parent
    (root / "summary.json").write_text(json.dumps(summary, indent=1))
    table = root / "table.md"
    table.write_text(markdown(summary) + "\n")
    plot(summary, root, index)
    return table
