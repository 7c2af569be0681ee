"""PNG plots of evaluations: best@k against k, and the axis and curve styles every plot shares (matplotlib, Agg)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = ["HIGHLIGHT", "integer_k_axis", "k_ticks", "line_style", "plot_best_at_k", "pyplot", "smooth"]

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
