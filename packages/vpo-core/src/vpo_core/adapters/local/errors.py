"""Errors of the local engine, in a module that imports nothing heavy (the CLI catches them before torch loads)."""

from __future__ import annotations

__all__ = ["NonFiniteLossError"]


class NonFiniteLossError(ValueError):
    """An RL step's loss was NaN or infinite: raised before the update, so the model stays as it was."""
