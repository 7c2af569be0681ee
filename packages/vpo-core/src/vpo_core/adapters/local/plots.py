"""PNG plots of a run: rewards and diversity over steps, best@k against k (matplotlib, Agg)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["plot_best_at_k", "plot_training"]


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_training(history: Sequence[dict[str, Any]], path: Path, *, title: str) -> None:
    """Reward (mean w*, set reward, best-of-m) and reward-space diversity against the RL step."""
    plt = _pyplot()
    steps = [h["step"] for h in history]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.6))
    for key, label in (("mean_w_star", "mean w*·r"), ("best_of_m", "best-of-m w*·r"), ("set_reward", "set reward")):
        left.plot(steps, [h[key] for h in history], label=label)
    left.set_xlabel("RL step")
    left.set_ylabel("reward")
    left.legend()
    right.plot(steps, [h["diversity"] for h in history], color="tab:green")
    right.set_xlabel("RL step")
    right.set_ylabel("reward-space diversity (mean pairwise L1)")
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_best_at_k(results: Sequence[Any], path: Path, *, title: str) -> None:
    """best@k (w*) against k for several evaluated policies (objects with ``name`` and ``curve``)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for result in results:
        ks = range(1, len(result.curve) + 1)
        ax.plot(ks, result.curve, marker="o", markersize=3, label=f"{result.name} ({result.mode}, m={result.m})")
    ax.set_xlabel("k (candidates)")
    ax.set_ylabel("best@k (w*·r)")
    ax.set_xscale("log")
    ax.legend()
    ax.set_title(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
