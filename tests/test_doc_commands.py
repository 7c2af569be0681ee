"""The `uv run apps/...` commands the docs show a newcomer name real apps and use the apps' option syntax."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = re.compile(r"uv run (apps/[\w/]+\.py)((?:\s+[^\s#`]+)*)")


def _documented_commands() -> list[tuple[str, str, list[str]]]:
    """Each documented app command in a tracked .md or .py file: (where, app path, argument tokens)."""
    tracked = subprocess.run(
        ["git", "ls-files", "*.md", "*.py"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    commands = []
    for name in tracked:
        for number, line in enumerate((ROOT / name).read_text(encoding="utf-8").splitlines(), start=1):
            for match in COMMAND.finditer(line):
                commands.append((f"{name}:{number}", match.group(1), match.group(2).split()))
    return commands


def test_the_docs_show_commands():
    apps = {app for _, app, _ in _documented_commands()}
    assert {"apps/train.py", "apps/experiment.py"} <= apps


def test_every_documented_app_exists():
    missing = [f"{where}: {app}" for where, app, _ in _documented_commands() if not (ROOT / app).is_file()]
    assert not missing, missing


def test_no_documented_command_passes_an_option_as_a_dashed_key_value():
    # The apps read key=value; `--key=value` is refused with an error ("write key=value, without dashes").
    dashed = [
        f"{where}: {token}"
        for where, _, tokens in _documented_commands()
        for token in tokens
        if re.fullmatch(r"--[\w.-]+=.*", token)
    ]
    assert not dashed, dashed
