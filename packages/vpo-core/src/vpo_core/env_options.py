"""Env ids and env options checked before anything heavy runs: the apps' ``env=`` and ``env.<key>=``.

`check_env` resolves an id to its canonical form and checks the constructor options against the fields
of the env's config record (``config_cls``; the constructor's signature for an env without one),
importing only the env's package (no engine, no torch, no dataset download):

- ids: an installed id (``maze-v1``) is kept; an unversioned name (``maze``) resolves to the latest
  installed version, as gymnasium's registry does, with a warning, and the *canonical* id is what the
  caller records (config, run directory name), so ``env=maze`` and ``env=maze-v1`` are one run;
- options: a key the constructor does not take is refused with the close match and the list of the
  options it does take; a value whose type the signature rules out (``env.train_size=abc`` for
  ``train_size: int``, and ``true`` too: a boolean is not a number here) is refused; text options
  given a number (``env.data_dir=2024``) become text.

The same type rule serves the Python API: `vpo_core.make` checks its keywords with `check_options`,
and an env's config record can check its own fields with `check_fields` (``MazeConfig(train_size=True)``
is refused, not read as one task). Every refusal is a `vpo_core.errors.ConfigError` naming the option.

Example:
    >>> import inspect
    >>> def ctor(train_size: int = 10, data_dir: "str | None" = None): ...
    >>> check_options(inspect.signature(ctor), {"data_dir": 2024}, env_id="demo-v1")
    {'data_dir': '2024'}
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import numbers
import os
from collections.abc import Callable, Mapping
from typing import Any

from vpo_core.errors import ConfigError
from vpo_core.registry import resolve_env_class

__all__ = ["check_env", "check_fields", "check_options", "options_signature"]

_SIMPLE: dict[str, tuple[type, ...]] = {
    "int": (int,),
    "float": (int, float),
    "bool": (bool,),
    "str": (str,),
    "None": (type(None),),
    "os.PathLike[str]": (str,),
    "Path": (str,),
    "pathlib.Path": (str,),
}


def _allowed(annotation: Any) -> tuple[type, ...] | None:
    """The Python types a simple annotation admits (None when it is not simple enough to check)."""
    if annotation is inspect.Parameter.empty:
        return None
    text = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    kinds: list[type] = []
    for part in str(text).strip("'\"").split("|"):
        found = _SIMPLE.get(part.strip().removeprefix("typing."))
        if found is None:
            return None
        kinds.extend(found)
    return tuple(kinds)


def _is_bool(value: Any) -> bool:
    """A boolean, Python's or NumPy's (``numpy.bool_`` is no `bool` subclass)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def _fits(value: Any, kinds: tuple[type, ...]) -> bool:
    """Whether `value` is of one of `kinds`; a boolean is never a number (``True`` is not the size 1).

    An integer of another type (``numpy.int64``) fits ``int`` and a real number fits ``float``; a path
    object fits ``str``.
    """
    if _is_bool(value):  # YAML's true/false and Python's True/False are booleans, not the integers 1/0
        return bool in kinds
    if isinstance(value, kinds):
        return True
    if int in kinds and isinstance(value, numbers.Integral):
        return True
    if float in kinds and isinstance(value, numbers.Real):
        return True
    return str in kinds and isinstance(value, os.PathLike)


def _names(kinds: tuple[type, ...]) -> str:
    return " or ".join(sorted({k.__name__.replace("NoneType", "null") for k in kinds}))


def check_fields(record: Any, *, env_id: str) -> None:
    """Check the field values of an env's config record against their annotations (call it in ``__post_init__``).

    Only simple annotations are checked (``int``, ``float``, ``bool``, ``str``, ``None`` and unions of
    them); a boolean fits only ``bool``, so ``train_size=True`` is refused rather than read as 1.

    Args:
        record: A dataclass instance (the env's ``config_cls``).
        env_id: The env's id, for the message.

    Raises:
        ConfigError: One line naming the first option whose value has the wrong type.
    """
    for field in dataclasses.fields(record):
        kinds = _allowed(field.type)
        value = getattr(record, field.name)
        if kinds is not None and not _fits(value, kinds):
            raise ConfigError(f"option {field.name} of {env_id} expects {_names(kinds)}, got {value!r}.")


def check_options(
    signature: inspect.Signature, options: Mapping[str, Any], *, env_id: str, prefix: str = "env."
) -> dict[str, Any]:
    """Check constructor options against a signature; returns them, text options given numbers as text.

    Args:
        signature: The constructor's (or its config record's) signature.
        options: The options given.
        env_id: The env's id, for the messages.
        prefix: How the messages name an option: ``"env."`` for the command lines' ``env.<key>=``,
            ``""`` for keywords of the Python API.

    Raises:
        ConfigError: One line naming the option that is wrong and what the constructor accepts.
    """
    params = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    listing = ", ".join(f"{prefix}{n}" for n in named) or "none"
    checked: dict[str, Any] = {}
    for key, value in options.items():
        if key not in named:
            if takes_any:
                checked[key] = value
                continue
            close = difflib.get_close_matches(key, named, n=1)
            hint = f"did you mean {prefix}{close[0]}? " if close else ""
            raise ConfigError(f"{prefix}{key} is not an option of {env_id}; {hint}its options are: {listing}.")
        kinds = _allowed(params[key].annotation)
        if kinds is not None and not _fits(value, kinds):
            if str in kinds and isinstance(value, (int, float)) and not _is_bool(value):
                value = str(value)
            else:
                raise ConfigError(
                    f"{prefix}{key} of {env_id} expects {_names(kinds)}, got {value!r} ({prefix}{key}=...)."
                )
        elif kinds is not None and int in kinds and isinstance(value, numbers.Integral) and not isinstance(value, int):
            value = int(value)  # numpy.int64 and the like: the plain int a record's range check expects
        checked[key] = value
    missing = [n for n in named if params[n].default is inspect.Parameter.empty and n not in checked and not takes_any]
    if missing:
        raise ConfigError(f"{env_id} needs {', '.join(f'{prefix}{n}=...' for n in missing)}.")
    return checked


def check_env(
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
        KeyError: If no installed env has that id (the message lists the installed ones).
        ConfigError: If an option is not the constructor's or has the wrong type.
    """
    cls = resolve_env_class(env_id)
    canonical = env_id if ":" in env_id else str(cls.env_id)
    if canonical != env_id and warn is not None:
        warn(
            f"warning: env={env_id} has no version; using the latest installed, env={canonical} (recorded as "
            f"{canonical}; write env={canonical} to pin it)."
        )
    return canonical, check_options(options_signature(cls), options, env_id=canonical)


def options_signature(cls: type[Any]) -> inspect.Signature:
    """The signature of an env's options: its config record's fields (types and defaults), else its constructor's."""
    config_cls = getattr(cls, "config_cls", None)
    return inspect.signature(config_cls if config_cls is not None else cls)
