"""The ``vpo`` console script (`vpo_engines.cli`): its subcommands, the engine table, its aliases and its errors.

The installed scripts are run as subprocesses where what is tested is the script itself (its declaration in
vpo-core's pyproject, ``apps/train.py`` being an alias); everything else calls `vpo_engines.cli.main` with argv.
"""

from __future__ import annotations

import importlib.metadata
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

from vpo_engines import cli
from vpo_engines.cli import COMMANDS, ENGINES, TRAIN_HELP, main, split_engine

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


def _run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False, cwd=ROOT)


def test_the_console_scripts_are_declared_as_the_cli_functions():
    scripts = {ep.name: ep.value for ep in importlib.metadata.entry_points(group="console_scripts")}
    assert scripts["vpo"] == "vpo_engines.cli:main"
    assert scripts["vpo-eval"] == "vpo_engines.cli:evaluate"  # the same function as `vpo eval`
    assert COMMANDS["eval"][0] == "vpo_engines.cli:evaluate"


def test_vpo_help_lists_every_subcommand():
    done = _run(str(BIN / "vpo"), "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: vpo COMMAND [key=value ...]")
    listed = [line.split()[0] for line in done.stdout.split("commands (")[1].splitlines()[1:] if line.strip()]
    assert listed == ["train", "eval", "diagnose", "new-env", "search"]


def test_vpo_train_help_is_what_apps_train_shows():
    via_script = _run(str(BIN / "vpo"), "train", "--help")
    via_app = _run(sys.executable, str(ROOT / "apps" / "train.py"), "--help")
    assert via_script.returncode == via_app.returncode == 0, (via_script.stderr, via_app.stderr)
    assert via_script.stdout == via_app.stdout
    text = via_script.stdout
    assert text.startswith(TRAIN_HELP)  # the command's own text, then the default (local) engine's options
    assert "usage: vpo train [engine=local] [key=value ...]" in text
    assert "\n  warmup_steps " in text
    assert "\n  method " in text


def test_every_command_and_engine_names_a_function():
    for reference, _ in COMMANDS.values():
        if reference.startswith("vpo_search.") and importlib.util.find_spec("vpo_search") is None:
            continue
        assert callable(pkgutil.resolve_name(reference)), reference
    for engine, reference in ENGINES.items():
        assert callable(pkgutil.resolve_name(reference)), engine
    assert list(ENGINES) == ["local", "verl", "trl"]


def test_the_engine_is_split_from_the_rest():
    assert split_engine(["env=maze-v1", "engine=verl", "--dry-run"]) == ("verl", ["env=maze-v1", "--dry-run"])
    assert split_engine([]) == ("local", [])


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["train", "engine=ray"], "error: unknown engine 'ray'; choose one of local, verl, trl (e.g. engine=local)."),
        (["trian"], "error: unknown command 'trian'; did you mean train?"),
        ([], "error: name a command first (train, eval, diagnose, new-env, search), e.g. vpo train --help."),
    ],
)
def test_bad_commands_get_one_line_naming_the_choices(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(message)
    assert err.count("\n") == 1


def test_train_passes_the_arguments_to_the_chosen_engine(capsys):
    assert main(["train", "stepz=3"]) == 2  # the local engine's own option check
    assert "stepz" in capsys.readouterr().err
    assert main(["train", "engine=verl", "--help"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: vpo train engine=verl")  # an engine named: its help only
    assert main(["train", "engine=trl", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: vpo train engine=trl")


@pytest.mark.parametrize(
    ("command", "usage"),
    [("eval", "usage: vpo eval"), ("diagnose", "usage: vpo diagnose"), ("new-env", "usage: vpo new-env")],
)
def test_each_command_shows_its_own_help(command, usage, capsys):
    assert main([command, "--help"]) == 0
    assert usage in capsys.readouterr().out


def test_vpo_search_runs_the_search_package(capsys):
    pytest.importorskip("vpo_search")
    assert main(["search", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: vpo search [run|select|report]")


def test_vpo_search_without_the_package_names_the_fix(monkeypatch, capsys):
    # None in sys.modules makes Python's import refuse the package, as when it is not installed
    monkeypatch.setitem(sys.modules, "vpo_search", None)
    monkeypatch.setitem(sys.modules, "vpo_search.cli", None)
    assert main(["search", "arm=vpo"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: `vpo search` needs the vpo-search package, which is not installed")
    assert "pip install vpo-search" in err
    assert "uv sync" in err


def test_a_missing_dependency_inside_a_command_is_not_hidden(monkeypatch):
    monkeypatch.setitem(sys.modules, "vpo_core.scaffold", None)  # not a package of MISSING_PACKAGE_FIX
    with pytest.raises(ModuleNotFoundError):
        cli.main(["new-env", "--help"])


def test_python_m_vpo_engines_is_the_vpo_command():
    done = _run(sys.executable, "-m", "vpo_engines", "eval", "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: vpo eval")
    done = _run(sys.executable, "-m", "vpo_engines", "train", "engine=ray")
    assert done.returncode == 2
    assert "unknown engine 'ray'" in done.stderr


def test_the_apps_are_aliases_of_the_subcommands():
    for app, command in [("evaluate", "eval"), ("diagnose", "diagnose"), ("new_env", "new-env"), ("search", "search")]:
        text = (ROOT / "apps" / f"{app}.py").read_text()
        assert f'main(["{command}", *sys.argv[1:]])' in text, app
        assert len(text.splitlines()) <= 10, app
