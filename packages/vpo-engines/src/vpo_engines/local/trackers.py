"""Experiment tracking of the local engine: ``logger=console|tensorboard|wandb`` (comma-separated).

Metric names follow what veRL 0.9 logs for the same quantities (``actor/pg_loss``, ``actor/kl_loss``,
``actor/entropy``, ``actor/pg_clipfrac``, ``actor/grad_norm``, ``critic/score/mean``,
``critic/advantages/mean``, ``response_length/mean``, ``timing_s/gen`` ...), so curves of both engines
sit side by side in one dashboard; VPO's own quantities are ``reward/<dim>``, ``mean_w_star``,
``set_reward``, ``best_of_m`` and ``diversity``.

``console`` is the progress bar (always on). ``tensorboard`` writes event files under
``<run dir>/tensorboard`` (needs the ``tensorboard`` package); ``wandb`` logs to Weights & Biases
(needs ``wandb``; ``WANDB_MODE=offline`` works without an account and writes under ``<run dir>/wandb``).
Both are imported only when asked for.
"""

from __future__ import annotations

import hashlib
import importlib
import numbers
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from vpo_core.errors import ConfigError

__all__ = ["Tracker", "TrackerSet", "check_trackers", "open_trackers"]

_PACKAGES = {"tensorboard": "tensorboard", "wandb": "wandb"}


class Tracker(Protocol):
    """One experiment tracker."""

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        """Record the numeric metrics of one step."""
        ...

    def close(self) -> None:
        """Flush and close."""
        ...


def _numeric(metrics: Mapping[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in metrics.items() if isinstance(v, numbers.Real) and not isinstance(v, bool)}


def _import_for(logger: str, module: str, note: str) -> Any:
    """The module a logger needs, or a `ConfigError` naming the package to install (`note`: a hint on it)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise ConfigError(
            f"logger={logger} needs the {logger} package: pip install 'vpo-engines[tracking]' ({note}), or drop it "
            "from logger=."
        ) from None


class _TensorBoard:
    def __init__(self, run_dir: Path, config: Mapping[str, Any]) -> None:
        tensorboard = _import_for("tensorboard", "torch.utils.tensorboard", "or uv pip install tensorboard")
        self.writer = tensorboard.SummaryWriter(log_dir=str(run_dir / "tensorboard"))
        self.writer.add_text("config", "\n".join(f"    {k}: {v}" for k, v in config.items()))

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        for key, value in _numeric(metrics).items():
            self.writer.add_scalar(key, value, global_step=step)

    def close(self) -> None:
        self.writer.close()


class _Wandb:
    def __init__(self, run_dir: Path, config: Mapping[str, Any]) -> None:
        wandb = _import_for("wandb", "wandb", "WANDB_MODE=offline works without an account")
        self.wandb = wandb
        self.run = wandb.init(
            project="vpo-local",
            name=run_dir.name,
            dir=str(run_dir),
            config=dict(config),
            resume="allow",
            id=f"{run_dir.name}-{hashlib.sha256(str(run_dir.resolve()).encode()).hexdigest()[:8]}",
        )

    def log(self, metrics: Mapping[str, float], step: int) -> None:
        self.run.log(_numeric(metrics), step=step)

    def close(self) -> None:
        self.run.finish()


class TrackerSet:
    """The trackers of a run, logged to and closed together."""

    def __init__(self, trackers: Sequence[Any]) -> None:
        self.trackers = list(trackers)

    def log(self, metrics: Mapping[str, Any], step: int) -> None:
        """Log one step's numeric metrics to every tracker."""
        for tracker in self.trackers:
            tracker.log(metrics, step)

    def close(self) -> None:
        """Close every tracker."""
        for tracker in self.trackers:
            tracker.close()


def _installed(package: str) -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ImportError, ValueError):  # a module blocked in sys.modules (None) has no spec
        return False


def check_trackers(names: Sequence[str]) -> None:
    """Check, without importing them, that the trackers' packages are installed (before any warm-up).

    Raises:
        ConfigError: Naming the package to install, as `open_trackers` would, minutes earlier.
    """
    for name in names:
        package = _PACKAGES.get(name)
        if package is not None and not _installed(package):
            raise ConfigError(
                f"logger={name} needs the {package} package: pip install 'vpo-engines[tracking]' (or uv pip install "
                f"{package}), or drop it from logger=."
            )


def open_trackers(names: Sequence[str], run_dir: Path, *, config: Mapping[str, Any]) -> TrackerSet:
    """Open the trackers named in ``logger=`` (``console`` is the progress bar and needs nothing here).

    Raises:
        ConfigError: Naming the package to install if a tracker's package is missing.
    """
    trackers: list[Any] = []
    for name in names:
        if name == "tensorboard":
            trackers.append(_TensorBoard(Path(run_dir), config))
        elif name == "wandb":
            trackers.append(_Wandb(Path(run_dir), config))
        elif name != "console":
            raise ConfigError(f"unknown logger {name!r}; choose console, tensorboard or wandb.")
    return TrackerSet(trackers)
