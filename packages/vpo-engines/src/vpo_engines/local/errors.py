"""The local engine's own error, in a module that imports nothing heavy (the CLI catches it before torch loads).

The project's user-error types are `vpo_core.errors`'; import them from there.
"""

from __future__ import annotations

from vpo_core.errors import UserError

__all__ = ["NonFiniteLossError"]


class NonFiniteLossError(UserError, ValueError):
    """An RL step's loss was NaN or infinite: raised before the update, so the model stays as it was.

    A user error: the run's settings (a learning rate too large, an env's rewards) made training
    diverge, and the message names what to change; the last good checkpoint is kept.
    """
