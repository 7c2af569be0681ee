"""The one option layer of every command: typed dataclasses parsed from ``key=value`` arguments.

A config is a plain dataclass whose fields carry their meaning in ``metadata["help"]`` (see
`option`). `parse_config` builds it from the command line, converting each value to its field's
annotation (`parse_value`), and adds what a command line needs:

- ``key=value`` overrides, the one syntax: ``--key=value``, ``--key value`` and ``key-with-dashes=value``
  are refused with the spelling to use (two syntaxes let typos through); the only bare words are
  ``--help``/``-h``, a command's declared flags (``--dry-run``) and a leading subcommand (`split_command`);
- one-line errors naming the option and the fix, with close-match suggestions for unknown keys;
- ``--help``/``-h`` listing every option with its type, default and meaning, in one format for every
  command (`format_help`);
- pass-through groups: ``env.data_dir=/x`` lands in a dict field (``env_options`` for the ``env``
  prefix), values read as scalars (`parse_scalar`), for options that belong to someone else (an env's
  constructor keywords, checked against the env's config record by `vpo_core.env_options`);
- an ``overrides`` list that keeps any other ``section.key=value`` verbatim, for a framework's own
  config (the veRL launcher hands them to veRL's Hydra composer).

The layer needs nothing beyond the standard library, so the env packages' command lines (numpy-only
base install) use it too. The same type rules check Python values (`check_value`): a replayed
``config.json``, and the keywords of ``vpo_core.make``.

Validation of values (ranges, finiteness, choices) belongs in the dataclass's ``__post_init__``;
a ``ValueError`` raised there is reported like a type error.

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
import enum
import numbers
import os
import pathlib
import re
import sys
import types
import typing
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from vpo_core.errors import ConfigError, UserError  # a bad option (one line, naming the option and the fix)

__all__ = [
    "ConfigError",
    "HelpRequested",
    "check_value",
    "exit_status",
    "format_commands",
    "format_help",
    "option",
    "parse_config",
    "parse_scalar",
    "parse_value",
    "run_cli",
    "split_command",
]

T = TypeVar("T")

_NONE = type(None)
_NULLS = ("null", "none", "~")
_TRUE = ("true", "yes", "on", "y", "1")
_FALSE = ("false", "no", "off", "n", "0")
_INT = re.compile(r"[-+]?[0-9][0-9_]*")
_FLOAT = re.compile(r"[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN)")


class HelpRequested(Exception):
    """``--help`` was asked for; ``text`` is the help to print."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def exit_status(exc: HelpRequested | UserError) -> int:
    """What a ``main()`` does with `exc`: print the help (exit status 0) or the one-line error to stderr (2).

    ``except (HelpRequested, ConfigError) as exc: return exit_status(exc)``.
    """
    if isinstance(exc, HelpRequested):
        print(exc.text)
        return 0
    print(f"error: {exc}", file=sys.stderr, flush=True)
    return 2


def option(default: Any = dataclasses.MISSING, help: str = "", **kwargs: Any) -> Any:
    """A dataclass field with a help text (``default_factory=`` may replace `default`)."""
    metadata = dict(kwargs.pop("metadata", {}) or {})
    metadata["help"] = help
    return dataclasses.field(default=default, metadata=metadata, **kwargs)


def _union_args(kind: Any) -> tuple[Any, ...] | None:
    """The members of a ``X | Y`` / ``Optional[X]`` annotation (None when `kind` is no union)."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return typing.get_args(kind)
    return None


def _is_path(kind: Any) -> bool:
    return isinstance(kind, type) and issubclass(kind, pathlib.PurePath)


def _type_name(kind: Any) -> str:
    """How ``--help`` and the errors name a field's type: ``an integer``, ``list of a string``, ..."""
    members = _union_args(kind)
    if members is not None:
        inner = [a for a in members if a is not _NONE]
        text = " | ".join(_type_name(a) for a in inner)
        return text + " (or null)" if _NONE in members else text
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Literal:
        return "one of " + ", ".join(str(a) for a in args)
    if origin in (list, tuple, Sequence) or kind in (list, tuple):
        return f"list of {_type_name(args[0])}" if args else "list"
    if origin in (dict, Mapping) or kind is dict:
        return "a mapping {key: value}"
    if _is_path(kind):
        return "a path"
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return "one of " + ", ".join(member.name for member in kind)
    return _NOUNS.get(kind, getattr(kind, "__name__", str(kind)))


_NOUNS = {int: "an integer", float: "a number", str: "a string", bool: "true or false", Any: "a value"}


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text


def _top_level(text: str, sep: str = ",") -> list[str]:
    """`text` split at `sep` outside quotes and brackets (``a, [b, c], 'd, e'`` is three items)."""
    parts: list[str] = []
    depth, quote, start = 0, "", 0
    for index, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
            if depth < 0:
                raise ValueError(f"unbalanced {char!r}")
        elif char == sep and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    if depth or quote:
        raise ValueError("unbalanced brackets or quotes")
    parts.append(text[start:])
    return parts


def _items(raw: str) -> list[str]:
    """The items of ``[a, b]`` or ``a,b`` (``[]`` and the empty text are no items)."""
    text = raw.strip()
    if text.startswith("[") or text.endswith("]"):
        if not (text.startswith("[") and text.endswith("]")):
            raise ValueError("unbalanced brackets")
        text = text[1:-1]
    if not text.strip():
        return []
    return [item.strip() for item in _top_level(text)]


def _mapping_items(raw: str) -> list[tuple[str, str]]:
    """The ``key: value`` pairs of ``{a: 1, b: x}`` (``{}`` is none)."""
    text = raw.strip()
    if not (text.startswith("{") and text.endswith("}")):
        raise ValueError("not a {key: value} mapping")
    pairs = []
    for item in _top_level(text[1:-1]) if text[1:-1].strip() else []:
        key, sep, value = item.partition(":")
        if not sep or not _unquote(key):
            raise ValueError(f"{item.strip()!r} is no key: value pair")
        pairs.append((_unquote(key), value.strip()))
    return pairs


def _to_float(text: str) -> float:
    """A float from Python's or YAML's spelling (``1e-5``, ``inf``, ``.inf``, ``.nan``)."""
    return float(text.strip().lower().replace(".inf", "inf").replace(".nan", "nan"))


def parse_scalar(raw: str) -> Any:
    """A value of unknown type as YAML reads a plain scalar: ``3`` an int, ``0.5`` a float, ``true`` a bool.

    ``null``/``~`` and the empty text are None, ``[1, x]`` a list of scalars; any other text (a path such
    as ``/data/a:b``, ``{a: 1}``, ``[x``) is kept as the string the user wrote.
    """
    text = raw.strip()
    lower = text.lower()
    if lower in ("", "null", "~"):
        return None
    if lower in ("true", "yes", "on"):
        return True
    if lower in ("false", "no", "off"):
        return False
    if _INT.fullmatch(text):
        return int(text)
    if _FLOAT.fullmatch(text):
        return _to_float(text)
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]  # quoted: text, as YAML reads it
    if text.startswith("[") and text.endswith("]"):
        try:
            return [_unquote(item) if item[:1] in "'\"" else parse_scalar(item) for item in _items(text)]
        except ValueError:
            return raw
    return raw


def parse_value(raw: str, kind: Any) -> Any:
    """Text from the command line converted to the annotation `kind` (what OmegaConf's structured configs accept).

    ``str`` fields take the text verbatim; ``X | None`` takes ``null``/``none``/``~``; ``bool`` takes
    ``true``/``false`` (``yes``/``no``/``on``/``off``/``1``/``0``); ``int`` refuses ``3.0``; lists take
    ``[a, b]`` or ``a,b``; mappings ``{key: value}``; ``Any`` a scalar (`parse_scalar`).

    Raises:
        ValueError: If the text is not a value of that type.
    """
    members = _union_args(kind)
    if members is not None:
        if _NONE in members and raw.strip().lower() in _NULLS:
            return None
        for member in (m for m in members if m is not _NONE):
            try:
                return parse_value(raw, member)
            except ValueError:
                continue
        raise ValueError(raw)
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any:
        return parse_scalar(raw)
    if kind is str:
        return raw
    if kind is bool:
        lower = raw.strip().lower()
        if lower in _TRUE or lower in _FALSE:
            return lower in _TRUE
        raise ValueError(raw)
    if kind is int:
        if not _INT.fullmatch(raw.strip()):
            raise ValueError(raw)
        return int(raw)
    if kind is float:
        if not _FLOAT.fullmatch(raw.strip()) and raw.strip().lower() not in ("inf", "-inf", "+inf", "nan"):
            raise ValueError(raw)
        return _to_float(raw)
    if _is_path(kind):
        return kind(raw)
    if origin is typing.Literal:
        for choice in args:
            if str(choice) == raw.strip() or (isinstance(choice, bool) and parse_value(raw, bool) is choice):
                return choice
        raise ValueError(raw)
    if origin in (list, tuple, Sequence) or kind in (list, tuple):
        inner = args[0] if args else Any
        values = [parse_value(_unquote(item) if inner is str else item, inner) for item in _items(raw)]
        return tuple(values) if origin is tuple or kind is tuple else values
    if origin in (dict, Mapping) or kind is dict:
        inner = args[1] if len(args) == 2 else Any
        return {key: parse_value(_unquote(v) if inner is str else v, inner) for key, v in _mapping_items(raw)}
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        for member in kind:
            if raw.strip() in (member.name, str(member.value)):
                return member
        raise ValueError(raw)
    raise ValueError(f"a {_type_name(kind)} cannot be given as text")


def _is_bool(value: Any) -> bool:
    """A boolean, Python's or NumPy's (``numpy.bool_`` is no `bool` subclass)."""
    return isinstance(value, bool) or type(value).__name__ == "bool_"


def check_value(value: Any, kind: Any, *, text_from_numbers: bool = False) -> Any:
    """A Python value checked against the annotation `kind`; returns it (normalised) or raises ValueError.

    A boolean is never a number (``True`` is not the size 1); an integer of another type
    (``numpy.int64``) becomes an ``int``; a real number fits ``float`` (a Python ``int`` stays as it
    is); a path object fits ``str``. With `text_from_numbers`, a number given for text becomes text
    (``data_dir=2024`` is the folder ``"2024"``: how the command lines' scalars reach a text option).
    Annotations the rules do not cover (a class, a callable) pass unchecked unless they are a class
    the value is not an instance of.

    Raises:
        ValueError: If the value does not fit.
    """
    members = _union_args(kind)
    if members is not None:
        if value is None and _NONE in members:
            return None
        inner = [m for m in members if m is not _NONE]
        for lenient in (False, True) if text_from_numbers else (False,):
            for member in inner:
                try:
                    return check_value(value, member, text_from_numbers=lenient)
                except ValueError:
                    continue
        raise ValueError(repr(value))
    origin, args = typing.get_origin(kind), typing.get_args(kind)
    if kind is Any or isinstance(kind, (str, typing.TypeVar)):
        return value
    if kind is bool:
        if _is_bool(value):
            return bool(value)
    elif kind is int:
        if isinstance(value, numbers.Integral) and not _is_bool(value):
            return int(value)
    elif kind is float:
        if isinstance(value, numbers.Real) and not _is_bool(value):
            return value if isinstance(value, (int, float)) else float(value)
    elif kind is str:
        if isinstance(value, (str, os.PathLike)):
            return value
        if text_from_numbers and isinstance(value, (int, float)) and not _is_bool(value):
            return str(value)
    elif _is_path(kind):
        if isinstance(value, (str, os.PathLike)):
            return value
    elif origin is typing.Literal:
        if value in args:
            return value
    elif origin in (list, tuple, Sequence) or kind in (list, tuple):
        if isinstance(value, (list, tuple)):
            item_kind = args[0] if args else Any
            values = [check_value(v, item_kind, text_from_numbers=text_from_numbers) for v in value]
            return tuple(values) if origin is tuple or kind is tuple else values
    elif origin in (dict, Mapping) or kind is dict:
        if isinstance(value, Mapping):
            value_kind = args[1] if len(args) == 2 else Any
            return {k: check_value(v, value_kind, text_from_numbers=text_from_numbers) for k, v in value.items()}
    elif isinstance(kind, type):
        if isinstance(value, kind):
            return value
    else:
        return value  # a callable, a protocol: not the layer's to check
    raise ValueError(repr(value))


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


def _rows_text(rows: Sequence[tuple[str, str, str]]) -> list[str]:
    """Option rows as ``--help`` prints them: key, then type and default, then the meaning on its own line."""
    width = max(len(r[0]) for r in rows) + 2
    lines = []
    for key, kind, text in rows:
        lines.append(f"  {key:<{width}}{kind}")
        if text:
            lines.append(f"  {'':<{width}}  {text}")
    return lines


def format_help(
    cls: type,
    *,
    prog: str,
    description: str = "",
    passthrough: Mapping[str, str] | None = None,
    replay_key: str | None = None,
    flags: Mapping[str, str] | None = None,
    overrides: str | None = None,
) -> str:
    """The ``--help`` text: usage, description, then every option with its type, default and meaning.

    Args:
        cls: The config dataclass.
        prog: The command as the user types it (``env-maze score``, ``vpo train engine=verl``).
        description: Shown under the usage line.
        passthrough: As `parse_config`'s: each prefix is listed as ``<prefix>.<key>``.
        replay_key: As `parse_config`'s.
        flags: As `parse_config`'s: each flag is listed instead of its field.
        overrides: As `parse_config`'s: listed as ``section.key``.
    """
    passthrough, flags = dict(passthrough or {}), dict(flags or {})
    flag_of = {name: flag for flag, name in flags.items()}
    extra = " [section.key=value ...]" if overrides else ""
    shown_flags = "".join(f" [{flag}]" for flag in flags)
    lines = [f"usage: {prog} [key=value ...]{extra}{shown_flags}", ""]
    if description:
        lines += [description.strip(), ""]
    lines.append("options (key=value; default in brackets):")
    rows = []
    if replay_key is not None:
        rows.append(
            (
                replay_key,
                "path [none]",
                "replay the options saved in a run's config.json (later arguments override them)",
            )
        )
    for name, (f, kind) in _fields(cls).items():
        help_text = f.metadata.get("help", "")
        if name in passthrough.values():
            prefix = next(p for p, target in passthrough.items() if target == name)
            rows.append((f"{prefix}.<key>", "value [none]", help_text))
        elif name == overrides:
            rows.append(("section.key", "value [none]", help_text))
        elif name in flag_of:
            rows.append((flag_of[name], f"flag, or {name}=true [{_default_text(f)}]", help_text))
        else:
            rows.append((name, f"{_type_name(kind)} [{_default_text(f)}]", help_text))
    return "\n".join(lines + _rows_text(rows))


def format_commands(
    prog: str, commands: Mapping[str, str], *, description: str = "", default: str | None = None
) -> str:
    """The ``--help`` of a command with subcommands: usage, description and each subcommand's purpose.

    Args:
        prog: The program (``env-maze``).
        commands: Subcommand -> one line on what it does.
        description: Shown under the usage line.
        default: The subcommand run when none is named, if any.
    """
    word = "[COMMAND]" if default else "COMMAND"
    lines = [f"usage: {prog} {word} [key=value ...]", ""]
    if description:
        lines += [description.strip(), ""]
    lines.append("commands (`COMMAND --help` lists its options):")
    width = max(len(name) for name in commands) + 2
    for name, text in commands.items():
        lines.append(f"  {name:<{width}}{text}" + (" (the default)" if name == default else ""))
    return "\n".join(lines)


def split_command(
    argv: Sequence[str], commands: Mapping[str, str], *, prog: str, description: str = "", default: str | None = None
) -> tuple[str, list[str]]:
    """The subcommand (the first argument) and the rest of the arguments.

    Raises:
        HelpRequested: For ``--help`` with no command before it (the text lists the commands).
        ConfigError: If no command is named and there is no default, or the first word is not a command.
    """
    argv = list(argv)
    if argv and argv[0] in commands:
        return argv[0], argv[1:]
    if argv and argv[0] in ("-h", "--help", "help"):
        raise HelpRequested(format_commands(prog, commands, description=description, default=default))
    if argv and "=" not in argv[0] and not argv[0].startswith("-"):
        close = difflib.get_close_matches(argv[0], list(commands), n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise ConfigError(
            f"unknown command {argv[0]!r}; {hint}the commands are: {', '.join(commands)}, and options are key=value pairs."
        )
    if default is None:
        if any(a in ("-h", "--help") for a in argv):
            raise HelpRequested(format_commands(prog, commands, description=description, default=default))
        raise ConfigError(f"name a command first ({', '.join(commands)}), e.g. {prog} {next(iter(commands))} --help.")
    return default, argv


def _refuse_renamed(arg: str, bare: str, next_arg: str | None, renamed: Mapping[str, str]) -> None:
    """A one-line error for an old spelling (``--config data_dir=X``, ``env_args.data_dir=X``) naming the new one."""
    key, sep, raw = bare.partition("=")
    prefix, dot, sub = key.partition(".")
    if key in renamed and not dot:
        if not sep and next_arg is not None and "=" in next_arg and arg.startswith("-"):
            sub, _, raw = next_arg.partition("=")  # --config data_dir=X: the old flag took KEY=VALUE
            raise ConfigError(f"{arg} {next_arg} is now written {renamed[key]}.{sub}={raw}.")
        raise ConfigError(f"{arg!r} is now written {renamed[key]}={raw or '...'}.")
    if dot and prefix in renamed:
        raise ConfigError(f"{arg!r} is now written {renamed[prefix]}.{sub}={raw}.")


def _split(
    argv: Sequence[str],
    names: Sequence[str],
    passthrough: Mapping[str, str],
    *,
    flags: Mapping[str, str],
    overrides: str | None,
    renamed: Mapping[str, str],
) -> tuple[dict[str, str], dict[str, dict[str, str]], list[str]]:
    """Split the arguments into own options, pass-through groups and overrides (raw strings)."""
    own: dict[str, str] = {}
    groups: dict[str, dict[str, str]] = {target: {} for target in passthrough.values()}
    rest: list[str] = []
    hidden = {*passthrough.values(), *([overrides] if overrides else [])}
    for index, arg in enumerate(argv):
        if arg in flags:
            own[flags[arg]] = "true"
            continue
        key, sep, raw = arg.partition("=")
        next_arg = argv[index + 1] if index + 1 < len(argv) else None
        bare = key.lstrip("-").replace("-", "_")
        if renamed:
            _refuse_renamed(arg, bare + sep + raw, next_arg, renamed)
        prefix, dot, sub = key.partition(".")
        if overrides and sep and "." in key.lstrip("+~") and not key.startswith("-") and prefix not in passthrough:
            rest.append(arg)  # someone else's config key (veRL's trainer.n_gpus_per_node=4): kept as written
            continue
        if key != bare:  # one syntax: --steps=2, --steps 2 and eval-tasks=3 are refused, with the spelling to use
            value = raw if sep else (next_arg if next_arg is not None and "=" not in next_arg else "...")
            if not sep and arg in ("--" + n.replace("_", "-") for n in flags.values()):
                value = "true"
            raise ConfigError(f"options are written key=value, without dashes: write {bare}={value}, not {arg!r}.")
        if not sep:
            example = f"{names[0]}=..." if names else "key=value"
            known = f" or {', '.join(flags)}" if flags else ""
            raise ConfigError(f"arguments are key=value pairs{known}, got {arg!r} (e.g. {example}).")
        if dot and prefix in passthrough:
            if not sub:
                raise ConfigError(f"{arg!r} names no key after {prefix}. (e.g. {prefix}.data_dir=/path).")
            groups[passthrough[prefix]][sub] = raw
            continue
        if key not in names or key in hidden:
            raise ConfigError(_unknown(key, [n for n in names if n not in hidden], passthrough, overrides))
        own[key] = raw
    return own, groups, rest


def _unknown(key: str, names: Sequence[str], passthrough: Mapping[str, str], overrides: str | None) -> str:
    """The one line for an unknown key: the close matches, then the known keys (or --help when there are many)."""
    close = difflib.get_close_matches(key, names, n=3)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    also = [f"{prefix}.<key>" for prefix in passthrough] + (["section.key (veRL's config)"] if overrides else [])
    if len(names) <= 30:
        listing = f"the options are: {', '.join([*names, *also])} (see --help)."
    else:
        listing = "see --help for the options."
    return f"unknown option {key!r}; {hint}{listing}"


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
    values = {}
    for key, value in saved.items():
        if key not in fields:
            continue
        kind = fields[key][1]
        try:
            values[key] = check_value(value, kind)
            if kind is float and not _is_bool(value):
                values[key] = float(value)  # JSON's 3 for a float option is 3.0, as typed configs read it
        except ValueError:
            raise ConfigError(f"{replay_key}={path}: option {key} expects {_type_name(kind)}, got {value!r}.") from None
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
    flags: Mapping[str, str] | None = None,
    overrides: str | None = None,
    renamed: Mapping[str, str] | None = None,
) -> T:
    """Build a `cls` instance from ``key=value`` arguments.

    Args:
        cls: A dataclass; ``metadata["help"]`` documents each field; a field without a default is
            required (its absence is a one-line error naming it).
        argv: The arguments, e.g. ``["steps=20", "env.data_dir=/data"]``.
        prog: Program name for ``--help``.
        description: Shown under the usage line of ``--help``.
        passthrough: Prefix -> dict field: ``{"env": "env_options"}`` sends ``env.k=v`` into
            ``env_options["k"]`` (values read by `parse_scalar`: ``3`` is an int, ``a`` a string;
            text such as ``a:b,[c`` is kept as written).
        replay_key: If set (e.g. ``"config"``), ``config=PATH`` starts from the options saved in the JSON
            object at PATH (a run's ``config.json``); the other arguments override them.
        replay_ignore: Keys of that file that are not options (e.g. ``data_source``), skipped.
        flags: Bare words that set a ``bool`` field true: ``{"--dry-run": "dry_run"}`` (``dry_run=true``
            works too).
        overrides: A ``list[str]`` field that receives, verbatim, every other dotted argument
            (``trainer.n_gpus_per_node=4``, ``+algorithm.vpo.k=4``): a framework's own config keys.
        renamed: Old key or prefix -> its new spelling (``{"env_args": "env"}``): the old spelling is
            refused with one line naming the new one.

    Returns:
        The config (its ``__post_init__`` has run).

    Raises:
        HelpRequested: For ``-h``/``--help`` (its ``text`` is the help).
        ConfigError: For a malformed argument, an unknown key, a value of the wrong type, or a value
            the dataclass's validation refuses; one line naming the option and the fix.
    """
    passthrough, flags = dict(passthrough or {}), dict(flags or {})
    if any(a in ("-h", "--help") for a in argv):
        raise HelpRequested(
            format_help(
                cls,
                prog=prog,
                description=description,
                passthrough=passthrough,
                replay_key=replay_key,
                flags=flags,
                overrides=overrides,
            )
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
    own, groups, rest = _split(
        argv, list(fields), passthrough, flags=flags, overrides=overrides, renamed=dict(renamed or {})
    )
    for key, raw in own.items():
        kind = fields[key][1]
        try:
            values[key] = parse_value(raw, kind)
        except ValueError:
            example = _default_text(fields[key][0])
            raise ConfigError(f"option {key} expects {_type_name(kind)}, got {raw!r} (e.g. {key}={example}).") from None
    for target, group in groups.items():
        values[target] = {**values.get(target, {}), **{k: parse_scalar(v) for k, v in group.items()}}
    if overrides:
        values[overrides] = [*values.get(overrides, []), *rest]
    missing = [name for name, (f, _) in fields.items() if _default_text(f) == "required" and name not in values]
    if missing:
        needs = ", ".join(
            f"{name}=... ({fields[name][0].metadata.get('help') or _type_name(fields[name][1])})" for name in missing
        )
        raise ConfigError(f"{prog} needs {needs}.")
    try:
        return cls(**values)
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None


def run_cli(cls: type[T], argv: Sequence[str] | None, *, prog: str, description: str = "", **kwargs: Any) -> T | int:
    """`parse_config` for a ``main()``: prints help (returns 0) or the error (returns 2) instead of raising."""
    try:
        return parse_config(cls, sys.argv[1:] if argv is None else argv, prog=prog, description=description, **kwargs)
    except (HelpRequested, ConfigError) as exc:
        return exit_status(exc)
