"""Environment discovery through the ``vpo.envs`` entry-point group: lazy and loud.

`list_envs` reads package metadata only; `make` imports exactly the one package that provides the
requested id. A plugin that fails to import raises; it is never skipped.
"""

from __future__ import annotations

import difflib
import importlib
import logging
import re
from collections.abc import Callable, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from vpo_core.env import TextEnv
from vpo_core.env_options import check_options
from vpo_core.errors import ConfigError, DataFileError, MissingDataError, UserError

__all__ = [
    "DEFAULT_ENV",
    "ENTRY_POINT_GROUP",
    "check_env_options",
    "env_tasks",
    "list_envs",
    "make",
    "make_env",
    "resolve_env_class",
]

ENTRY_POINT_GROUP = "vpo.envs"
DEFAULT_ENV = "maze-v1"
"""The env of the embedded default run (``uv run vpo train`` with no arguments) and the apps' default
``env=``: the one env id in vpo-core's code, a choice of the project, not a rule of the protocol."""
_VERSIONED = re.compile(r"^(?P<name>.+)-v(?P<version>\d+)$")
logger = logging.getLogger(__name__)


def _entry_points() -> dict[str, EntryPoint]:
    found: dict[str, EntryPoint] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in found and found[ep.name].value != ep.value:
            first = getattr(found[ep.name].dist, "name", "?")
            second = getattr(ep.dist, "name", "?")
            raise RuntimeError(
                f"env id {ep.name!r} is registered twice in {ENTRY_POINT_GROUP!r}: by {first} "
                f"({found[ep.name].value}) and by {second} ({ep.value}); uninstall one of them."
            )
        found[ep.name] = ep
    return found


def list_envs() -> list[str]:
    """Ids of every installed environment, sorted. Imports nothing."""
    return sorted(_entry_points())


def _resolve_id(env_id: str, available: dict[str, EntryPoint]) -> str:
    if env_id in available:
        return env_id
    if not _VERSIONED.match(env_id):
        versions = [
            (int(m.group("version")), name)
            for name in available
            if (m := _VERSIONED.match(name)) and m.group("name") == env_id
        ]
        if versions:
            latest = max(versions)[1]
            logger.info("env id %r has no version; using the latest, %r.", env_id, latest)
            return latest
    close = difflib.get_close_matches(env_id, list(available), n=3, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    if (gym_name := env_id.rpartition("/")[2].lower()) in available and "/" in env_id:
        package = available[gym_name].module.split(".")[0]
        hint = (
            f" {env_id!r} is a gymnasium id: use `vpo_core.make({gym_name!r})`, or with gymnasium "
            f'`gymnasium.make("{package}:{env_id}")` (the `module:` prefix imports the package that registers it).'
        )
    installed = ", ".join(sorted(available)) or "none"
    raise KeyError(
        f"unknown env id {env_id!r}.{hint} Installed envs: {installed}. "
        f"Install the env's package (e.g. `pip install env-maze`) or pass 'package.module:Class'."
    )


def resolve_env_class(env_id: str) -> type[TextEnv[Any, Any]]:
    """The class behind an env id, importing only its package.

    Args:
        env_id: An installed id (``"maze-v1"``), an unversioned name (``"maze"``, the latest version),
            or ``"package.module:Class"`` for an env that is not installed as a plugin.

    Returns:
        The `TextEnv` subclass.

    Raises:
        KeyError: If no installed env has that id.
        TypeError: If the entry point does not name a `TextEnv` subclass with a matching `env_id`.
    """
    if not isinstance(env_id, str) or not env_id:
        raise KeyError(f"env id must be a non-empty string, got {env_id!r}.")
    if ":" in env_id:
        module_name, _, attr = env_id.partition(":")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        cls = obj
        expected_id = None
    else:
        available = _entry_points()
        expected_id = _resolve_id(env_id, available)
        cls = available[expected_id].load()
    if not (isinstance(cls, type) and issubclass(cls, TextEnv)):
        raise TypeError(f"{env_id!r} resolves to {cls!r}, which is not a vpo_core.TextEnv subclass.")
    if expected_id is not None and getattr(cls, "env_id", None) != expected_id:
        raise TypeError(
            f"{cls.__module__}.{cls.__qualname__}.env_id is {getattr(cls, 'env_id', None)!r} but it is registered "
            f"as {expected_id!r}; make the class attribute equal the entry-point name."
        )
    return cls


def make(env_id: str, **config: Any) -> TextEnv[Any, Any]:
    """Build an environment by id.

    The keywords are checked first against the env's options (its config record's fields), as the
    command lines' ``env.<key>=`` are (`vpo_core.env_options.check_options`): an unknown key, or a value
    of a type the field rules out, is refused before the env is built; a boolean is not a number
    (``train_size=True`` is refused, not read as one task).

    Args:
        env_id: See `resolve_env_class`.
        **config: Keyword configuration passed to the env's constructor (e.g. ``data_dir=...``).

    Returns:
        The environment instance.

    Raises:
        KeyError: If no installed env has that id.
        ConfigError: If a keyword is not an option of the env or has the wrong type (the message names it).
    """
    cls = resolve_env_class(env_id)
    options = check_options(cls, config, env_id=str(getattr(cls, "env_id", env_id)), prefix="")
    return cls(**options)


def make_env(env_id: str, options: dict[str, Any]) -> TextEnv[Any, Any]:
    """`make`, with the constructor's refusal of an option reported as the user's error (the engines' ``env=``).

    Raises:
        ConfigError: An unknown env id, or an ``env.<key>=`` value the env's constructor refuses.
    """
    try:
        return make(env_id, **options)
    except UserError:  # already names the problem (an option check, the env's data)
        raise
    except (KeyError, ValueError) as exc:  # the constructor validates the user's env.<key>= options
        raise ConfigError(f"env={env_id}: {exc.args[0] if exc.args else exc}") from exc


def env_tasks(env: TextEnv[Any, Any], split: str) -> list[Any]:
    """The tasks of a split, with missing or malformed data reported as the user's error.

    Raises:
        MissingDataError: The env's data files are not there (the message says how to get them).
        DataFileError: A data file does not have the expected format (`vpo_core.data.DataError`).
    """
    from vpo_core.data import DataError

    try:
        return list(env.tasks(split))
    except UserError:
        raise
    except FileNotFoundError as exc:
        raise MissingDataError(str(exc)) from exc
    except DataError as exc:
        raise DataFileError(str(exc)) from exc


def check_env_options(
    env_id: str, options: Mapping[str, Any], *, warn: Callable[[str], None] | None = None
) -> tuple[str, dict[str, Any]]:
    """The canonical env id and the checked constructor options, importing only the env's package.

    Args:
        env_id: What the user wrote: ``maze-v1``, ``maze`` (latest version) or ``package.module:Class``.
        options: The ``env.<key>=<value>`` options (parsed values).
        warn: Called with one line when an unversioned id was resolved (default: say nothing).

    Returns:
        (canonical id, options), where the id is the class's registered ``env_id`` (or `env_id` itself for
        the ``module:Class`` form).

    Raises:
        ConfigError: If no installed env has that id (the message lists the installed ones), or an option
            is not the constructor's or has the wrong type.
    """
    try:
        cls = resolve_env_class(env_id)
    except KeyError as exc:  # the id the user wrote
        raise ConfigError(exc.args[0] if exc.args else str(exc)) from None
    canonical = env_id if ":" in env_id else str(cls.env_id)
    if canonical != env_id and warn is not None:
        warn(
            f"warning: env={env_id} has no version; using the latest installed, env={canonical} (recorded as "
            f"{canonical}; write env={canonical} to pin it)."
        )
    return canonical, check_options(cls, options, env_id=canonical)
