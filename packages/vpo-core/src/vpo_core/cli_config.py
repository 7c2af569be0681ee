"""One config layer for the apps: typed dataclasses parsed from ``key=value`` arguments.

A config is a plain dataclass whose fields carry their meaning in ``metadata["help"]`` (see
`option`). `parse_config` builds it with OmegaConf structured configs, so values are type-checked
against the annotations, and adds what a command line needs:

- ``key=value`` overrides, the one syntax: ``--key=value``, ``--key value`` and ``key-with-dashes=value``
  are refused with the spelling to use (two syntaxes let typos through);
- one-line errors naming the option and the fix, with close-match suggestions for unknown keys;
- ``--help``/``-h`` listing every option with its type, default and meaning;
- pass-through groups: ``env.data_dir=/x`` lands in a dict field (``env_options`` for the ``env``
  prefix), values parsed as YAML scalars, for options that belong to someone else (an env's
  constructor keywords, given to ``vpo_core.make(env_id, **env_options)``).

Validation of values (ranges, finiteness, choices) belongs in the dataclass's ``__post_init__``;
a ``ValueError`` raised there is reported like a type error.

A plain ``pip install vpo-core`` (numpy only: ``vpo-eval`` runs from it) has no OmegaConf: there the
values of the common types (booleans, integers, numbers, text, null and lists of these) are read by
`_plain_value`, which reads each the way OmegaConf does, and refuses in one line (naming the extra that
installs OmegaConf) the YAML spellings it does not read (``0x10``, ``1_000``, nested lists).

Example:
    >>> from dataclasses import dataclass
    >>> @dataclass
    ... class Demo:
    ...     steps: int = option(10, "RL steps")
    >>> parse_config(Demo, ["steps=3"], prog="demo").steps
    3
"""

from __future__ import annotations

import dataclasses
import difflib
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar, cast

from vpo_core.errors import ConfigError  # a bad option (one line, naming the option and the fix)

__all__ = ["ConfigError", "HelpRequested", "format_help", "option", "parse_config", "run_cli"]

T = TypeVar("T")


class HelpRequested(Exception):
    """``--help`` was asked for; ``text`` is the help to print."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def option(default: Any = dataclasses.MISSING, help: str = "", **kwargs: Any) -> Any:
    """A dataclass field with a help text (``default_factory=`` may replace `default`)."""
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata["help"] = help
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


def _type_name(kind: Any) -> str:
    args = typing.get_args(kind)
    if args and type(None) in args:
        inner = [a for a in args if a is not type(None)]
        return " | ".join(_type_name(a) for a in inner) + " (or null)"
    if typing.get_origin(kind) in (list, tuple, Sequence):
        return f"list of {_type_name(args[0])}" if args else "list"
    if typing.get_origin(kind) in (dict, Mapping):
        return "key=value pairs"
    return _NOUNS.get(kind, getattr(kind, "__name__", str(kind)))


_NOUNS = {int: "an integer", float: "a number", str: "a string", bool: "true or false"}


def _fields(cls: type) -> dict[str, tuple[dataclasses.Field[Any], Any]]:
    hints = typing.get_type_hints(cls)
    return {f.name: (f, hints[f.name]) for f in dataclasses.fields(cls) if f.init}


def _default_text(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        return "none (see meaning)" if f.default is None else repr(f.default)
    if f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
        return repr(value) if value else "empty"
    return "required"


def format_help(
    cls: type,
    *,
    prog: str,
    description: str = "",
    passthrough: Mapping[str, str] | None = None,
    replay_key: str | None = None,
) -> str:
    """The ``--help`` text: usage, description, then every option with its type, default and meaning."""
    passthrough = dict(passthrough or {})
    lines = [f"usage: {prog} [key=value ...]", ""]
    if description:
        lines += [description.strip(), ""]
    lines.append("options (key=value; default in brackets):")
    rows = []
    for name, (f, kind) in _fields(cls).items():
        if name in passthrough.values():
            prefix = next(p for p, target in passthrough.items() if target == name)
            rows.append((f"{prefix}.<key>", "value [none]", f.metadata.get("help", "")))
            continue
        rows.append((name, f"{_type_name(kind)} [{_default_text(f)}]", f.metadata.get("help", "")))
    if replay_key is not None:
        rows.insert(
            0,
            (
                f"{replay_key}",
                "path [none]",
                "replay the options saved in a run's config.json (later arguments override them)",
            ),
        )
    width = max(len(r[0]) for r in rows) + 2
    for key, kind, text in rows:
        lines.append(f"  {key:<{width}}{kind}")
        if text:
            lines.append(f"  {'':<{width}}  {text}")
    return "\n".join(lines)


def _split(argv: Sequence[str], names: Sequence[str], passthrough: Mapping[str, str]) -> tuple[dict, dict]:
    """Split ``key=value`` arguments into own options and pass-through groups (raw strings)."""
    own: dict[str, str] = {}
    groups: dict[str, dict[str, str]] = {target: {} for target in passthrough.values()}
    for index, arg in enumerate(argv):
        key, sep, raw = arg.partition("=")
        bare = key.lstrip("-").replace("-", "_")
        if key != bare:  # one syntax: --steps=2, --steps 2 and eval-tasks=3 are refused, with the spelling to use
            value = raw if sep else (argv[index + 1] if index + 1 < len(argv) and "=" not in argv[index + 1] else "...")
            raise ConfigError(f"options are written key=value, without dashes: write {bare}={value}, not {arg!r}.")
        if not sep:
            example = f"{names[0]}=..." if names else "key=value"
            raise ConfigError(f"arguments are key=value pairs, got {arg!r} (e.g. {example}).")
        prefix, dot, sub = key.partition(".")
        if dot and prefix in passthrough:
            if not sub:
                raise ConfigError(f"{arg!r} names no key after {prefix}. (e.g. {prefix}.data_dir=/path).")
            groups[passthrough[prefix]][sub] = raw
            continue
        if key not in names or key in passthrough.values():
            close = difflib.get_close_matches(key, [n for n in names if n not in passthrough.values()], n=3)
            hint = f"did you mean {' or '.join(close)}? " if close else ""
            raise ConfigError(f"unknown option {key!r}; {hint}see --help for the options.")
        own[key] = raw
    return own, groups


def _yaml_value(raw: str) -> Any:
    """A pass-through value as YAML reads it (``3`` an int, ``[1,2]`` a list), else the text itself.

    Text YAML cannot parse (``[x``, ``a: b``, ``{``) or reads as a mapping is kept as the string the user
    wrote: a path such as ``env.data_dir=/data/a:b`` must not become a dict or a traceback.
    """
    omegaconf = _omegaconf()
    if omegaconf is None:
        try:
            value = _plain_scalar(raw)
        except _Unread:
            raise ConfigError(
                f"the value {raw!r} needs omegaconf to be read (pip install 'vpo-core[local]'), or write it plainly."
            ) from None
        return value
    try:
        # from_dotlist builds a DictConfig, so its container is a dict.
        container = cast(
            "dict[str, Any]", omegaconf.OmegaConf.to_container(omegaconf.OmegaConf.from_dotlist([f"v={raw}"]))
        )
    except Exception:  # yaml's ParserError/ScannerError and OmegaConf's own errors alike
        return raw
    value = container["v"]
    return raw if isinstance(value, dict) else value


def _omegaconf() -> Any:
    """The omegaconf module, or None where it is not installed (a plain ``pip install vpo-core``)."""
    try:
        import omegaconf
    except ImportError:
        return None
    return omegaconf


_INT = re.compile(r"[-+]?[0-9]+")
_NUMBER = re.compile(r"[-+]?([0-9]+\.[0-9]*|\.[0-9]+|[0-9]+)([eE][-+]?[0-9]+)?")
_YAML_SPECIAL = re.compile(
    r"[-+]?(0[xXoObB][0-9a-fA-F_]+|[0-9][0-9_]*_[0-9_]*(\.[0-9_]*)?|\.(inf|Inf|INF|nan|NaN|NAN)|[0-9]+(:[0-5]?[0-9])+(\.[0-9]*)?)"
)
_BOOLS = {"true": True, "yes": True, "on": True, "false": False, "no": False, "off": False}
_NULLS = ("null", "Null", "NULL", "~", "")


class _Unread(Exception):
    """A spelling the standard-library reader does not read, where OmegaConf's YAML would read a value."""


def _plain_scalar(raw: str) -> Any:
    """A YAML scalar or flat list of scalars as OmegaConf reads it: null, a boolean, an int, a float, else text.

    Raises:
        _Unread: For what YAML reads as something else than text and this does not: hex and ``_``-grouped
            digits, ``.inf``/``.nan``, nested or quoted lists, mappings.
    """
    text = raw.strip()
    if text in _NULLS:
        return None
    if text.lower() in _BOOLS and text in (text.lower(), text.upper(), text.capitalize()):
        return _BOOLS[text.lower()]
    if _INT.fullmatch(text):
        return int(text)
    if _NUMBER.fullmatch(text):
        return float(text)
    if _YAML_SPECIAL.fullmatch(text) or text[:1] in "{'\"&*!|>%@`":
        raise _Unread(raw)
    if text.startswith("[") and text.endswith("]"):
        inner = text[1:-1].strip()
        items = [item.strip() for item in inner.split(",")] if inner else []
        if any(c in inner for c in "[]{}\"'") or any(not item for item in items):
            raise _Unread(raw)
        return [_plain_scalar(item) for item in items]
    if text[:1] == "[" or ": " in text or " #" in text:
        raise _Unread(raw)
    return raw


def _plain_value(raw: str, kind: Any) -> Any:
    """`raw` as a value of `kind` (bool, int, float, str, an optional one, or a list of one), as OmegaConf reads it.

    Raises:
        ValueError: For a value that is not of `kind` (the caller names the option and the fix).
        _Unread: For a spelling only OmegaConf reads.
    """
    args = typing.get_args(kind)
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise _Unread(raw)
        if type(None) in args and raw.strip() in _NULLS:
            return None
        return _plain_value(raw, inner[0])
    if typing.get_origin(kind) in (list, Sequence):
        value = _plain_scalar(raw)
        if not isinstance(value, list):
            raise ValueError(raw)
        item_kind = args[0] if args else str
        return [_plain_value("null" if item is None else str(item), item_kind) for item in value]
    if kind is str:
        return raw
    if kind is float and re.fullmatch(r"[-+]?(inf|nan)", raw.strip(), re.IGNORECASE):
        return float(raw)
    if kind is bool and raw.strip().lower() in (*_BOOLS, "y", "n"):
        return raw.strip().lower() in ("true", "yes", "on", "y")
    value = _plain_scalar(raw)
    if kind is bool and isinstance(value, bool):
        return value
    if kind is bool and isinstance(value, int):
        return value != 0
    if kind is int and isinstance(value, int) and not isinstance(value, bool):
        return value
    if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if kind not in (bool, int, float):
        raise _Unread(raw)
    raise ValueError(raw)


def _is_text(kind: Any) -> bool:
    """Whether a field holds text (``str`` or ``str | None``): its value is taken verbatim, not as YAML."""
    if kind is str:
        return True
    if typing.get_origin(kind) not in (typing.Union, types.UnionType):
        return False
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    return bool(args) and all(a is str for a in args)


def _replayed(
    cls: type, path: str, fields: Mapping[str, tuple[Any, Any]], *, replay_key: str, ignore: Sequence[str]
) -> dict[str, Any]:
    """The options saved in a JSON object (``config=PATH``), type-checked against `cls`."""
    import json
    from pathlib import Path

    try:
        saved = json.loads(Path(path).read_text())
    except FileNotFoundError:
        raise ConfigError(f"{replay_key}={path}: no such file; give the config.json of a run.") from None
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ConfigError(f"{replay_key}={path} is not a readable JSON file ({type(exc).__name__}).") from None
    if not isinstance(saved, dict):
        raise ConfigError(f"{replay_key}={path} holds {type(saved).__name__}, not a JSON object of options.")
    unknown = sorted(k for k in saved if k not in fields and k not in ignore)
    if unknown:
        raise ConfigError(f"{replay_key}={path} has keys that are not options: {', '.join(unknown)}.")
    values = {k: v for k, v in saved.items() if k in fields}
    omegaconf = _omegaconf()
    if omegaconf is None:
        raise ConfigError(f"{replay_key}= needs omegaconf to check the saved options: pip install 'vpo-core[local]'.")
    schema = omegaconf.OmegaConf.structured(cls)
    for key, value in values.items():
        try:
            omegaconf.OmegaConf.merge(schema, omegaconf.OmegaConf.create({key: value}))
        except Exception:
            kind = _type_name(fields[key][1])
            raise ConfigError(f"{replay_key}={path}: option {key} expects {kind}, got {value!r}.") from None
    return values


def parse_config(
    cls: type[T],
    argv: Sequence[str],
    *,
    prog: str,
    description: str = "",
    passthrough: Mapping[str, str] | None = None,
    replay_key: str | None = None,
    replay_ignore: Sequence[str] = (),
) -> T:
    """Build a `cls` instance from ``key=value`` arguments.

    Args:
        cls: A dataclass; every field needs a default; ``metadata["help"]`` documents it.
        argv: The arguments, e.g. ``["steps=20", "env.data_dir=/data"]``.
        prog: Program name for ``--help``.
        description: Shown under the usage line of ``--help``.
        passthrough: Prefix -> dict field: ``{"env": "env_options"}`` sends ``env.k=v`` into
            ``env_options["k"]`` (values parsed as YAML scalars: ``3`` is an int, ``a`` a string;
            text YAML cannot parse, such as ``a:b,[c``, is kept as written).
        replay_key: If set (e.g. ``"config"``), ``config=PATH`` starts from the options saved in the JSON
            object at PATH (a run's ``config.json``); the other arguments override them.
        replay_ignore: Keys of that file that are not options (e.g. ``data_source``), skipped.

    Returns:
        The config (its ``__post_init__`` has run).

    Raises:
        HelpRequested: For ``-h``/``--help`` (its ``text`` is the help).
        ConfigError: For a malformed argument, an unknown key, a value of the wrong type, or a value
            the dataclass's validation refuses; one line naming the option and the fix.
    """
    passthrough = dict(passthrough or {})
    if any(a in ("-h", "--help") for a in argv):
        raise HelpRequested(
            format_help(cls, prog=prog, description=description, passthrough=passthrough, replay_key=replay_key)
        )
    fields = _fields(cls)
    values: dict[str, Any] = {}
    if replay_key is not None:
        replays = [a.partition("=")[2] for a in argv if a.startswith(f"{replay_key}=")]
        argv = [a for a in argv if not a.startswith(f"{replay_key}=")]
        if len(replays) > 1:
            raise ConfigError(f"{replay_key}= was given {len(replays)} times; give one saved config.json.")
        if replays:
            values = _replayed(cls, replays[0], fields, replay_key=replay_key, ignore=replay_ignore)
    own, groups = _split(argv, list(fields), passthrough)
    omegaconf = _omegaconf()
    schema = None if omegaconf is None else omegaconf.OmegaConf.structured(cls)
    for key, raw in own.items():
        kind = fields[key][1]
        if _is_text(kind):  # text is text: out=runs/a:b and name=[x are kept as written
            optional = type(None) in typing.get_args(kind)
            values[key] = None if optional and raw.lower() in ("null", "none", "~") else raw
            continue
        wrong = f"option {key} expects {_type_name(kind)}, got {raw!r} (e.g. {key}={_default_text(fields[key][0])})."
        if omegaconf is None:
            try:
                values[key] = _plain_value(raw, kind)
            except _Unread:
                raise ConfigError(
                    f"option {key}={raw}: this spelling needs omegaconf (pip install 'vpo-core[local]'), or write "
                    f"the value plainly (e.g. {key}={_default_text(fields[key][0])})."
                ) from None
            except ValueError:
                raise ConfigError(wrong) from None
            continue
        try:
            merged = omegaconf.OmegaConf.merge(schema, omegaconf.OmegaConf.from_dotlist([f"{key}={raw}"]))
        except Exception:  # OmegaConf's validation errors and yaml's parser errors alike
            raise ConfigError(wrong) from None
        values[key] = cast("dict[str, Any]", omegaconf.OmegaConf.to_container(merged))[key]
    for target, group in groups.items():
        values[target] = {**values.get(target, {}), **{k: _yaml_value(v) for k, v in group.items()}}
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def run_cli(cls: type[T], argv: Sequence[str] | None, *, prog: str, description: str = "", **kwargs: Any) -> T | int:
    """`parse_config` for a ``main()``: prints help (returns 0) or the error (returns 2) instead of raising."""
    try:
        return parse_config(cls, sys.argv[1:] if argv is None else argv, prog=prog, description=description, **kwargs)
    except HelpRequested as exc:
        print(exc.text)
        return 0
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
