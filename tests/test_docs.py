"""The README and the manual (docs/) show commands that work and links that resolve.

A fenced block preceded by a marker comment is checked:

- ``<!-- run -->`` before a ```` ```python ```` block: the block runs in a fresh interpreter and must exit 0;
- ``<!-- run -->`` before a ```` ```bash ```` block: each command runs in a subprocess and must exit 0;
- ``<!-- parse -->`` before a ```` ```bash ```` block: each command's options are checked by the parser of
  the command it names (``vpo train`` for each engine, ``vpo eval``, ``vpo search``, ``vpo-eval``, and the
  ``apps/`` aliases of these), without
  training, sampling or contacting a server. Its ``--help`` commands run, since they are cheap.

In both kinds of bash block, setup lines (``uv sync``, ``pip install``, ``hf download``) are skipped, and
``NAME=$(...)`` names a folder: in a parse block every ``$NAME`` becomes an existing empty directory. ``uv run
[--group G] X`` runs ``X`` with this interpreter (``.py`` files and ``python``) or this venv's console scripts, so
the test never calls uv (no sync, no network). Unmarked blocks (GPU runs, servers, other venvs) are prose.

Every relative link of README.md and docs/**/*.md must name an existing file, and a ``#anchor`` into a Markdown
file must name one of its headings (GitHub's slug of the heading).
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
MARKED = re.compile(r"^<!-- (run|parse) -->\n```(bash|python)\n(.*?)^```", re.S | re.M)
SETUP = ("uv sync", "pip install", "hf download")
ASSIGN = re.compile(r"^([A-Za-z_]\w*)=\$\((.*)\)$")
BIN = Path(sys.executable).parent
TIMEOUT_S = 180


@dataclass(frozen=True)
class Block:
    """One marked block: where it is, how it is checked, and its text."""

    path: Path
    line: int
    kind: str  # "run" or "parse"
    lang: str  # "bash" or "python"
    code: str

    @property
    def id(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for match in MARKED.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            out.append(Block(path, line, match.group(1), match.group(2), match.group(3)))
    return out


BLOCKS = _blocks()


def _commands(code: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped."""
    joined = re.sub(r"\\\n\s*", " ", code)
    return [line.strip() for line in joined.splitlines() if line.strip() and not line.strip().startswith("#")]


def _argv(words: list[str]) -> list[str]:
    """``uv run [--group G] X ...`` or a console script, as a command of this interpreter and venv."""
    if words[:2] == ["uv", "run"]:
        words = words[2:]
        while words and words[0].startswith("--"):
            words = words[2:] if words[0] in ("--group", "--extra", "--with") else words[1:]
        if words[0] == "python":
            return [sys.executable, *words[1:]]
        if words[0].endswith(".py"):
            return [sys.executable, *words]
    script = BIN / words[0]
    assert script.is_file(), f"{words[0]!r} is neither `uv run ...` nor a console script of this venv ({BIN})"
    return [str(script), *words[1:]]


def _run(argv: list[str], where: str) -> None:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONUNBUFFERED": "1"}
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{where}: {shlex.join(argv)} exited {done.returncode}\n{done.stderr[-3000:]}"


def _parse_train(args: list[str]) -> None:
    """``vpo train``'s options, checked by the chosen engine's parser; nothing is trained or written."""
    from vpo_core.registry import check_env_options
    from vpo_engines.cli import split_engine

    engine, rest = split_engine(args)
    if engine == "local":
        from vpo_engines.local.config import parse_overrides
        from vpo_engines.local.train import preflight

        preflight(parse_overrides(rest))  # types, values, env options, model= directory, trackers
    elif engine == "trl":
        from vpo_core.cli_config import parse_config
        from vpo_engines.trl.train import TRLTrainConfig

        config = parse_config(TRLTrainConfig, rest, prog="vpo train engine=trl", passthrough={"env": "env_options"})
        check_env_options(config.env, config.env_options)
    else:  # veRL: the launcher's own parse and the cell's recipe, without composing veRL's config
        from vpo_engines.verl import launch
        from vpo_engines.verl.recipes import cell

        config = launch.parse_launch(rest)
        launch._check_model(config.model)
        check_env_options(str(config.env), config.env_options)
        cell(str(config.env), config.method, m=config.m, n=config.n, model=config.model)


def _parse_only(argv: list[str]) -> None:
    words = argv[1:] if argv[0] == sys.executable else argv  # the script's path first
    script, args = Path(words[0]).name, words[1:]
    if script == "vpo" and args:  # `vpo COMMAND ...`: the command's parse, as its apps/ alias
        script, args = (
            {"train": "train.py", "eval": "evaluate.py", "search": "search.py"}.get(args[0], args[0]),
            args[1:],
        )
    if script == "train.py":
        _parse_train(args)
    elif script in ("evaluate.py", "vpo-eval"):  # one evaluation command, one parse
        from vpo_core.cli_config import HelpRequested, parse_config
        from vpo_engines.evaluate import EvalConfig

        with contextlib.suppress(HelpRequested):
            parse_config(EvalConfig, args, prog=script, passthrough={"env": "env_options"})
    elif script == "search.py":
        from vpo_search.config import parse_args

        parse_args(args)
    else:
        pytest.fail(f"no parse-only check for {script}: mark the block <!-- run --> or add a parser here")


def _check(block: Block, tmp_path: Path) -> None:
    if block.lang == "python":
        _run([sys.executable, "-c", block.code], block.id)
        return
    folders: dict[str, str] = {}
    for command in _commands(block.code):
        assigned = ASSIGN.match(command)
        if command.startswith(SETUP):
            continue
        if assigned:
            folder = tmp_path / assigned.group(1)
            folder.mkdir()
            folders[assigned.group(1)] = str(folder)
            continue
        for name, folder in folders.items():
            command = command.replace(f"${name}", folder)
        argv = _argv(shlex.split(command, comments=True))
        if block.kind == "run" or "--help" in argv:
            _run(argv, block.id)
        else:
            _parse_only(argv)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_the_commands_each_doc_shows_work(block: Block, tmp_path: Path) -> None:
    _check(block, tmp_path)


def test_every_engine_and_door_has_a_checked_command() -> None:
    """The front page's ways in are all checked: a doc edit that drops a marker fails here."""
    checked = "\n".join(b.code for b in BLOCKS)
    for needed in ("vpo train env=", "engine=trl", "engine=verl", "vpo-eval", "vpo eval", "gymnasium.make"):
        assert needed in checked, f"no marked block shows {needed!r}"


def test_the_readme_is_a_front_page_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) <= 160, "README.md is the front page (at most ~150 lines): move detail to docs/"
    first = re.search(r"```bash\n(.*?)```", text, re.S)
    assert first is not None
    commands = [c.split("#")[0].strip() for c in first.group(1).splitlines()]
    assert commands[1:] in (["uv run vpo train", "uv run pytest -q"], ["uv run apps/train.py", "uv run pytest -q"]), (
        commands
    )


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(), flags=re.S | re.M)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


LINK = re.compile(r"\]\(([^)\s]+)\)")


@pytest.mark.parametrize("doc", DOCS, ids=[str(d.relative_to(ROOT)) for d in DOCS])
def test_every_relative_link_resolves(doc: Path) -> None:
    text = re.sub(r"^```.*?^```", "", doc.read_text(), flags=re.S | re.M)
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        file, _, anchor = target.partition("#")
        path = (doc.parent / file).resolve() if file else doc
        if not path.exists():
            broken.append(f"{target}: no such file")
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(f"{target}: {path.name} has no heading with the anchor #{anchor}")
    assert not broken, f"{doc.relative_to(ROOT)}: " + "; ".join(broken)


def test_the_readme_links_every_page_of_the_manual() -> None:
    readme = (ROOT / "README.md").read_text()
    pages = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "docs").rglob("*.md"))
    linked = {(ROOT / t.partition("#")[0]).resolve() for t in LINK.findall(readme) if not re.match(r"[a-z]+:", t)}
    missing = [p for p in pages if (ROOT / p).resolve() not in linked]
    assert not missing, f"README.md's manual list misses {missing}"
