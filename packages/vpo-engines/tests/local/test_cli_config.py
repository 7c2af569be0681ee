"""The config layer: key=value parsing, type errors, help, pass-through, suggestions, validation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from vpo_core.cli_config import ConfigError, HelpRequested, option, parse_config
from vpo_engines.local.config import TrainConfig, parse_overrides
from vpo_engines.local.train import main as train_main


@dataclass
class Demo:
    steps: int = option(10, "RL steps")
    lr: float = option(1e-3, "learning rate")
    name: str | None = option(None, "a name")
    env_options: dict[str, Any] = option(default_factory=dict, help="env kwargs")  # noqa: RUF009

    def __post_init__(self) -> None:
        if not math.isfinite(self.lr):
            raise ValueError(f"lr must be finite, got lr={self.lr}.")


def parse(argv: list[str]) -> Demo:
    return parse_config(Demo, argv, prog="demo", passthrough={"env": "env_options"})


def test_overrides_types_and_passthrough():
    config = parse(["steps=3", "lr=0.5", "env.data_dir=/x", "env.size=4", "name=abc"])
    assert (config.steps, config.lr, config.name) == (3, 0.5, "abc")
    assert config.env_options == {"data_dir": "/x", "size": 4}
    assert parse([]) == Demo()


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["stepz=3"], "did you mean steps"),
        (["steps=many"], "option steps expects an integer, got 'many'"),
        (["lr=nan"], "lr must be finite"),
        (["--dry-run"], "key=value"),
        (["--steps=2"], "write steps=2, not '--steps=2'"),
        (["--steps", "2"], "write steps=2, not '--steps'"),
        (["-lr=0.1"], "write lr=0.1"),
        (["env-options=3"], "write env_options=3"),
        (["dry-run"], "key=value"),
        (["env.=3"], "names no key"),
        (["env_options=3"], "unknown option"),
    ],
)
def test_errors_are_one_line_and_name_the_option(argv, needle):
    with pytest.raises(ConfigError) as info:
        parse(argv)
    assert needle in str(info.value)
    assert "\n" not in str(info.value)


def test_help_lists_every_option_with_default_and_meaning():
    with pytest.raises(HelpRequested) as info:
        parse(["--help"])
    text = info.value.text
    for needle in ("steps", "[10]", "RL steps", "learning rate", "env.<key>", "env kwargs"):
        assert needle in text


def test_train_config_help_documents_every_field():
    with pytest.raises(HelpRequested) as info:
        parse_overrides(["-h"])
    for name, f in TrainConfig.__dataclass_fields__.items():
        assert f.metadata.get("help"), name
        assert (name in info.value.text) or name == "env_options"


@pytest.mark.parametrize(
    "arg",
    [
        "kl_coef=nan",
        "threads=0",
        "heads=0",
        "temperature=inf",
        "clip_ratio=-1",
        "lr=nan",
        "eval_top_p=1.5",
        "warmup_lr=-inf",
        "logger=mlflow",
        "heads=5",
        "group_size=1",
    ],
)
def test_bad_hyper_parameters_are_refused_before_anything_runs(arg, tmp_path, capsys):
    assert train_main([arg, f"out={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ")
    assert "\n" not in err
    assert "Traceback" not in err
    assert arg.partition("=")[0] in err
    assert not (tmp_path / "run").exists()


def test_env_options_reach_the_env():
    config = parse_overrides(["env.train_size=20"])
    assert config.env_options == {"train_size": 20}
    assert "env_options" in config.identity()


@dataclass
class Listy:
    tags: list[str] = field(default_factory=list, metadata={"help": "tags"})


def test_list_fields():
    assert parse_config(Listy, ["tags=[a,b]"], prog="x").tags == ["a", "b"]


@pytest.mark.parametrize(
    "arg",
    ["name=a,b", "name=[x", "name=a: b", "name={", "env.data_dir=a: b", "env.data_dir=[x", "steps=[1", "name=]"],
)
def test_values_yaml_cannot_parse_are_one_line_errors(arg):
    """Issue 22: ``,``, ``[``, ``:`` in a value crashed every app with an OmegaConf/YAML traceback."""
    try:
        config = parse([arg])
    except ConfigError as exc:
        message = str(exc)
        assert arg.partition("=")[0].split(".")[-1] in message
        assert "\n" not in message
        assert "quote" in message or "expects" in message
    else:  # a value that parses is kept as the text the user wrote
        key = arg.partition("=")[0]
        value = config.env_options[key.split(".", 1)[1]] if key.startswith("env.") else getattr(config, key)
        assert value == arg.partition("=")[2]


def test_yaml_trouble_in_train_options_is_a_one_line_refusal(tmp_path, capsys):
    assert train_main(["steps=[2", f"out={tmp_path / 'a:b,[c'}"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: option steps expects an integer")
    assert "\n" not in err
    assert not (tmp_path / "a:b,[c").exists()


# ----------------------------------------------- a plain ``pip install vpo-core`` (no omegaconf): vpo-eval parses
def test_without_omegaconf_the_evaluation_options_still_parse(monkeypatch):
    """vpo-eval runs from vpo-core's numpy-only install: the option layer must not need omegaconf there."""
    import sys

    from vpo_engines.evaluate import EvalConfig

    monkeypatch.setitem(sys.modules, "omegaconf", None)  # import omegaconf now raises ImportError
    argv = ["base_url=http://h/v1", "tasks=5", "temperature=0.5", "ks=[1,3]", "log_samples=yes", "env.test_size=3"]
    config = parse_config(EvalConfig, argv, prog="vpo-eval", passthrough={"env": "env_options"})
    assert (config.tasks, config.temperature, config.ks, config.log_samples) == (5, 0.5, [1, 3], True)
    assert config.env_options == {"test_size": 3}
    with pytest.raises(ConfigError, match="option tasks expects an integer"):
        parse_config(EvalConfig, [*argv, "tasks=many"], prog="vpo-eval", passthrough={"env": "env_options"})
