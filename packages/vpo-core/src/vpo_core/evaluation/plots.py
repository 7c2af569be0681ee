"""PNG plots of evaluations and runs (matplotlib, Agg).

best@k against k (`plot_best_at_k`), a training run's rewards and diversity over RL steps (`plot_training`,
from its ``metrics.jsonl`` records), and the axis and curve styles every plot shares.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "HIGHLIGHT",
    "integer_k_axis",
    "k_ticks",
    "line_style",
    "plot_best_at_k",
    "plot_training",
    "pyplot",
    "smooth",
]

HIGHLIGHT = "vpo"
"""The method of interest: drawn bold and on top; every other curve is thin and muted."""
_MUTED = ("#4c72b0", "#55a868", "#8172b2", "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd", "#dd8452")


def pyplot() -> Any:
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def smooth(values: Sequence[float], window: int) -> list[float]:
    """Trailing moving average over up to `window` points (the first points average what exists)."""
    out, total = [], 0.0
    for i, value in enumerate(values):
        total += value
        if i >= window:
            total -= values[i - window]
        out.append(total / min(i + 1, window))
    return out


def k_ticks(max_k: int) -> list[int]:
    """Integer tick positions for a log-scaled k axis up to `max_k`: 1, 2, 3, 5, 10, 20, 30, 50, 100, ..."""
    ticks, decade = [], 1
    while decade <= max_k:
        ticks += [t * decade for t in (1, 2, 3, 5) if t * decade <= max_k]
        decade *= 10
    return ticks if max_k in ticks or max_k < 1 else [*ticks, max_k]


def integer_k_axis(ax: Any, max_k: int) -> None:
    """A log-scaled x axis of k with integer tick labels only (no 10^0 notation, no minor ticks)."""
    from matplotlib.ticker import FixedLocator, NullLocator, ScalarFormatter

    ax.set_xscale("log")
    ax.xaxis.set_major_locator(FixedLocator(k_ticks(max_k)))
    formatter = ScalarFormatter()
    formatter.set_scientific(False)
    ax.xaxis.set_major_formatter(formatter)
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(1, max(2, max_k))


def line_style(name: str, position: int, *, highlight: str = HIGHLIGHT) -> dict[str, Any]:
    """Matplotlib keywords of one curve: the method of interest bold red on top, the others thin and muted.

    Args:
        name: The curve's label (a method or arm name; ``vpo``, ``vpo (5 seeds)`` and ``vpo:w_star`` match
            the highlight ``vpo``).
        position: The curve's index among the muted ones (picks its colour).
        highlight: The method of interest.
    """
    head = name.split(" ", 1)[0].split(":", 1)[0]
    if head == highlight:
        return {"color": "#c44e52", "linewidth": 2.6, "alpha": 1.0, "zorder": 10}
    return {"color": _MUTED[position % len(_MUTED)], "linewidth": 1.2, "alpha": 0.75, "zorder": 2}


def plot_best_at_k(results: Sequence[Any], path: Path, *, title: str) -> None:
    """best@k (w*) against k for several evaluated policies (objects with ``name`` and ``curve``)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for position, result in enumerate(results):
        ks = range(1, len(result.curve) + 1)
        label = f"{result.name} ({result.mode}, m={result.m})"
        ax.plot(ks, result.curve, marker="o", markersize=3, label=label, **line_style(label, position, highlight=""))
    ax.set_xlabel("k (candidates)")
    ax.set_ylabel("best@k (w*·r)")
    integer_k_axis(ax, max((len(r.curve) for r in results), default=1))
    ax.grid(alpha=0.3)
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_training(history: Sequence[dict[str, Any]], path: Path, *, title: str, window: int | None = None) -> None:
    """Reward (mean w*, set reward, best-of-m) and reward-space diversity against the RL step.

    Raw per-step values are drawn faintly, a trailing moving average (`window`, default ~1/10 of the
    steps) boldly; the legend sits below the axes, off the curves.
    """
    plt = pyplot()
    steps = [h["step"] for h in history]
    window = window or max(1, len(history) // 10)
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4.2))
    series = (("mean_w_star", "mean w*·r"), ("best_of_m", "best-of-m w*·r"), ("set_reward", "set reward"))
    for (key, label), color in zip(series, ("tab:blue", "tab:orange", "tab:purple"), strict=True):
        values = [h[key] for h in history]
        left.plot(steps, values, color=color, alpha=0.25, linewidth=0.8)
        left.plot(steps, smooth(values, window), color=color, linewidth=1.8, label=label)
    left.set_xlabel("RL step")
    left.set_ylabel(f"reward (moving average of {window})")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=3, frameon=False, fontsize=8)
    diversity = [h["diversity"] for h in history]
    right.plot(steps, diversity, color="tab:green", alpha=0.25, linewidth=0.8)
    right.plot(steps, smooth(diversity, window), color="tab:green", linewidth=1.8)
    right.set_xlabel("RL step")
    right.set_ylabel("reward-space diversity (mean pairwise L1)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)
