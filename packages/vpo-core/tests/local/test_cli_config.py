"""The config layer: key=value parsing, type errors, help, pass-through, suggestions, validation."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from vpo_core.adapters.local.config import TrainConfig, parse_overrides
from vpo_core.adapters.local.train import main as train_main
from vpo_core.cli_config import ConfigError, HelpRequested, option, parse_config


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
    config = parse(["steps=3", "--lr=0.5", "env.data_dir=/x", "env.size=4", "name=abc"])
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
