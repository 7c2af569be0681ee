"""Env ids and env options checked before anything heavy runs: the apps' ``env=`` and ``env.<key>=``.

`check_env` resolves an id to its canonical form and checks the constructor options against the fields
of the env's config record (``config_cls``; the constructor's signature for an env without one),
importing only the env's package (no engine, no torch, no dataset download):

- ids: an installed id (``maze-v1``) is kept; an unversioned name (``maze``) resolves to the latest
  installed version, as gymnasium's registry does, with a warning, and the *canonical* id is what the
  caller records (config, run directory name), so ``env=maze`` and ``env=maze-v1`` are one run;
- options: a key the constructor does not take is refused with the close match and the list of the
  options it does take; a value whose type the signature rules out (``env.train_size=abc`` for
  ``train_size: int``) is refused; text options given a number (``env.data_dir=2024``) become text.

Example:
    >>> import inspect
    >>> def ctor(train_size: int = 10, data_dir: "str | None" = None): ...
    >>> check_options(inspect.signature(ctor), {"data_dir": 2024}, env_id="demo-v1")
    {'data_dir': '2024'}
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Callable, Mapping
from typing import Any

from vpo_core.registry import resolve_env_class

__all__ = ["check_env", "check_options"]

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


def _fits(value: Any, kinds: tuple[type, ...]) -> bool:
    if isinstance(value, bool):  # YAML's true/false are booleans, not the integers 1/0
        return bool in kinds
    return isinstance(value, kinds)


def check_options(signature: inspect.Signature, options: Mapping[str, Any], *, env_id: str) -> dict[str, Any]:
    """Check constructor options against a signature; returns them, text options given numbers as text.

    Raises:
        ValueError: One line naming the ``env.<key>`` that is wrong and what the constructor accepts.
    """
    params = signature.parameters
    takes_any = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    listing = ", ".join(f"env.{n}" for n in named) or "none"
    checked: dict[str, Any] = {}
    for key, value in options.items():
        if key not in named:
            if takes_any:
                checked[key] = value
                continue
            close = difflib.get_close_matches(key, named, n=1)
            hint = f"did you mean env.{close[0]}? " if close else ""
            raise ValueError(f"env.{key} is not an option of {env_id}; {hint}its options are: {listing}.")
        kinds = _allowed(params[key].annotation)
        if kinds is not None and not _fits(value, kinds):
            if str in kinds and isinstance(value, (int, float)) and not isinstance(value, bool):
                value = str(value)
            else:
                names = " or ".join(sorted({k.__name__.replace("NoneType", "null") for k in kinds}))
                raise ValueError(f"env.{key} of {env_id} expects {names}, got {value!r} (env.{key}=...).")
        checked[key] = value
    missing = [n for n in named if params[n].default is inspect.Parameter.empty and n not in checked and not takes_any]
    if missing:
        raise ValueError(f"{env_id} needs {', '.join(f'env.{n}=...' for n in missing)}.")
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
        ValueError: If an option is not the constructor's or has the wrong type.
    """
    cls = resolve_env_class(env_id)
    canonical = env_id if ":" in env_id else str(cls.env_id)
    if canonical != env_id and warn is not None:
        warn(
            f"warning: env={env_id} has no version; using the latest installed, env={canonical} (recorded as "
            f"{canonical}; write env={canonical} to pin it)."
        )
    # the config record's fields, with their types and defaults, are the env's options
    signature = inspect.signature(cls.config_cls if cls.config_cls is not None else cls)
    return canonical, check_options(signature, options, env_id=canonical)
