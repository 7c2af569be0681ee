"""Issue 39 item 5: one option layer for every command (`vpo_core.cli_config`).

Every command (train per engine, experiment, diagnose, search, the env CLIs, the veRL launcher) parses
``key=value`` through `parse_config`, with one ``--help`` format; env options are ``env.KEY=VALUE`` and
are checked against the env's config record with the same type rules (`check_value`). The layer needs
nothing beyond the standard library; where OmegaConf is installed, it reads every value the way the
OmegaConf structured configs it replaced did.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import sys
from typing import Any, Literal

import pytest

from vpo_core.cli_config import (
    ConfigError,
    HelpRequested,
    check_value,
    option,
    parse_config,
    parse_scalar,
    parse_value,
    split_command,
)
from vpo_core.env_options import check_fields, check_options, option_types

# Values each annotation of the apps' configs takes, as OmegaConf read them.
AGREED: list[tuple[Any, list[str]]] = [
    (int, ["3", "+3", "-3", "1_000", " 3"]),
    (float, ["3", "1e-5", "1.5", "inf", "-inf", ".inf", "1E5", "0.25"]),
    (bool, ["true", "True", "TRUE", "false", "yes", "no", "on", "off", "1", "0"]),
    (int | None, ["null", "~", "3"]),
    (float | None, ["null", "2.5"]),
    (str | None, ["null", "abc", "runs/a:b"]),
    (list[str], ["[a,b]", "[]", "['a b', c]", "[1, 2]"]),
    (list[int] | None, ["[1,2]", "[]", "null"]),
    (dict[str, Any], ["{}", "{a: 1, b: x}", "{enable_thinking: false}"]),
    (dict[str, Any] | None, ["{}", "null", "{enable_thinking: false}"]),
]
REFUSED: list[tuple[Any, list[str]]] = [
    (int, ["3.0", "1e3", "true", "null", "", "many", "[1"]),
    (float, ["true", "null", "abc"]),
    (bool, ["t", ""]),
    (int | None, ["x"]),
    (dict[str, Any], ["x"]),
]


def _refused(call: Any) -> bool:
    """Whether `call` raises the layer's ValueError (the type refusal that parse_config turns into a ConfigError)."""
    try:
        call()
    except ValueError:
        return True
    return False


@pytest.mark.parametrize(("kind", "raws"), AGREED, ids=[str(k) for k, _ in AGREED])
def test_values_read_as_the_omegaconf_configs_read_them(kind, raws):
    omegaconf = pytest.importorskip("omegaconf")

    schema = omegaconf.OmegaConf.structured(
        dataclasses.make_dataclass("One", [("v", kind, dataclasses.field(default=omegaconf.MISSING))])
    )
    for raw in raws:
        merged = omegaconf.OmegaConf.merge(schema, omegaconf.OmegaConf.from_dotlist([f"v={raw}"]))
        expected = omegaconf.OmegaConf.to_container(merged)["v"]
        got = parse_value(raw, kind)
        assert got == expected, (kind, raw)
        assert type(got) is type(expected), (kind, raw)


@pytest.mark.parametrize(("kind", "raws"), REFUSED, ids=[str(k) for k, _ in REFUSED])
def test_values_of_the_wrong_type_are_refused(kind, raws):
    for raw in raws:
        assert _refused(lambda raw=raw: parse_value(raw, kind)), (kind, raw)


def test_lists_also_take_commas_and_literals_their_choices():
    assert parse_value("a.npy,b.npy", list[str]) == ["a.npy", "b.npy"]
    assert parse_value("x", list[str]) == ["x"]
    assert parse_value("1,2", tuple[int, ...]) == (1, 2)
    assert parse_value("multi", Literal["single", "multi"]) == "multi"
    assert _refused(lambda: parse_value("double", Literal["single", "multi"]))


def test_scalars_of_pass_through_options():
    assert [parse_scalar(t) for t in ("3", "0.5", "true", "off", "null", "~", "", "[1, x]")] == [
        3,
        0.5,
        True,
        False,
        None,
        None,
        None,
        [1, "x"],
    ]
    for text in ("/data/a:b", "{a: 1}", "[x", "None", "lcb_lite", "2024-01-01"):
        assert parse_scalar(text) == text
    assert parse_scalar("'3'") == "3"


def test_python_values_are_checked_by_the_same_rules():
    assert check_value(3, int) == 3
    assert check_value(None, int | None) is None
    assert check_value([1, 2], list[int]) == [1, 2]
    assert check_value(2024, str | None, text_from_numbers=True) == "2024"
    for value, kind in [(True, int), (1, bool), ("3", int), (2.5, int), (["a"], list[int]), ("x", Literal["a"])]:
        assert _refused(lambda value=value, kind=kind: check_value(value, kind)), (value, kind)


@dataclasses.dataclass
class Demo:
    out: str = option(help="where to write")
    steps: int = option(10, "RL steps")
    dry_run: bool = option(False, "plan only")
    env_options: dict[str, Any] = option(default_factory=dict, help="env options")  # noqa: RUF009
    rest: list[str] = option(default_factory=list, help="someone else's keys")  # noqa: RUF009


def _demo(argv: list[str]) -> Demo:
    return parse_config(
        Demo,
        argv,
        prog="demo",
        passthrough={"env": "env_options"},
        flags={"--dry-run": "dry_run"},
        overrides="rest",
        renamed={"config": "env"},
    )


def test_flags_overrides_required_options_and_renamed_spellings():
    config = _demo(["out=x", "--dry-run", "env.size=4", "trainer.epochs=2", "+a.b=1"])
    assert (config.out, config.dry_run, config.env_options, config.rest) == (
        "x",
        True,
        {"size": 4},
        ["trainer.epochs=2", "+a.b=1"],
    )
    assert _demo(["out=x", "dry_run=true"]).dry_run
    with pytest.raises(ConfigError, match=r"^demo needs out=\.\.\. \(where to write\)\.$"):
        _demo([])
    with pytest.raises(ConfigError, match=r"^--config size=4 is now written env\.size=4\.$"):
        _demo(["--config", "size=4", "out=x"])
    with pytest.raises(
        ConfigError, match=r"^unknown option 'stepz'; did you mean steps\? the options are: out, steps, "
    ):
        _demo(["stepz=3", "out=x"])


def test_subcommands():
    commands = {"render": "print a prompt", "score": "score completions"}
    assert split_command(["score", "m=3"], commands, prog="p") == ("score", ["m=3"])
    assert split_command(["m=3"], commands, prog="p", default="score") == ("score", ["m=3"])
    with pytest.raises(ConfigError, match="unknown command 'scor'; did you mean score"):
        split_command(["scor"], commands, prog="p")
    with pytest.raises(HelpRequested) as info:
        split_command(["--help"], commands, prog="p")
    assert info.value.text.startswith("usage: p COMMAND [key=value ...]")


def test_env_options_are_checked_against_any_annotation_of_the_record():
    """The annotation-string table (`_SIMPLE`) is gone: lists and literals are checked too."""

    @dataclasses.dataclass
    class Record:
        sizes: list[int] = dataclasses.field(default_factory=list)
        source: Literal["hub", "lcb_lite"] = "hub"

    assert set(option_types(Record).kinds) == {"sizes", "source"}
    assert check_options(Record, {"sizes": [1, 2], "source": "lcb_lite"}, env_id="d-v1") == {
        "sizes": [1, 2],
        "source": "lcb_lite",
    }
    with pytest.raises(ConfigError, match=r"^env\.sizes of d-v1 expects list\[int\], got 'abc'"):
        check_options(Record, {"sizes": "abc"}, env_id="d-v1")
    with pytest.raises(ConfigError, match=r"^option source of d-v1 expects"):
        check_fields(Record(source="elsewhere"), env_id="d-v1")  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------- the commands
def test_env_cli_takes_key_value_and_names_the_new_spelling_of_old_flags(capsys):
    from env_maze.cli import main

    assert main(["render", "split=test", "index=1", "env.test_size=3", "mode=multi", "m=2"]) == 0
    assert "[user]" in capsys.readouterr().out
    for argv, message in [
        (["render", "--split", "test"], "write split=test, not '--split'"),
        (["render", "--config", "test_size=3"], "--config test_size=3 is now written env.test_size=3."),
        (["render", "index=7", "env.test_size=3"], "index must be in [0, 3) for split 'test', got 7."),
        (["render", "env.test_size=abc"], "env.test_size of maze-v1 expects int, got 'abc'"),
        (["export"], "env-maze export needs out=..."),
        (["render", "mode=double"], "mode must be single or multi"),
    ]:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("error: ")
        assert message in err, (argv, err)
        assert err.count("\n") == 1


ROW = re.compile(r"^  (\S+) +(.+ \[.*\])$")  # "  key   type [default]", the meaning on the next line


def _helps() -> dict[str, Any]:
    """Each command's --help, called the way its console script or app calls it."""
    from env_maze.cli import main as maze
    from vpo_engines.cli import main as vpo
    from vpo_engines.local.train import main as local

    helps = {
        "env-maze score": lambda: maze(["score", "--help"]),
        "vpo train": lambda: local(["--help"]),
        "vpo diagnose": lambda: vpo(["diagnose", "--help"]),
        "vpo eval": lambda: vpo(["eval", "--help"]),
    }
    if importlib.util.find_spec("vpo_lab") is not None:
        from vpo_lab.experiment import main as experiment

        helps["apps/experiment.py"] = lambda: experiment(["--help"])
    if importlib.util.find_spec("vpo_search") is not None:
        helps["vpo search"] = lambda: vpo(["search", "--help"])
    if importlib.util.find_spec("hydra") is not None:
        helps["vpo train engine=verl"] = lambda: vpo(["train", "engine=verl", "--help"])
    if sys.version_info >= (3, 11) and importlib.util.find_spec("trl") is not None:
        helps["vpo train engine=trl"] = lambda: vpo(["train", "engine=trl", "--help"])
    return helps


def test_every_command_prints_its_options_in_one_format(capsys):
    helps = _helps()
    assert {"env-maze score", "vpo train", "vpo diagnose", "vpo eval"} <= set(helps)
    for prog, show in helps.items():
        assert show() == 0, prog
        text = capsys.readouterr().out
        assert text.startswith(f"usage: {prog}"), (prog, text[:80])
        _, sep, table = text.partition("\noptions (key=value; default in brackets):\n")
        assert sep, prog
        lines = table.rstrip("\n").splitlines()
        rows = [line for line in lines if not line.startswith("    ")]
        assert rows, prog
        for row in rows:
            assert ROW.match(row), (prog, row)
