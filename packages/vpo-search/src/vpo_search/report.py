"""pass@k and best@k over search iterations, the best program, and the paper's figure.

After iteration t a problem's search has produced k = m·t candidates (the m of each model call, a
candidate the completion lacked counting as a failure). pass@k is 1 once one of them solves the
problem, best@k is the best normalized w*-score among them (for LiveCodeBench, the best pass rate).
The candidates of a search are a trajectory, not exchangeable draws, so k is always all candidates so
far: vpo-core's unbiased estimators at k = n reduce to exactly these (`pass_at_k(n, c, n)` and
`best_at_k(scores, n)`). The figure averages them over problems, one curve per arm, as in the paper.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from vpo_search.ledger import Ledger, program_hash

__all__ = ["collect", "evaluate_from_context", "plot_curves", "problem_summary", "write_report"]

Evaluate = Callable[[Path, str], dict[str, Any]]


def evaluate_from_context(root: Path, program: str) -> dict[str, Any]:
    """Evaluate a program with the env saved in the run's state directory; returns its ``eval`` record."""
    from vpo_search.evaluator import score_program

    score_program(root, program)
    return Ledger(root).evaluations()[program_hash(program)]


def problem_summary(root: Path, evaluate_missing: Evaluate | None = evaluate_from_context) -> dict[str, Any]:
    """Curves and best program of one problem and arm, from its ledger.

    The curves measure every candidate on every test (hidden ones included). The best program is the
    search's final answer: chosen by the score the search saw (public tests, unless the run showed all),
    the latest of equals, then reported with its full score and verdicts.

    Args:
        root: The run's state directory.
        evaluate_missing: Called as ``(root, program)`` for a candidate without an evaluation record (the
            search stopped before OpenEvolve evaluated it); returns the ``eval`` record. None: such
            candidates raise.

    Returns:
        The summary (JSON-ready).

    Raises:
        ValueError: If a candidate has no evaluation and `evaluate_missing` is None.
    """
    ledger = Ledger(root)
    run = json.loads((root / "run.json").read_text())
    calls = ledger.completed_calls()
    evaluations = ledger.evaluations()
    scores: list[list[float]] = []
    best: dict[str, Any] | None = None
    solved_at = None
    failed_candidates = 0
    for t, call in enumerate(calls, start=1):
        row = []
        for j, program in enumerate(call["candidates"]):
            if program is None:
                failed_candidates += 1
                row.append(0.0)
                continue
            record = evaluations.get(program_hash(program))
            if record is None:
                if evaluate_missing is None:
                    raise ValueError(f"{root}: candidate {j} of iteration {t} has no evaluation.")
                record = evaluate_missing(root, program)
                evaluations[record["hash"]] = record
            row.append(float(record["score"]))
            if record["success"] and solved_at is None:
                solved_at = t
            if best is None or _search_score(record) >= _search_score(best):
                best = {"iteration": t, "candidate": j, "program": program, **_public(record)}
        scores.append(row)
    if scores:
        per_call = np.array([max(row) for row in scores])
        best_at_k = np.maximum.accumulate(per_call)
    else:
        best_at_k = np.zeros(0)
    pass_at_k = np.array([1.0 if solved_at is not None and t >= solved_at else 0.0 for t in range(1, len(calls) + 1)])
    m = int(run["m"])
    errors = [r for r in ledger.calls() if r.get("kind") == "call_error"]
    return {
        "task": run["task"],
        "arm": run["arm"],
        "model": run["model"],
        "m": m,
        "iterations": len(calls),
        "candidates": m * len(calls),
        "failed_candidates": failed_candidates,
        "failed_calls": len(errors),
        "solved": solved_at is not None,
        "solved_at_iteration": solved_at,
        "k": [m * t for t in range(1, len(calls) + 1)],
        "pass_at_k": pass_at_k.tolist(),
        "best_at_k": best_at_k.tolist(),
        "best": best,
    }


def _search_score(record: dict[str, Any]) -> float:
    """The score the search saw (the public one; the full score in records written before it existed)."""
    return float(record.get("search_score", record["score"]))


def _public(record: dict[str, Any]) -> dict[str, Any]:
    return {key: record[key] for key in ("score", "success", "rewards", "verdicts")} | {
        "search_score": _search_score(record)
    }


def _mean_curve(curves: list[list[float]], length: int) -> list[float]:
    """Mean over problems; a search that stopped early (solved, or cut short) keeps its last value."""
    if not curves or length == 0:
        return []
    rows = np.zeros((len(curves), length))
    for i, curve in enumerate(curves):
        if curve:
            rows[i, : len(curve)] = curve[:length]
            rows[i, len(curve) :] = curve[-1]
    return rows.mean(axis=0).tolist()


def collect(out: Path, evaluate_missing: Evaluate | None = evaluate_from_context) -> dict[str, Any]:
    """Summaries of every problem and arm under `out`, and the mean curves per arm.

    Returns:
        ``{"arms": {arm: {"problems": {task: summary}, "pass_at_k": [...], "best_at_k": [...], "solved",
        "complete"}}, "iterations": T}`` where T is the longest search.
    """
    arms: dict[str, Any] = {}
    for arm_dir in sorted(p for p in out.iterdir() if p.is_dir()) if out.exists() else []:
        problems = {}
        for root in sorted(p for p in arm_dir.iterdir() if (p / "run.json").exists()):
            summary = problem_summary(root, evaluate_missing)
            problems[summary["task"]] = summary
        if problems:
            arms[arm_dir.name] = {"problems": problems}
    length = max((s["iterations"] for a in arms.values() for s in a["problems"].values()), default=0)
    for arm in arms.values():
        summaries = list(arm["problems"].values())
        arm["pass_at_k"] = _mean_curve([s["pass_at_k"] for s in summaries], length)
        arm["best_at_k"] = _mean_curve([s["best_at_k"] for s in summaries], length)
        arm["solved"] = sum(s["solved"] for s in summaries)
        arm["complete"] = [s["task"] for s in summaries if s["iterations"] == length or s["solved"]]
    report: dict[str, Any] = {"iterations": length, "arms": arms}
    task_sets = {name: sorted(a["problems"]) for name, a in arms.items()}
    if len({tuple(v) for v in task_sets.values()}) > 1:
        report["warning"] = "the arms searched different problems; their means are not comparable"
    return report


def plot_curves(report: dict[str, Any], path: Path, *, title: str = "") -> None:
    """The paper's Fig. 4C, D: mean pass@k and best@k over search iterations, one curve per arm."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    for name, arm in report["arms"].items():
        count = len(arm["problems"])
        x = np.arange(1, len(arm["pass_at_k"]) + 1)
        axes[0].plot(x, arm["pass_at_k"], drawstyle="steps-post", label=f"{name} ({arm['solved']}/{count} solved)")
        axes[1].plot(x, arm["best_at_k"], drawstyle="steps-post", label=name)
    for ax, label in zip(axes, ("pass@k", "best@k"), strict=True):
        ax.set_xlabel("search iteration (k = m · iteration candidates)")
        ax.set_ylabel(label)
        ax.set_ylim(-0.02, 1.02)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.grid(alpha=0.3)
        ax.legend(loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=150)
    plt.close(fig)


def write_report(
    out: Path, evaluate_missing: Evaluate | None = evaluate_from_context, *, title: str = ""
) -> dict[str, Any]:
    """Write ``<out>/<arm>/<problem>/result.json``, ``<out>/search.json`` and ``<out>/search.png``."""
    report = collect(out, evaluate_missing)
    for arm, data in report["arms"].items():
        for summary in data["problems"].values():
            target = out / arm / summary["task"].replace("/", "__") / "result.json"
            target.write_text(json.dumps(summary, indent=2))
    (out / "search.json").write_text(json.dumps(report, indent=2))
    if report["arms"]:
        plot_curves(report, out / "search.png", title=title)
    return report
