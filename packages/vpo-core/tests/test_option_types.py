"""Issue 37: the Python API refuses a boolean (or any non-integer) where an env takes a size.

``vpo_core.make("maze-v1", train_size=True)`` used to train on one task (``True`` is the int 1).
`vpo_core.make` now checks its keywords as the command lines check ``env.<key>=`` (`check_options`),
and the envs' config records check their own fields (`check_fields`), so a direct
``MazeEnv(train_size=True)`` or ``MazeConfig(train_size=True)`` is refused too.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

import vpo_core
from vpo_core.env_options import check_fields, check_options
from vpo_core.errors import ConfigError
from vpo_core.registry import check_env_options


@pytest.mark.parametrize("value", [True, False, np.bool_(True), 2.0, 2.5, "3", None, [3]])
@pytest.mark.parametrize("key", ["train_size", "test_size"])
def test_make_refuses_a_size_that_is_not_an_int(key, value):
    with pytest.raises(ConfigError, match=rf"^{key} of maze-v1 expects int, got "):
        vpo_core.make("maze-v1", **{key: value})


def test_make_refuses_unknown_keywords_with_a_close_match():
    with pytest.raises(ConfigError, match=r"^trainsize is not an option of maze-v1; did you mean train_size\?"):
        vpo_core.make("maze-v1", trainsize=3)


def test_make_still_takes_ints_numpy_ints_and_paths():
    assert len(vpo_core.make("maze-v1", test_size=3).tasks("test")) == 3
    env = vpo_core.make("maze-v1", test_size=np.int64(2))  # MazeConfig wants a Python int: a clear error
    assert env.config.test_size == 2


@pytest.mark.parametrize("value", [True, np.bool_(False), 1.0, "5"])
def test_the_config_record_refuses_a_boolean_size_however_it_is_built(value):
    from env_maze import MazeEnv
    from env_maze._env import MazeConfig

    with pytest.raises(ConfigError, match="train_size"):
        MazeEnv(train_size=value)
    with pytest.raises(ConfigError, match="train_size"):
        MazeConfig(train_size=value)


@pytest.mark.parametrize(
    ("env_id", "options"),
    [
        ("ultrafeedback-v1", {"test_size": True}),
        ("ultrafeedback-v1", {"train_size": True}),
        ("ultrafeedback-v1", {"rm_batch_size": False}),
        ("ultrafeedback-v1", {"rm_scale": True}),
        ("eureqa-v1", {"seed": True}),
        ("toolrl-v1", {"revision": True}),
        ("musique-v1", {"test_per_hop": True}),  # an env whose record does not check: make does
    ],
)
def test_every_env_refuses_booleans_for_numbers_and_text(env_id, options):
    [key] = options
    with pytest.raises(ConfigError, match=rf"^{key} of {env_id} expects "):
        vpo_core.make(env_id, **options)


@pytest.mark.parametrize(
    ("cls_path", "options"),
    [
        ("env_ultrafeedback:UltrafeedbackEnv", {"test_size": True}),
        ("env_ultrafeedback:UltrafeedbackEnv", {"rm_max_length": 0}),
        ("env_ultrafeedback:UltrafeedbackEnv", {"rm_offset": float("nan")}),
        ("env_eureqa:EureqaEnv", {"seed": False}),
        ("env_toolrl:ToolRLEnv", {"revision": 3}),
    ],
)
def test_direct_construction_is_checked_by_the_record(cls_path, options):
    module, _, name = cls_path.partition(":")
    cls = getattr(__import__(module), name)
    with pytest.raises(ConfigError, match=next(iter(options))):
        cls(**options)


def test_the_command_line_check_refuses_yaml_booleans_and_names_env_keys():
    with pytest.raises(
        ConfigError, match=r"^env\.train_size of maze-v1 expects int, got True \(env\.train_size=\.\.\.\)"
    ):
        check_env_options("maze-v1", {"train_size": True})
    assert check_env_options("maze-v1", {"train_size": 5}) == ("maze-v1", {"train_size": 5})


def test_check_options_and_check_fields_rules():
    def ctor(size: int = 1, rate: float = 0.5, flag: bool = False, path: str | None = None): ...

    assert check_options(ctor, {"size": 3, "rate": 1, "flag": True, "path": Path("x")}, env_id="d-v1", prefix="") == {
        "size": 3,
        "rate": 1,
        "flag": True,
        "path": Path("x"),
    }
    assert check_options(ctor, {"path": 2024}, env_id="d-v1") == {"path": "2024"}  # text given a number
    for key, bad in [("size", True), ("rate", False), ("flag", 1), ("size", 1.5), ("rate", "0.1")]:
        with pytest.raises(ConfigError, match=rf"^{key} of d-v1 expects"):
            check_options(ctor, {key: bad}, env_id="d-v1", prefix="")

    @dataclasses.dataclass(frozen=True)
    class Record:
        size: int = 1
        name: str | None = None

    check_fields(Record(3, "a"), env_id="d-v1")
    check_fields(Record(np.int64(3), None), env_id="d-v1")
    with pytest.raises(ConfigError, match=r"^option size of d-v1 expects int, got True\.$"):
        check_fields(Record(True), env_id="d-v1")
    with pytest.raises(ConfigError, match=r"^option name of d-v1 expects null or str, got 3\.$"):
        check_fields(Record(1, 3), env_id="d-v1")  # type: ignore[arg-type]
