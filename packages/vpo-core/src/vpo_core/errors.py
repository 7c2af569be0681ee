"""The project's user-error types: what a command reports as one line instead of a traceback.

A user error is a problem with what the user gave (an option, a file or directory, data that is not
there) whose message names the problem and the fix. The engines' entry points (``vpo train`` for
every engine) catch `UserError` only: any other exception, a ``ValueError`` raised deep inside a run
included, is a bug or an unexpected failure and propagates with its traceback.

Each type also subclasses the built-in exception that callers caught before it existed (a
`ConfigError` is a ``ValueError``, a `MissingDataError` a ``FileNotFoundError``), so existing
``except`` clauses keep working. This module imports nothing, so a command can catch these before
torch loads.
"""

from __future__ import annotations

__all__ = ["ConfigError", "DataFileError", "MissingDataError", "RunDirError", "ServerError", "UserError"]


class UserError(Exception):
    """A problem with the user's input; the message is one line naming the problem and the fix."""

    def __str__(self) -> str:
        # KeyError-style quoting never applies: the message is the first argument as written
        return str(self.args[0]) if self.args else type(self).__name__


class ConfigError(UserError, ValueError):
    """A bad option: an unknown key, a value of the wrong type or out of range, or options that conflict."""


class DataFileError(UserError, ValueError):
    """A file or directory the user named exists but cannot be used as it is (wrong format, corrupt, other run)."""


class RunDirError(DataFileError):
    """A run directory that cannot be used as it is; the message names the file and what to do."""


class MissingDataError(UserError, FileNotFoundError):
    """Data the run needs is not there: a dataset, a model directory, a checkpoint or a file named by an option."""


class ServerError(UserError, RuntimeError):
    """A server the user pointed at cannot be used: unreachable, refusing, too slow, or answering what no client takes.

    Raised by `vpo_core.http_json` (each failure its own subclass, telling a transient one from the rest) and by
    the clients built on it (`vpo-eval`'s sampler, the chat-template pre-fill, the reward-model scorer client,
    vpo-search's endpoint check); the message names the URL and what to do.
    """
