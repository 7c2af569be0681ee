"""Env ids and env options checked before anything heavy runs: the apps' ``env=`` and ``env.<key>=``.

`vpo_core.registry.check_env_options` resolves an id to its canonical form and checks the constructor options against the fields
of the env's config record (``config_cls``; the constructor's signature for an env without one),
importing only the env's package (no engine, no torch, no dataset download):

- ids: an installed id (``maze-v1``) is kept; an unversioned name (``maze``) resolves to the latest
  installed version, as gymnasium's registry does, with a warning, and the *canonical* id is what the
  caller records (config, run directory name), so ``env=maze`` and ``env=maze-v1`` are one run;
- options: a key the constructor does not take is refused with the close match and the list of the
  options it does take; a value whose type the signature rules out (``env.train_size=abc`` for
  ``train_size: int``, and ``true`` too: a boolean is not a number here) is refused; text options
  given a number (``env.data_dir=2024``) become text.

The type rules are the option layer's (`vpo_core.cli_config.check_value`), read from the record's field
annotations. The same rules serve the Python API: `vpo_core.make` checks its keywords with `check_options`,
and an env's config record can check its own fields with `check_fields` (``MazeConfig(train_size=True)``
is refused, not read as one task). Every refusal is a `vpo_core.errors.ConfigError` naming the option.

Example:
    >>> def ctor(train_size: int = 10, data_dir: "str | None" = None): ...
    >>> check_options(ctor, {"data_dir": 2024}, env_id="demo-v1")
    {'data_dir': '2024'}
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import types
import typing
from collections.abc import Callable, Mapping
from typing import Any

from vpo_core.cli_config import check_value
from vpo_core.errors import ConfigError

__all__ = ["OptionTypes", "check_fields", "check_options", "option_types"]


@dataclasses.dataclass(frozen=True)
class OptionTypes:
    """The options an env takes.

    Attributes:
        kinds: Option name -> (its annotation, whether it has a default).
        open: Whether the constructor also takes any other keyword (``**kwargs``).
    """

    kinds: dict[str, tuple[Any, bool]]
    open: bool = False


def _type_names(kind: Any) -> str:
    """How the messages name a type: ``int``, ``null or str``, ``float``."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return " or ".join(sorted(_type_names(a) for a in typing.get_args(kind)))
    if kind is type(None):
        return "null"
    if typing.get_origin(kind) is not None:
        return str(kind).replace("typing.", "")  # list[int], Literal['hub', 'lcb_lite']
    return getattr(kind, "__name__", str(kind).removeprefix("typing."))


def option_types(target: Callable[..., Any]) -> OptionTypes:
    """The options of an env (class) or a constructor: its config record's fields, else its signature.

    Annotations are resolved to types (``from __future__ import annotations`` leaves them as text); an
    annotation that does not resolve is kept as text, which `check_value` does not check.
    """
    record = getattr(target, "config_cls", None)
    if record is None and dataclasses.is_dataclass(target):
        record = target
    if record is not None:
        hints = typing.get_type_hints(record)
        missing = dataclasses.MISSING
        return OptionTypes(
            {
                f.name: (hints[f.name], f.default is not missing or f.default_factory is not missing)
                for f in dataclasses.fields(record)
                if f.init
            }
        )
    try:
        signature = inspect.signature(target, eval_str=True)
    except NameError:
        signature = inspect.signature(target)
    params = signature.parameters
    return OptionTypes(
        {
            name: (Any if p.annotation is p.empty else p.annotation, p.default is not p.empty)
            for name, p in params.items()
            if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
        },
        open=any(p.kind is p.VAR_KEYWORD for p in params.values()),
    )


def check_fields(record: Any, *, env_id: str) -> None:
    """Check the field values of an env's config record against their annotations (call it in ``__post_init__``).

    The rules are the option layer's (`vpo_core.cli_config.check_value`): a boolean fits only ``bool``,
    so ``train_size=True`` is refused rather than read as 1, and text is not a number.

    Args:
        record: A dataclass instance (the env's ``config_cls``).
        env_id: The env's id, for the message.

    Raises:
        ConfigError: One line naming the first option whose value has the wrong type.
    """
    for name, (kind, _) in option_types(type(record)).kinds.items():
        value = getattr(record, name)
        try:
            check_value(value, kind)
        except ValueError:
            raise ConfigError(f"option {name} of {env_id} expects {_type_names(kind)}, got {value!r}.") from None


def check_options(
    target: Callable[..., Any], options: Mapping[str, Any], *, env_id: str, prefix: str = "env."
) -> dict[str, Any]:
    """Check constructor options against an env's option types; returns them, text options given numbers as text.

    Args:
        target: The env class (its ``config_cls`` is read) or a constructor (its signature is read).
        options: The options given.
        env_id: The env's id, for the messages.
        prefix: How the messages name an option: ``"env."`` for the command lines' ``env.<key>=``,
            ``""`` for keywords of the Python API.

    Raises:
        ConfigError: One line naming the option that is wrong and what the constructor accepts.
    """
    known = option_types(target)
    named = list(known.kinds)
    listing = ", ".join(f"{prefix}{n}" for n in named) or "none"
    checked: dict[str, Any] = {}
    for key, value in options.items():
        if key not in known.kinds:
            if known.open:
                checked[key] = value
                continue
            close = difflib.get_close_matches(key, named, n=1)
            hint = f"did you mean {prefix}{close[0]}? " if close else ""
            raise ConfigError(f"{prefix}{key} is not an option of {env_id}; {hint}its options are: {listing}.")
        kind = known.kinds[key][0]
        try:
            checked[key] = check_value(value, kind, text_from_numbers=True)
        except ValueError:
            raise ConfigError(
                f"{prefix}{key} of {env_id} expects {_type_names(kind)}, got {value!r} ({prefix}{key}=...)."
            ) from None
    missing = [n for n, (_, has_default) in known.kinds.items() if not has_default and n not in checked]
    if missing and not known.open:
        raise ConfigError(f"{env_id} needs {', '.join(f'{prefix}{n}=...' for n in missing)}.")
    return checked
