"""PNG plots of a run: rewards and diversity over steps; best@k against k is `vpo_core.evaluation.plots`'."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from vpo_core.evaluation.plots import HIGHLIGHT, integer_k_axis, k_ticks, line_style, plot_best_at_k, pyplot, smooth

__all__ = ["HIGHLIGHT", "integer_k_axis", "k_ticks", "line_style", "plot_best_at_k", "plot_training", "smooth"]


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
