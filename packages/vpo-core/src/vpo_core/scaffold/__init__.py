"""``vpo new-env name=NAME``: create ``packages/env-NAME/``, a new env package of the standard shape.

The package is a working toy domain (name a target number; reward (exact, close)) with every shared
file role: ``_env.py`` (the `TextEnv`), ``_data.py``, ``_prompts.py``, ``_parse.py``, ``_reward.py``,
``_profile.py``, ``cli.py``, ``tests/`` with a `check_env` test and ``tests/data/`` fixtures, a README
card, and the ``vpo.envs`` entry point ``NAME-v1``. The workspace root's ``pyproject.toml`` gets the
three lines a workspace member needs (a root dependency, a ``[tool.uv.sources]`` entry and ruff's
first-party module list), so ``uv run`` installs it on its next call.

Templates are plain files under ``templates/`` rendered with `string.Template` (``${name}`` fields):
one variable set, no loops, no conditionals. A template library (copier, cookiecutter) would add a
dependency to the workspace for that; its strength, updating generated projects from a newer template,
does not apply to a domain package, which its author rewrites right away.
"""

from __future__ import annotations

import importlib
import re
import string
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from vpo_core.cli_config import option, run_cli
from vpo_core.errors import ConfigError, DataFileError, MissingDataError, UserError

__all__ = [
    "MAX_NAME_LENGTH",
    "Names",
    "NewEnvConfig",
    "main",
    "names_for",
    "register_in_workspace",
    "render",
    "scaffold",
]

TEMPLATES = Path(__file__).parent / "templates"
_NAME = re.compile(r"[a-z][a-z0-9]*(?:-[a-z0-9]+)*")  # matched whole (fullmatch: no trailing newline)
MAX_NAME_LENGTH = 40
"""The longest env name: it becomes folder and file names (``packages/env-NAME``, 255 bytes at most on
common file systems), a distribution name, a class name and prompt text; 40 characters is generous for
any of them."""


@dataclass(frozen=True)
class Names:
    """Every spelling of a new env's name.

    Attributes:
        name: As given (``"word-count"``).
        package: Distribution name (``"env-word-count"``).
        module: Import name (``"env_word_count"``).
        env_id: Entry-point id (``"word-count-v1"``).
        class_name: The `TextEnv` subclass (``"WordCountEnv"``).
        title: Human name (``"Word count"``).
    """

    name: str
    package: str
    module: str
    env_id: str
    class_name: str
    title: str

    def fields(self) -> dict[str, str]:
        """Template fields."""
        return {key: getattr(self, key) for key in ("name", "package", "module", "env_id", "class_name", "title")}


def names_for(name: str) -> Names:
    r"""The spellings of `name`.

    Raises:
        ConfigError: Unless `name` is lowercase letters and digits, words joined by single hyphens, at
            most `MAX_NAME_LENGTH` characters and not already versioned (``maze``, ``word-count``; not
            ``Maze``, ``word_count``, ``maze-v2``, ``"count\n"``).
    """
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ConfigError(
            f"env name {name!r} must be lowercase letters and digits, words joined by '-', starting with a "
            "letter (e.g. 'count' or 'word-count')."
        )
    if len(name) > MAX_NAME_LENGTH:
        raise ConfigError(
            f"env name {name[:20]!r}... has {len(name)} characters, over the limit of {MAX_NAME_LENGTH} "
            "(it names folders, files and a class); pick a shorter name."
        )
    if re.search(r"-v\d+\Z", name):
        raise ConfigError(f"env name {name!r} ends with a version; pass the bare name (the id gets '-v1').")
    words = name.split("-")
    return Names(
        name=name,
        package=f"env-{name}",
        module=f"env_{name.replace('-', '_')}",
        env_id=f"{name}-v1",
        class_name="".join(w.capitalize() for w in words) + "Env",
        title=" ".join(words).capitalize(),
    )


def render(names: Names) -> dict[Path, str]:
    """The files of the package, relative to its folder, with the templates' fields filled in."""
    files: dict[Path, str] = {}
    for template in sorted(TEMPLATES.rglob("*.tmpl")):
        relative = template.relative_to(TEMPLATES).with_suffix("")  # drop ".tmpl"
        parts = [names.module if part == "module" else part for part in relative.parts]
        files[Path(*parts)] = string.Template(template.read_text()).substitute(names.fields())
    return files


def _closing_bracket(text: str, opening: int) -> int:
    """Index of the ``]`` closing the TOML array whose ``[`` is at `opening` (strings and comments skipped)."""
    depth, i, quote = 0, opening, ""
    while i < len(text):
        char = text[i]
        if quote:
            if char == "\\" and quote == '"':
                i += 1
            elif char == quote:
                quote = ""
        elif char in "\"'":
            quote = char
        elif char == "#":
            i = text.find("\n", i)
            if i < 0:
                break
        elif char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise DataFileError("the workspace pyproject.toml has an unterminated array.")


def _insert_into_array(text: str, section: str, key: str, item: str) -> str:
    """Add `item` to the TOML array `key` of `section` (multi-line or one-line), unless it is there."""
    body = re.search(rf"(?ms)^\[{re.escape(section)}\]\n(.*?)(?=^\[|\Z)", text)
    if body is None:
        raise DataFileError(f"the workspace pyproject.toml has no [{section}] table.")
    assignment = re.search(rf"(?m)^{re.escape(key)}\s*=\s*\[", body.group(1))
    if assignment is None:
        raise DataFileError(f"the workspace pyproject.toml has no {key} = [...] in [{section}].")
    opening = body.start(1) + assignment.end() - 1
    closing = _closing_bracket(text, opening)
    inner = text[opening + 1 : closing]
    if re.search(rf'"{re.escape(item)}"', inner):
        return text
    if "\n" in inner:  # one item per line: add a line in the same indentation
        indent = re.search(r"\n([ \t]*)\S", inner)
        pad = indent.group(1) if indent else "    "
        stripped = inner.rstrip()
        comma = "" if stripped.endswith(",") or not stripped.strip() else ","
        new_inner = f'{stripped}{comma}\n{pad}"{item}",\n'
    else:
        new_inner = f'{inner.rstrip().rstrip(",")}, "{item}"' if inner.strip() else f'"{item}"'
    return text[: opening + 1] + new_inner + text[closing:]


def register_in_workspace(pyproject: Path, names: Names, *, dry_run: bool = False) -> list[str]:
    """Make the workspace root install the new package; returns what changed (empty if nothing).

    Adds ``"env-NAME"`` to ``[project].dependencies``, ``env-NAME = { workspace = true }`` to
    ``[tool.uv.sources]``, and ``"env_NAME"`` to ``[tool.ruff.lint].isort.known-first-party`` where the
    root lists first-party modules. Idempotent; the rest of the file is left byte for byte. The edited
    text must parse as TOML and hold the two entries, or nothing is written.

    Args:
        pyproject: The workspace root's ``pyproject.toml``.
        names: The new package's names.
        dry_run: Check the edit and return the changes without writing the file.

    Raises:
        DataFileError: If the file lacks a table the edit needs, or the edited file would not be valid
            TOML holding the new entries.
    """
    text = pyproject.read_text()
    original = text
    changes: list[str] = []
    text = _insert_into_array(text, "project", "dependencies", names.package)
    if text != original:
        changes.append(f'[project].dependencies += "{names.package}"')
    sources = re.search(r"(?ms)^\[tool\.uv\.sources\]\n(.*?)(?=^\[|\Z)", text)
    if sources is None:
        raise DataFileError("the workspace pyproject.toml has no [tool.uv.sources] table.")
    if not re.search(rf"(?m)^{re.escape(names.package)}\s*=", sources.group(1)):
        entry = f"{names.package} = {{ workspace = true }}"
        end = sources.start(1) + len(sources.group(1).rstrip("\n"))  # after the table's last line
        text = text[:end] + "\n" + entry + text[end:]
        changes.append(f"[tool.uv.sources] += {entry}")
    if re.search(r"(?m)^isort\.known-first-party\s*=", text):
        before = text
        text = _insert_into_array(text, "tool.ruff.lint", "isort.known-first-party", names.module)
        if text != before:
            changes.append(f'[tool.ruff.lint] isort.known-first-party += "{names.module}"')
    if text != original:
        _check_registered(text, names, pyproject)
        if not dry_run:
            pyproject.write_text(text)
    return changes


def _check_registered(text: str, names: Names, pyproject: Path) -> None:
    """Refuse to write an edited ``pyproject.toml`` that is not TOML or lacks the new entries.

    Raises:
        DataFileError: Naming the file; it is left as it was.
    """
    try:
        tomllib = importlib.import_module("tomllib")
    except ImportError:  # Python 3.10 has no TOML parser: the name rules of `names_for` alone guard the edit
        return
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise DataFileError(
            f"adding {names.package} would make {pyproject} invalid TOML ({exc}); it was left as it was."
        ) from None
    dependencies = data.get("project", {}).get("dependencies", [])
    sources = data.get("tool", {}).get("uv", {}).get("sources", {})
    if names.package not in dependencies or sources.get(names.package) != {"workspace": True}:
        raise DataFileError(
            f"adding {names.package} to {pyproject} did not register it ([project].dependencies and "
            "[tool.uv.sources]); it was left as it was: add the package by hand."
        )


def scaffold(name: str, root: str | Path = ".", *, register: bool = True) -> tuple[Path, list[str]]:
    """Create ``<root>/packages/env-NAME/`` and (with `register`) add it to the workspace root.

    Args:
        name: The bare env name (`names_for`).
        root: The workspace root (holding ``pyproject.toml`` and ``packages/``).
        register: Edit the root ``pyproject.toml`` (`register_in_workspace`).

    Returns:
        The package folder and the list of root edits.

    Raises:
        ConfigError: On a bad name, or if the package folder exists (nothing is overwritten).
        MissingDataError: If `root` has no ``pyproject.toml`` while `register` is set.
        DataFileError: If the root ``pyproject.toml`` cannot take the new package (it is left as it was).
    """
    names = names_for(name)
    root = Path(root)
    target = root / "packages" / names.package
    if target.exists():
        raise ConfigError(f"{target} already exists; pick another name or remove it first.")
    pyproject = root / "pyproject.toml"
    if register and not pyproject.is_file():
        raise MissingDataError(f"{pyproject} not found; run from the workspace root or pass --root.")
    files = render(names)
    if register:  # check the root's edit before writing anything, so a refusal leaves no half-made package
        register_in_workspace(pyproject, names, dry_run=True)
    for relative, content in files.items():
        path = target / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    changes = register_in_workspace(pyproject, names) if register else []
    return target, changes


@dataclass(frozen=True)
class NewEnvConfig:
    """The options of ``vpo new-env``."""

    name: str = option(help="bare env name: lowercase letters and digits, words joined by '-' (e.g. count)")
    root: str = option(".", help="workspace root holding pyproject.toml")
    register: bool = option(True, help="add the package to the root pyproject.toml (false: add it by hand)")


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: ``vpo new-env name=NAME [root=DIR] [register=false]``."""
    args = run_cli(
        NewEnvConfig,
        argv,
        prog="vpo new-env",
        description="Create packages/env-NAME/: a new env package of the standard shape, registered as NAME-v1.",
    )
    if isinstance(args, int):
        return args
    try:
        target, changes = scaffold(args.name, args.root, register=args.register)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    names = names_for(args.name)
    print(f"created {target} ({names.env_id}, class {names.module}.{names.class_name})")
    for change in changes:
        print(f"  pyproject.toml: {change}")
    print(
        "next:\n"
        f"  uv run pytest {target}                       # installs the package on first use, then its tests\n"
        f"  uv run vpo train env={names.env_id} steps=1    # one local training step\n"
        f"  uv run vpo train engine=verl env={names.env_id} method=vpo --dry-run\n"
        "then replace the toy domain in _data.py, _prompts.py, _parse.py and _reward.py (docs/adding-a-domain.md)."
    )
    return 0
